package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Every chat's goroutines (the key reader, the spinner, the handler's)
// end with it or with its input.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeHandler struct {
	mu    sync.Mutex
	tasks []mnemo.Task
	err   error
}

var _ mnemo.Handler = (*fakeHandler)(nil)

func (f *fakeHandler) Handle(_ context.Context, t mnemo.Task) (mnemo.Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks = append(f.tasks, t)
	return mnemo.Reply{Text: "echo: " + t.Text + "\nline two\n"}, f.err
}

func TestPipedChat(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	err := Run(context.Background(), Config{In: strings.NewReader("hello\n\n   \nsecond line  \n"), Out: &out, User: "alice", Chat: chatOf(t, "alice", h)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "echo: hello\nline two\necho: second line\nline two\n"; got != want {
		t.Errorf("output %q; want %q", got, want)
	}
	if len(h.tasks) != 2 {
		t.Fatalf("tasks = %+v", h.tasks)
	}
	want := mnemo.Task{User: "alice", Conversation: "console:alice", Platform: "console", Speaker: "alice", Text: "hello"}
	if got := h.tasks[0]; got.User != want.User || got.Conversation != want.Conversation || got.Platform != want.Platform ||
		got.Speaker != want.Speaker || got.Text != want.Text || got.Channel || got.ID == "" || got.Time.IsZero() {
		t.Errorf("task = %+v", got)
	}
}

func TestInteractiveChat(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	mem := withMemory(&bottest.Memory{ShowText: "Available memory: none yet."})
	err := Run(context.Background(), Config{In: strings.NewReader("/help\r/memory\rhi\r/quit\rnever\r"), Out: &out, Interactive: true, User: "alice", Chat: chatOf(t, "alice", h, mem)})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"mnemo: chatting as alice.", "you> ", interactiveHelp, "mnemo> Available memory: none yet.", "\r" + clearRight + "mnemo> echo: hi\n       line two\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if len(h.tasks) != 1 {
		t.Errorf("tasks after /quit: %d", len(h.tasks))
	}
	out.Reset()
	Run(context.Background(), Config{In: strings.NewReader("/memory\r"), Out: &out, Interactive: true, User: "bob",
		Chat: chatOf(t, "bob", h, withMemory(&bottest.Memory{ShowErr: errors.New("disk gone")}))})
	if !strings.Contains(out.String(), memorycmd.ShowErrorText) || !strings.HasSuffix(out.String(), "you> \n") {
		t.Errorf("memory error / EOF output: %q", out.String())
	}
	// Without a memory, /memory says so.
	out.Reset()
	h.tasks = nil
	Run(context.Background(), Config{In: strings.NewReader("/memory\r"), Out: &out, Interactive: true, User: "bob", Chat: chatOf(t, "bob", h)})
	if len(h.tasks) != 0 || !strings.Contains(out.String(), memorycmd.NoMemoryText) {
		t.Errorf("tasks: %+v, output %q", h.tasks, out.String())
	}
}

// Piped, the commands work as at a terminal, without prompts.
func TestPipedCommands(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	err := Run(context.Background(), Config{In: strings.NewReader("/help\n/memory\n/exit\nnever\n"), Out: &out, User: "a",
		Chat: chatOf(t, "a", h, withMemory(&bottest.Memory{ShowText: "remembered"}))})
	if err != nil || out.String() != help+"\nremembered\n" || len(h.tasks) != 0 {
		t.Errorf("err %v, tasks %d, output %q", err, len(h.tasks), out.String())
	}
}

func TestCancelWhileReading(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{In: r, Out: io.Discard, User: "a", Chat: chatOf(t, "a", &fakeHandler{})})
	}()
	w.Write([]byte("one\n"))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v", err)
	}
}

