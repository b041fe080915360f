package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
)

// Every chat's goroutines (the key reader, the spinner, the handler's)
// end with it or with its input.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeHandler struct {
	mu    sync.Mutex
	tasks []mnemo.Task
	err   error
}

var _ Handler = (*fakeHandler)(nil)

func (f *fakeHandler) Handle(_ context.Context, t mnemo.Task) (mnemo.Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks = append(f.tasks, t)
	return mnemo.Reply{Text: "echo: " + t.Text + "\nline two\n"}, f.err
}

func TestPipedChat(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	err := Run(context.Background(), Config{In: strings.NewReader("hello\n\n   \nsecond line  \n"), Out: &out, User: "alice", Handler: h, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "echo: hello\nline two\necho: second line\nline two\n"; got != want {
		t.Errorf("output %q; want %q", got, want)
	}
	if len(h.tasks) != 2 {
		t.Fatalf("tasks = %+v", h.tasks)
	}
	want := mnemo.Task{User: "alice", Conversation: "console:alice", Platform: "console", Speaker: "alice", Text: "hello", Time: now}
	if h.tasks[0].User != want.User || h.tasks[0].Conversation != want.Conversation || h.tasks[0].Platform != want.Platform || h.tasks[0].Text != want.Text || !h.tasks[0].Time.Equal(now) {
		t.Errorf("task = %+v", h.tasks[0])
	}
}

func TestInteractiveChat(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	mem := func(user string) (string, error) { return "Available memory: none yet.", nil }
	err := Run(context.Background(), Config{In: strings.NewReader("/help\r/memory\rhi\r/quit\rnever\r"), Out: &out, Interactive: true, User: "alice", Handler: h, Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"mnemo: chatting as alice.", "you> ", interactiveHelp, "Available memory: none yet.", "\r" + clearRight + "mnemo> echo: hi\n       line two\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if len(h.tasks) != 1 {
		t.Errorf("tasks after /quit: %d", len(h.tasks))
	}
	out.Reset()
	Run(context.Background(), Config{In: strings.NewReader("/memory\r"), Out: &out, Interactive: true, User: "bob", Handler: h,
		Memory: func(string) (string, error) { return "", errors.New("disk gone") }})
	if !strings.Contains(out.String(), "cannot show your memory: disk gone") || !strings.HasSuffix(out.String(), "you> \n") {
		t.Errorf("memory error / EOF output: %q", out.String())
	}
	// Without a Memory, /memory is a message like any other.
	out.Reset()
	h.tasks = nil
	Run(context.Background(), Config{In: strings.NewReader("/memory\r"), Out: &out, Interactive: true, User: "bob", Handler: h})
	if len(h.tasks) != 1 || h.tasks[0].Text != "/memory" {
		t.Errorf("tasks: %+v", h.tasks)
	}
}

// Piped, the commands work as at a terminal, without prompts.
func TestPipedCommands(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	err := Run(context.Background(), Config{In: strings.NewReader("/help\n/memory\n/exit\nnever\n"), Out: &out, User: "a", Handler: h,
		Memory: func(string) (string, error) { return "remembered", nil }})
	if err != nil || out.String() != help+"\nremembered\n" || len(h.tasks) != 0 {
		t.Errorf("err %v, tasks %d, output %q", err, len(h.tasks), out.String())
	}
}

func TestCancelWhileReading(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{In: r, Out: io.Discard, User: "a", Handler: &fakeHandler{}}) }()
	w.Write([]byte("one\n"))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v", err)
	}
}

func TestErrors(t *testing.T) {
	h := &fakeHandler{err: context.Canceled}
	if err := Run(context.Background(), Config{In: strings.NewReader("x\n"), Out: io.Discard, User: "a", Handler: h}); !errors.Is(err, context.Canceled) {
		t.Errorf("handler error = %v", err)
	}
	if err := Run(context.Background(), Config{In: strings.NewReader("x\r"), Out: io.Discard, Interactive: true, User: "a", Handler: h}); !errors.Is(err, context.Canceled) {
		t.Errorf("interactive handler error = %v", err)
	}
	long := strings.Repeat("x", maxLine+1) + "\n"
	if err := Run(context.Background(), Config{In: strings.NewReader(long), Out: io.Discard, User: "a", Handler: &fakeHandler{}}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("long line = %v", err)
	}
}

