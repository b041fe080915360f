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

	"golang.org/x/sys/unix"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// wait bounds every wait; reached only when a test fails.
const wait = consoletest.Wait

// tty is a chat running on a pseudo-terminal; done has Run's result.
type tty struct {
	*consoletest.TTY
	done chan error
}

func startTTY(t *testing.T, cfg Config) *tty {
	t.Helper()
	tt := &tty{TTY: consoletest.Open(t), done: make(chan error, 1)}
	cfg.In, cfg.Out, cfg.Interactive = tt.Slave, tt.Slave, true
	go func() { tt.done <- Run(context.Background(), cfg) }()
	tt.WaitFor(t, promptYou)
	return tt
}

// quit types Ctrl-D at the empty prompt, which ends the chat, and checks
// that Run returned nil.
func (tt *tty) quit(t *testing.T) {
	t.Helper()
	tt.Type(t, "\x04")
	tt.end(t)
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
		t.Fatalf("Run did not return; the terminal shows:\n%q", tt.Screen())
	}
}

func texts(tasks []mnemo.Task) []string {
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
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h)})
	mode, err := unix.IoctlGetTermios(consoletest.Fd(t, tt.Slave), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if mode.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != 0 || mode.Oflag&unix.OPOST == 0 {
		t.Errorf("chat terminal mode: lflag %#x oflag %#x; want raw keys, output processing kept", mode.Lflag, mode.Oflag)
	}
	// "hllo" ← ← ← "e" End "!" → "hello!"; tmux's Home and End, Ctrl+→
	// to the next word, Ctrl-W and Alt-Backspace each do their part in
	// the second.
	tt.Type(t, "hllo\x1b[D\x1b[D\x1b[De\x1b[F!\r")
	tt.WaitFor(t, "mnemo> echo: hello!")
	tt.Type(t, "big cat dog\x1b[1~say \x1b[1;5Cx\x1b[4~ bye bye\x17\x1b\x7fok\r")
	tt.WaitFor(t, "mnemo> echo: say big xcat dog ok")
	tt.quit(t)
	if got := texts(h.Tasks()); strings.Join(got, "|") != "hello!|say big xcat dog ok" {
		t.Errorf("messages sent: %q", got)
	}
	after, err := unix.IoctlGetTermios(consoletest.Fd(t, tt.Slave), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != unix.ECHO|unix.ICANON|unix.ISIG {
		t.Errorf("terminal not restored after the chat: lflag %#x", after.Lflag)
	}
	tt.WaitFor(t, "\x1b[?2004l") // bracketed paste off again
	if !strings.HasPrefix(tt.Screen(), "\x1b[?2004h") {
		t.Errorf("bracketed paste not switched on: %q", tt.Screen())
	}
}

// The up arrow recalls a message sent in an earlier chat: the history
// file is in the given place, private (0600), one message a line.
func TestTerminalHistoryAcrossChats(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "chat", "alice.history")
	h := bottest.NewHandler()
	first := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h), History: file})
	first.Type(t, "what did we fix last week?\r")
	first.WaitFor(t, "mnemo> echo: what did we fix last week?")
	first.quit(t)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v; want 0600", fi.Mode().Perm())
	}
	second := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h), History: file})
	second.Type(t, "\x1b[A")
	second.WaitFor(t, "what did we fix last week?")
	second.Type(t, " again\r")
	second.WaitFor(t, "mnemo> echo: what did we fix last week? again")
	second.quit(t)
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
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h)})
	tt.Type(t, "look: \x1b[200~panic: boom\r\ngoroutine 1 [running]:\r\tmain.main()\n\x1b[201~")
	tt.WaitFor(t, promptMore+"    main.main()")
	tt.Type(t, "why?\r")
	tt.WaitFor(t, "mnemo> echo: look: panic: boom")
	tt.quit(t)
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
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h), Color: true})
	tt.Type(t, "hi\r")
	tt.WaitFor(t, "thinking…")
	h.WaitTasks(t, 1, wait)
	release()
	shown := tt.WaitFor(t, "echo: hi")
	clear := strings.LastIndex(shown, "\r"+clearRight)
	if clear < 0 || !strings.Contains(shown[clear:], ansiMnemo+"mnemo>"+ansiReset) {
		t.Errorf("the indicator was not cleared before the reply: %q", shown)
	}
	tt.quit(t)
}

// ctxHandler answers "slow" only when its context ends (a model that
// never answers); anything else at once.
type ctxHandler struct {
	started chan mnemo.Task
}

func (h *ctxHandler) Handle(ctx context.Context, task mnemo.Task) (mnemo.Reply, error) {
	if task.Text != "slow" {
		return mnemo.Reply{Text: "fast: " + task.Text}, nil
	}
	h.started <- task
	<-ctx.Done()
	return mnemo.Reply{Text: mnemo.ApologyText, Failed: true}, nil
}

// Ctrl-C cancels the reply being written (and withdraws its turn) and
// returns to the prompt; the chat goes on; Ctrl-C twice quits.
func TestTerminalCtrlCCancelsAReply(t *testing.T) {
	h := &ctxHandler{started: make(chan mnemo.Task, 1)}
	var (
		mu        sync.Mutex
		withdrawn []string
	)
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h, withWithdraw(func(id string) {
		mu.Lock()
		defer mu.Unlock()
		withdrawn = append(withdrawn, id)
	}))})
	tt.Type(t, "slow\r")
	task := <-h.started
	tt.Type(t, "\x03")
	tt.WaitFor(t, "reply cancelled")
	tt.WaitFor(t, promptYou)
	mu.Lock()
	if len(withdrawn) != 1 || withdrawn[0] != task.ID || len(task.ID) != 16 {
		t.Errorf("withdrawn %q; want the task's ID %q", withdrawn, task.ID)
	}
	mu.Unlock()
	if strings.Contains(tt.Screen(), mnemo.ApologyText) {
		t.Error("a cancelled reply was shown")
	}
	// The chat goes on; Ctrl-C clears a typed line; twice at an empty prompt quits.
	tt.Type(t, "still here\r")
	tt.WaitFor(t, "mnemo> fast: still here")
	tt.Type(t, "never sent\x03")
	tt.WaitFor(t, "never sent^C")
	tt.Type(t, "\x03")
	tt.WaitFor(t, "Ctrl-C again")
	tt.Type(t, "\x03")
	tt.end(t)
}

// An error from the terminal itself ends the chat with it.
func TestTerminalReadError(t *testing.T) {
	h := bottest.NewHandler()
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h)})
	tt.HangUp() // reads fail (EIO)
	select {
	case err := <-tt.done:
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("Run after hang-up = %v; want the read error", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after a hang-up")
	}
}