// A message the handler could not answer gets the apology and counts as
// unanswered; a line the platform no longer takes ends the chat with
// ErrClosed; an over-long line ends it too.
func TestErrors(t *testing.T) {
	h := &fakeHandler{err: errors.New("model gone")}
	var out strings.Builder
	var unanswered atomic.Int64
	if err := Run(context.Background(), Config{In: strings.NewReader("x\n"), Out: &out, User: "a", Chat: chatOf(t, "a", h), Unanswered: &unanswered}); err != nil ||
		out.String() != pipeline.ErrorReplyText+"\n" || unanswered.Load() != 1 {
		t.Errorf("handler error: %v, %q, %d unanswered", err, out.String(), unanswered.Load())
	}
	closed := New(platform.Deps{Handler: h})
	closed.Close()
	if err := Run(context.Background(), Config{In: strings.NewReader("x\n"), Out: io.Discard, User: "a", Chat: closed.Conversation("a")}); !errors.Is(err, ErrClosed) {
		t.Errorf("closed platform = %v", err)
	}
	if err := Run(context.Background(), Config{In: strings.NewReader("x\r"), Out: io.Discard, Interactive: true, User: "a", Chat: closed.Conversation("a")}); !errors.Is(err, ErrClosed) {
		t.Errorf("interactive, closed platform = %v", err)
	}
	long := strings.Repeat("x", maxLine+1) + "\n"
	if err := Run(context.Background(), Config{In: strings.NewReader(long), Out: io.Discard, User: "a", Chat: chatOf(t, "a", &fakeHandler{})}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("long line = %v", err)
	}
}

func TestStyle(t *testing.T) {
	in := "# Title\n## Sub\nSome **bold**, __also__, *it* and `co**de**`, a [link](https://x.io).\n" +
		"```\n**not bold** in a fence\n```\n#nohash\n####### seven\n- one\n  * two\n> quoted *it*\n---\n2*3*4 and snake_case_name, _under_ (_it_)"
	want := ansiBold + ansiUnderline + "Title" + ansiReset + "\n" +
		ansiBold + "Sub" + ansiReset + "\n" +
		"Some " + ansiBold + "bold" + ansiReset + ", " + ansiBold + "also" + ansiReset + ", " + ansiItalic + "it" + ansiReset +
		" and " + ansiCode + "co**de**" + ansiReset + ", a link " + ansiDim + "(https://x.io)" + ansiReset + ".\n" +
		ansiDim + "```" + ansiReset + "\n" + ansiCode + "**not bold** in a fence" + ansiReset + "\n" + ansiDim + "```" + ansiReset + "\n" +
		"#nohash\n####### seven\n" +
		ansiCode + "•" + ansiReset + " one\n  " + ansiCode + "•" + ansiReset + " two\n" +
		ansiDim + "│ " + ansiReset + "quoted " + ansiItalic + "it" + ansiReset + "\n" +
		ansiDim + strings.Repeat("─", 40) + ansiReset + "\n" +
		"2*3*4 and snake_case_name, " + ansiItalic + "under" + ansiReset + " (" + ansiItalic + "it" + ansiReset + ")"
	if got := style(in); got != want {
		t.Errorf("style = %q\nwant    %q", got, want)
	}
	var out strings.Builder
	Run(context.Background(), Config{In: strings.NewReader("hi\r"), Out: &out, Interactive: true, Color: true, User: "a", Chat: chatOf(t, "a", &fakeHandler{})})
	if !strings.Contains(out.String(), ansiMnemo+"mnemo>"+ansiReset+" echo: hi") || !strings.Contains(out.String(), ansiYou+"you> "+ansiReset) {
		t.Errorf("colored output: %q", out.String())
	}
}

// What the model writes cannot drive the terminal: escape sequences,
// C1 controls, bidi overrides and zero-width characters are removed,
// piped or interactive.
func TestModelTextCannotDriveTheTerminal(t *testing.T) {
	h := bottest.NewHandler()
	h.SetReply(func(mnemo.Task) (mnemo.Reply, error) {
		return mnemo.Reply{Text: "\x1b]0;pwned\x07\x1b[2Jhi\u009b31m \u202eevil\u200b!"}, nil
	})
	for _, interactive := range []bool{false, true} {
		var out strings.Builder
		err := Run(context.Background(), Config{In: strings.NewReader("x\n"), Out: &out, User: "alice", Chat: chatOf(t, "alice", h), Interactive: interactive})
		if err != nil {
			t.Fatal(err)
		}
		// What the chat itself writes at a terminal (the indicator) ends
		// before the reply.
		reply := out.String()[strings.LastIndex(out.String(), clearRight)+1:]
		if strings.ContainsAny(reply, "\x1b\x07\u009b\u202e\u200b") || !strings.Contains(reply, "]0;pwned[2Jhi31m evil!") {
			t.Errorf("interactive=%v: %q", interactive, out.String())
		}
	}
}