func TestStyle(t *testing.T) {
	in := "# Title\n## Sub\nSome **bold**, __also__, *it* and `co**de**`, a [link](https://x.io).\n" +
		"```\n**not bold** in a fence\n```\n#nohash\n####### seven\n- one\n  * two\n> quoted *it*\n---\n2*3*4 and snake_case_name"
	want := ansiBold + ansiUnderline + "Title" + ansiReset + "\n" +
		ansiBold + "Sub" + ansiReset + "\n" +
		"Some " + ansiBold + "bold" + ansiReset + ", " + ansiBold + "also" + ansiReset + ", " + ansiItalic + "it" + ansiReset +
		" and " + ansiCode + "co**de**" + ansiReset + ", a link " + ansiDim + "(https://x.io)" + ansiReset + ".\n" +
		ansiDim + "```" + ansiReset + "\n" + ansiCode + "**not bold** in a fence" + ansiReset + "\n" + ansiDim + "```" + ansiReset + "\n" +
		"#nohash\n####### seven\n" +
		ansiCode + "•" + ansiReset + " one\n  " + ansiCode + "•" + ansiReset + " two\n" +
		ansiDim + "│ " + ansiReset + "quoted " + ansiItalic + "it" + ansiReset + "\n" +
		ansiDim + strings.Repeat("─", 40) + ansiReset + "\n" +
		"2*3*4 and snake_case_name"
	if got := style(in); got != want {
		t.Errorf("style = %q\nwant    %q", got, want)
	}
	var out strings.Builder
	Run(context.Background(), Config{In: strings.NewReader("hi\r"), Out: &out, Interactive: true, Color: true, User: "a", Handler: &fakeHandler{}})
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
		err := Run(context.Background(), Config{In: strings.NewReader("x\n"), Out: &out, User: "alice", Handler: h, Interactive: interactive})
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
	vis := &bottest.Memory{Files: map[string]bool{"alice:facts/food.md": false, "bob:facts/food.md": false},
		Check: func(p string) error {
			if !strings.HasPrefix(p, "facts/") || strings.Contains(p, "..") {
				return errors.New("bad path")
			}
			return nil
		}}
	h := &fakeHandler{}
	var out strings.Builder
	in := "/memory share facts/food.md\n/memory private `facts/food.md`\n/memory   share ../bob/facts/food.md\n/memory share facts/nope.md\n" +
		"/memory share\n/memory help\n/memory forget facts/food.md\n/memory ls\n"
	err := Run(context.Background(), Config{In: strings.NewReader(in), Out: &out, User: "alice", Handler: h,
		Memory: func(user string) (string, error) { return "- facts/food.md (private)", nil }, Visibility: vis})
	want := "`facts/food.md` is now shared with channels: I may use it in any channel you talk to me in.\n" +
		"`facts/food.md` is now private: I use it only when we talk in private, never in a channel.\n" +
		"`../bob/facts/food.md` is not a memory file. " + memorycmd.ShareGrammar + "\n" +
		"You have no memory file `facts/nope.md`; `/memory` lists yours. Nothing was changed.\n" +
		"Say which file to share, e.g. `/memory share facts/food.md`; `/memory` lists yours.\n" +
		help + "\n" +
		"I don't know `/memory forget facts/food.md` here.\n" + help + "\n" +
		"- facts/food.md (private)\n"
	if err != nil || out.String() != want || len(h.tasks) != 0 {
		t.Errorf("err %v, tasks %d, output\n%s\nwant\n%s", err, len(h.tasks), out.String(), want)
	}
	if got := vis.Sets(); strings.Join(got, " ") != "alice:facts/food.md:shared alice:facts/food.md:private" || vis.IsShared("bob:facts/food.md") {
		t.Errorf("changes %v", got)
	}

	// At a terminal; without Visibility share is not a command here.
	out.Reset()
	err = Run(context.Background(), Config{In: strings.NewReader("/memory share facts/food.md\r/memory share \\\rfacts/food.md\r"), Out: &out, Interactive: true,
		User: "alice", Handler: h, Memory: func(string) (string, error) { return "", nil }})
	if err != nil || !strings.Contains(out.String(), "I don't know `/memory share facts/food.md` here.") || len(vis.Sets()) != 2 {
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
	mem := func(string) (string, error) {
		return "## What I remember about you\n\n- **facts/user.md** (private): name\x1b[31m red", nil
	}
	if err := Run(context.Background(), Config{In: strings.NewReader("/memory\r"), Out: &out, Interactive: true, Color: true, User: "alice",
		Handler: &fakeHandler{}, Memory: mem}); err != nil {
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
	go func() { done <- Run(ctx, Config{In: r, Out: &out, User: "a", Handler: h}) }()
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

// /memory why TEXT asks Why for the chat's own user, in private; without
// words it says what to give; a failure is said, never a crash.
func TestMemoryWhyCommand(t *testing.T) {
	var asked []string
	why := func(user, text string) (string, error) {
		asked = append(asked, user+"|"+text)
		if text == "boom" {
			return "", errors.New("disk")
		}
		return "- `facts/home.md:5` - Lives in: Berlin\n  from: terminal, 2026-11-20", nil
	}
	h := &fakeHandler{}
	var out strings.Builder
	err := Run(context.Background(), Config{In: strings.NewReader("/memory why Berlin flat\n/memory why\n/memory why boom\n"), Out: &out, User: "alice", Handler: h,
		Memory: func(string) (string, error) { return "", nil }, Why: why})
	want := "- `facts/home.md:5` - Lives in: Berlin\n  from: terminal, 2026-11-20\n" + memorycmd.WhyWhatText + "\n" +
		"mnemo: cannot look through your memory: disk\n"
	if err != nil || out.String() != want || len(h.tasks) != 0 || strings.Join(asked, " ") != "alice|Berlin flat alice|boom" {
		t.Errorf("err %v, tasks %d, asked %v, output\n%s\nwant\n%s", err, len(h.tasks), asked, out.String(), want)
	}
}
