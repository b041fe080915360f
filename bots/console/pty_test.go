package console

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/fakewait"
)

// wait bounds every wait on the terminal; reached only when a test fails.
const wait = 10 * time.Second

// screen is what a pseudo-terminal shows: everything the chat wrote.
type screen struct {
	mu   sync.Mutex
	out  strings.Builder
	seen int // waitFor has matched up to here
	ch   fakewait.Changes
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(p)
	s.ch.NotifyLocked()
	return len(p), nil
}

// waitFor waits until text appears after what earlier waits matched, and
// returns what the screen showed up to its end.
func (s *screen) waitFor(t *testing.T, text string) string {
	t.Helper()
	var got string
	if !s.ch.Wait(&s.mu, wait, func() bool {
		i := strings.Index(s.out.String()[s.seen:], text)
		if i < 0 {
			return false
		}
		got = s.out.String()[s.seen : s.seen+i+len(text)]
		s.seen += i + len(text)
		return true
	}) {
		t.Fatalf("the terminal never showed %q; it shows:\n%q", text, s.all())
	}
	return got
}

func (s *screen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// tty is a chat running on a pseudo-terminal: keys go in with typ, the
// screen is read by waitFor, and done has Run's result.
type tty struct {
	*screen
	master, slave *os.File
	done          chan error
}

func startTTY(t *testing.T, cfg Config) *tty {
	t.Helper()
	opened, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	// pty.Open leaves the master blocking (it calls Fd), so Close would
	// not end a read waiting on it: use a non-blocking copy.
	fd, err := unix.Dup(ttyFd(t, opened))
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		t.Fatal(err)
	}
	opened.Close()
	master := os.NewFile(uintptr(fd), opened.Name())
	// Not pty.Setsize: master.Fd would make its reads blocking, and
	// Close could not end the reading goroutine.
	if err := unix.IoctlSetWinsize(ttyFd(t, master), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	tt := &tty{screen: &screen{}, master: master, slave: slave, done: make(chan error, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			tt.screen.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		slave.Close()
		master.Close()
		<-copied
	})
	cfg.In, cfg.Out, cfg.Interactive = slave, slave, true
	go func() { tt.done <- Run(context.Background(), cfg) }()
	tt.waitFor(t, promptYou)
	return tt
}

func ttyFd(t *testing.T, f *os.File) int {
	t.Helper()
	fd, ok := terminalFd(f)
	if !ok {
		t.Fatalf("%s is not a terminal", f.Name())
	}
	return fd
}

func (tt *tty) typ(t *testing.T, keys string) {
	t.Helper()
	if _, err := tt.master.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

// end waits for Run to return and checks it returned nil.
func (tt *tty) end(t *testing.T) {
	t.Helper()
	select {
	case err := <-tt.done:
		if err != nil {
			t.Fatalf("Run = %v; want nil", err)
		}
	case <-time.After(wait):
		t.Fatalf("Run did not return; the terminal shows:\n%q", tt.all())
	}
}

func texts(tasks []agent.Task) []string {
	var out []string
	for _, task := range tasks {
		out = append(out, task.Text)
	}
	return out
}

// Cursor keys, Home/End (also as tmux sends them) and word delete edit
// the line before it is sent; Ctrl-D at an empty prompt ends the chat
// (nil: exit 0) and gives the terminal back as it was.
func TestTerminalEditsTheLine(t *testing.T) {
	h := bottest.NewHandler()
	tt := startTTY(t, Config{User: "alice", Handler: h})
	mode, err := unix.IoctlGetTermios(ttyFd(t, tt.slave), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if mode.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != 0 || mode.Oflag&unix.OPOST == 0 {
		t.Errorf("chat terminal mode: lflag %#x oflag %#x; want raw keys, output processing kept", mode.Lflag, mode.Oflag)
	}
	// "hllo" ← ← ← "e" End "!" → "hello!"; tmux's Home and End, Ctrl+→
	// to the next word, Ctrl-W and Alt-Backspace each do their part in
	// the second.
	tt.typ(t, "hllo\x1b[D\x1b[D\x1b[De\x1b[F!\r")
	tt.waitFor(t, "mnemo> echo: hello!")
	tt.typ(t, "big cat dog\x1b[1~say \x1b[1;5Cx\x1b[4~ bye bye\x17\x1b\x7fok\r")
	tt.waitFor(t, "mnemo> echo: say big xcat dog ok")
	tt.typ(t, "\x04")
	tt.end(t)
	if got := texts(h.Tasks()); strings.Join(got, "|") != "hello!|say big xcat dog ok" {
		t.Errorf("messages sent: %q", got)
	}
	after, err := unix.IoctlGetTermios(ttyFd(t, tt.slave), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != unix.ECHO|unix.ICANON|unix.ISIG {
		t.Errorf("terminal not restored after the chat: lflag %#x", after.Lflag)
	}
	tt.waitFor(t, "\x1b[?2004l") // bracketed paste off again
	if !strings.HasPrefix(tt.all(), "\x1b[?2004h") {
		t.Errorf("bracketed paste not switched on: %q", tt.all())
	}
}

// The up arrow recalls a message sent in an earlier chat: the history
// file is in the given place, private (0600), one message a line.
func TestTerminalHistoryAcrossChats(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "chat", "alice.history")
	h := bottest.NewHandler()
	first := startTTY(t, Config{User: "alice", Handler: h, History: file})
	first.typ(t, "what did we fix last week?\r")
	first.waitFor(t, "mnemo> echo: what did we fix last week?")
	first.typ(t, "\x04")
	first.end(t)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v; want 0600", fi.Mode().Perm())
	}
	second := startTTY(t, Config{User: "alice", Handler: h, History: file})
	second.typ(t, "\x1b[A")
	second.waitFor(t, "what did we fix last week?")
	second.typ(t, " again\r")
	second.waitFor(t, "mnemo> echo: what did we fix last week? again")
	second.typ(t, "\x04")
	second.end(t)
	if got := texts(h.Tasks()); len(got) != 2 || got[1] != "what did we fix last week? again" {
		t.Errorf("messages sent: %q", got)
	}
	b, _ := os.ReadFile(file)
	if string(b) != "what did we fix last week?\nwhat did we fix last week? again\n" {
		t.Errorf("history file: %q", b)
	}
}

// A bracketed paste of three lines is one message, sent by the next Enter.
func TestTerminalPasteIsOneMessage(t *testing.T) {
	h := bottest.NewHandler()
	tt := startTTY(t, Config{User: "alice", Handler: h})
	tt.typ(t, "look: \x1b[200~panic: boom\r\ngoroutine 1 [running]:\r\tmain.main()\n\x1b[201~")
	tt.waitFor(t, promptMore+"    main.main()")
	tt.typ(t, "why?\r")
	tt.waitFor(t, "mnemo> echo: look: panic: boom")
	tt.typ(t, "\x04")
	tt.end(t)
	want := "look: panic: boom\ngoroutine 1 [running]:\n    main.main()\nwhy?"
	if got := texts(h.Tasks()); len(got) != 1 || got[0] != want {
		t.Errorf("messages sent: %q; want one: %q", got, want)
	}
}

// While the model works the terminal shows an indicator, cleared before
// the reply is written.
func TestTerminalShowsThinking(t *testing.T) {
	h := bottest.NewHandler()
	release := h.Hold()
	tt := startTTY(t, Config{User: "alice", Handler: h, Color: true})
	tt.typ(t, "hi\r")
	tt.waitFor(t, "thinking…")
	h.WaitTasks(t, 1, wait)
	release()
	shown := tt.waitFor(t, "echo: hi")
	clear := strings.LastIndex(shown, "\r"+clearRight)
	if clear < 0 || !strings.Contains(shown[clear:], ansiMnemo+"mnemo>"+ansiReset) {
		t.Errorf("the indicator was not cleared before the reply: %q", shown)
	}
	tt.typ(t, "\x04")
	tt.end(t)
}

// ctxHandler answers "slow" only when its context ends (a model that
// never answers); anything else at once.
type ctxHandler struct {
	started chan agent.Task
}

func (h *ctxHandler) Handle(ctx context.Context, task agent.Task) (agent.Reply, error) {
	if task.Text != "slow" {
		return agent.Reply{Text: "fast: " + task.Text}, nil
	}
	h.started <- task
	<-ctx.Done()
	return agent.Reply{Text: agent.ApologyText, Failed: true}, nil
}

// Ctrl-C cancels the reply being written (and withdraws its turn) and
// returns to the prompt; the chat goes on; Ctrl-C twice quits.
func TestTerminalCtrlCCancelsAReply(t *testing.T) {
	h := &ctxHandler{started: make(chan agent.Task, 1)}
	var (
		mu        sync.Mutex
		withdrawn []string
	)
	tt := startTTY(t, Config{User: "alice", Handler: h, Withdraw: func(id string) {
		mu.Lock()
		defer mu.Unlock()
		withdrawn = append(withdrawn, id)
	}})
	tt.typ(t, "slow\r")
	task := <-h.started
	tt.typ(t, "\x03")
	tt.waitFor(t, "reply cancelled")
	tt.waitFor(t, promptYou)
	mu.Lock()
	if len(withdrawn) != 1 || withdrawn[0] != task.ID || len(task.ID) != 16 {
		t.Errorf("withdrawn %q; want the task's ID %q", withdrawn, task.ID)
	}
	mu.Unlock()
	if strings.Contains(tt.all(), agent.ApologyText) {
		t.Error("a cancelled reply was shown")
	}
	// The chat goes on; Ctrl-C clears a typed line; twice at an empty prompt quits.
	tt.typ(t, "still here\r")
	tt.waitFor(t, "mnemo> fast: still here")
	tt.typ(t, "never sent\x03")
	tt.waitFor(t, "never sent^C")
	tt.typ(t, "\x03")
	tt.waitFor(t, "Ctrl-C again")
	tt.typ(t, "\x03")
	tt.end(t)
}

// An error from the terminal itself ends the chat with it.
func TestTerminalReadError(t *testing.T) {
	h := bottest.NewHandler()
	tt := startTTY(t, Config{User: "alice", Handler: h})
	tt.master.Close() // the terminal hangs up: reads fail (EIO)
	select {
	case err := <-tt.done:
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("Run after hang-up = %v; want the read error", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after a hang-up")
	}
}