// /memory share and /memory private change the chat's own user's file
// with memorycmd's texts; a bad name, a missing file, a word the chat does not
// know answer without changing anything or reaching the model; a message
// of several lines starting with /memory is a message.
func TestMemoryShareCommands(t *testing.T) {
	vis := &bottest.Memory{ShowText: "- facts/food.md (private)", Files: map[string]bool{"alice:facts/food.md": false, "bob:facts/food.md": false},
		Check: func(p string) error {
			if !strings.HasPrefix(p, "facts/") || strings.Contains(p, "..") {
				return errors.New("bad path")
			}
			return nil
		}}
	h := &fakeHandler{}
	var out strings.Builder
	in := "/memory share facts/food.md\n/memory private `facts/food.md`\n/memory   share ../bob/facts/food.md\n/memory share facts/nope.md\n" +
		"/memory share\n/memory help\n/memory bogus\n/memory ls\n"
	err := Run(context.Background(), Config{In: strings.NewReader(in), Out: &out, User: "alice", Chat: chatOf(t, "alice", h, withMemory(vis))})
	want := "`facts/food.md` is now shared with channels: I may use it in any channel you talk to me in.\n" +
		"`facts/food.md` is now private: I use it only when we talk in private, never in a channel.\n" +
		"`../bob/facts/food.md` is not a memory file. " + memorycmd.ShareGrammar + "\n" +
		"You have no memory file `facts/nope.md`; `/memory` lists yours. Nothing was changed.\n" +
		"Say which file to share, e.g. `/memory share facts/food.md`; `/memory` lists yours.\n" +
		memorycmd.TypedUsage + "\n" +
		"I don't know `/memory bogus`.\n\n" + memorycmd.TypedUsage + "\n" +
		"- facts/food.md (private)\n"
	if err != nil || out.String() != want || len(h.tasks) != 0 {
		t.Errorf("err %v, tasks %d, output\n%s\nwant\n%s", err, len(h.tasks), out.String(), want)
	}
	if got := vis.Sets(); strings.Join(got, " ") != "alice:facts/food.md:shared alice:facts/food.md:private" || vis.IsShared("bob:facts/food.md") {
		t.Errorf("changes %v", got)
	}

	// At a terminal; a message of several lines that begins with /memory
	// is a message.
	out.Reset()
	err = Run(context.Background(), Config{In: strings.NewReader("/memory share \\\rfacts/food.md\r"), Out: &out, Interactive: true,
		User: "alice", Chat: chatOf(t, "alice", h, withMemory(vis))})
	if err != nil || len(vis.Sets()) != 2 {
		t.Errorf("err %v, output %q", err, out.String())
	}
	if len(h.tasks) != 1 || h.tasks[0].Text != "/memory share \nfacts/food.md" {
		t.Errorf("tasks %+v", h.tasks)
	}
}

// /memory at a colour terminal is rendered as a reply is: headings
// styled, not "## " raw; a file's escape sequences never reach the
// terminal (issue 25, item 6).
func TestInteractiveMemoryRendered(t *testing.T) {
	var out strings.Builder
	mem := &bottest.Memory{ShowText: "## What I remember about you\n\n- **facts/user.md** (private): name\x1b[31m red"}
	if err := Run(context.Background(), Config{In: strings.NewReader("/memory\r"), Out: &out, Interactive: true, Color: true, User: "alice",
		Chat: chatOf(t, "alice", &fakeHandler{}, withMemory(mem))}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Contains(got, "## What I remember") || !strings.Contains(got, style("## What I remember about you")) || strings.Contains(got, "\x1b[31m") {
		t.Errorf("/memory shown as %q", got)
	}
}

// blockingHandler answers once release is closed, saying on started
// that it began.
type blockingHandler struct {
	fakeHandler
	started chan struct{}
	release chan struct{}
}

func (b *blockingHandler) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	b.started <- struct{}{}
	<-b.release
	return b.fakeHandler.Handle(ctx, t)
}

// Piped messages are answered on the reader's goroutine: a message being
// answered when ctx ends is answered and printed before Run returns, and
// a line read after that is not answered.
func TestCancelWhileAnswering(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	h := &blockingHandler{started: make(chan struct{}, 1), release: make(chan struct{})}
	var out strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{In: r, Out: &out, User: "a", Chat: chatOf(t, "a", h)}) }()
	w.Write([]byte("one\n"))
	<-h.started
	cancel()
	close(h.release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v", err)
	}
	if got := out.String(); got != "echo: one\nline two\n" {
		t.Errorf("output %q: the message being answered was not printed before Run returned", got)
	}
	w.Write([]byte("two\n")) // read once Write returns; never answered
	w.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tasks) != 1 {
		t.Errorf("%d tasks answered, want 1", len(h.tasks))
	}
}
