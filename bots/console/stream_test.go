package console

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/logtest"
)

// streamStep is what a streamHandler does next: show a status or a text,
// or wait for the test (hold).
type streamStep struct {
	status, text string
	hold         bool
}

// streamHandler answers every task by streaming its steps to Task.Stream,
// as the agent does: the reply's Text is the texts joined. cut makes it
// a reply cut after its words; a cancelled context while it holds, too.
type streamHandler struct {
	steps []streamStep
	cut   bool
	held  chan struct{} // a hold step was reached
	go_   chan struct{} // lets a hold step go on

	mu    sync.Mutex
	tasks []mnemo.Task
}

func newStreamHandler(steps ...streamStep) *streamHandler {
	return &streamHandler{steps: steps, held: make(chan struct{}, 10), go_: make(chan struct{}, 10)}
}

func (h *streamHandler) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	h.mu.Lock()
	h.tasks = append(h.tasks, t)
	h.mu.Unlock()
	var text strings.Builder
	for _, st := range h.steps {
		switch {
		case st.hold:
			h.held <- struct{}{}
			select {
			case <-h.go_:
			case <-ctx.Done():
				return mnemo.Reply{Text: text.String(), Failed: true, Streamed: true, Cut: true, Err: ctx.Err()}, nil
			}
		case st.text != "":
			text.WriteString(st.text)
			t.Stream.Text(st.text)
		default:
			t.Stream.Status(st.status)
		}
	}
	return mnemo.Reply{Text: text.String(), Streamed: true, Failed: h.cut, Cut: h.cut}, nil
}

func words(texts ...string) []streamStep {
	var out []streamStep
	for _, s := range texts {
		out = append(out, streamStep{text: s})
	}
	return out
}

var holdStep = streamStep{hold: true}

// Piped, the reply goes to stdout as it comes, and is in the end exactly
// what the whole reply printed at once would be: the text alone, trimmed.
func TestPipedStreamWritesWordsAsTheyCome(t *testing.T) {
	steps := append(words("Hello ", "world,\r"), holdStep)
	steps = append(steps, words("\n", "again.", "\n\n")...)
	h := newStreamHandler(steps...)
	var out logtest.Buffer
	var visible []time.Duration
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{In: strings.NewReader("hi\n"), Out: &out, User: "a", Chat: chatOf(t, "a", h),
			FirstVisible: func(d time.Duration) { visible = append(visible, d) }})
	}()
	<-h.held
	if got := out.String(); got != "Hello world," {
		t.Errorf("before the reply is complete, stdout has %q", got)
	}
	h.go_ <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), cleanReply("Hello world,\r\nagain.\n\n")+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if len(visible) != 1 {
		t.Errorf("FirstVisible told %d times", len(visible))
	}
}

// A cut stream ends with the note that it was cut.
func TestPipedStreamCut(t *testing.T) {
	h := newStreamHandler(words("One ", "two ")...)
	h.cut = true
	var out strings.Builder
	if err := Run(context.Background(), Config{In: strings.NewReader("count\n"), Out: &out, User: "a", Chat: chatOf(t, "a", h)}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "One two\n\n"+strings.TrimSpace(mnemo.CutNote)+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

// At a colour terminal: a tool's status replaces the spinner's label, the
// spinner goes at the first word, a line shows plain while it is written
// and rendered once complete.
func TestTerminalStreamRendersCompletedLines(t *testing.T) {
	steps := []streamStep{{status: "reading facts/user.md…"}, holdStep}
	steps = append(steps, words("# Your ", "notes\n", "- **tea**, ")...)
	steps = append(steps, holdStep)
	steps = append(steps, words("green\n", "Bye.")...)
	h := newStreamHandler(steps...)
	var visible int
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h), Color: true, FirstVisible: func(time.Duration) { visible++ }})
	tt.Type(t, "what do I like?\r")
	<-h.held
	tt.WaitFor(t, "reading facts/user.md… (Ctrl-C cancels)")
	h.go_ <- struct{}{}
	<-h.held
	tt.WaitFor(t, "\r"+clearRight) // the spinner is gone
	tt.WaitFor(t, "# Your notes")  // plain while written
	tt.WaitFor(t, ansiBold+ansiUnderline+"Your notes"+ansiReset)
	tt.WaitFor(t, "- **tea**,") // the line being written, plain (its last space held)
	h.go_ <- struct{}{}
	tt.WaitFor(t, indent+ansiCode+"•"+ansiReset+" "+ansiBold+"tea"+ansiReset+", green")
	tt.WaitFor(t, "Bye.")
	tt.WaitFor(t, promptYou)
	tt.quit(t)
	if visible != 1 {
		t.Errorf("FirstVisible told %d times", visible)
	}
}

// Ctrl-C while the words come stops the reply, keeps what was shown, and
// withdraws the turn.
func TestTerminalStreamCtrlC(t *testing.T) {
	h := newStreamHandler(append(words("Half ", "of it"), holdStep, streamStep{text: " never"})...)
	var withdrawn []string
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h, withWithdraw(func(id string) { withdrawn = append(withdrawn, id) }))})
	tt.Type(t, "tell me\r")
	<-h.held
	tt.WaitFor(t, "mnemo> Half of it")
	tt.Type(t, "\x03")
	tt.WaitFor(t, "reply cancelled")
	tt.quit(t)
	if strings.Contains(tt.Screen(), "never") || len(withdrawn) != 1 {
		t.Errorf("withdrawn %q, screen %q", withdrawn, tt.Screen())
	}
}

// A cut stream at a terminal: the words, then the note.
func TestTerminalStreamCut(t *testing.T) {
	h := newStreamHandler(words("One ", "two\n", "three")...)
	h.cut = true
	tt := startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h)})
	tt.Type(t, "count\r")
	tt.WaitFor(t, "mnemo> One two\r\n"+indent+"three\r\n\r\n"+indent+strings.TrimSpace(mnemo.CutNote))
	tt.quit(t)
	// In colour the note is Markdown as the reply is: italic, without its
	// underscores.
	h = newStreamHandler(words("One ", "two")...)
	h.cut = true
	tt = startTTY(t, Config{User: "alice", Chat: chatOf(t, "alice", h), Color: true})
	tt.Type(t, "count\r")
	tt.WaitFor(t, "\r\n\r\n"+indent+ansiItalic+strings.Trim(strings.TrimSpace(mnemo.CutNote), "_")+ansiReset+"\r\n")
	tt.quit(t)
}

// A line longer than the terminal wraps; once complete it is rendered in
// place of all its rows.
func TestTermStreamRewritesAWrappedLine(t *testing.T) {
	var out logtest.Buffer
	ts := &termStream{out: &out, color: true, width: func() int { return 20 }, start: time.Now(), spin: thinking(&out, false)}
	ts.Text(strings.Repeat("word ", 7) + "**end**\nnext")
	ts.finish(Said{Streamed: true})
	got := out.String()
	// 7 + 35 + 7 = 49 columns on 20: two rows up.
	if !strings.Contains(got, "word **end**\r\x1b[2A\r"+ansiReset+"\x1b[J"+ansiMnemo+"mnemo>"+ansiReset+" word") ||
		!strings.Contains(got, ansiBold+"end"+ansiReset+"\n"+indent+"next\r"+ansiReset+"\x1b[J"+indent+"next\n") {
		t.Errorf("output %q", got)
	}
}

func TestDisplayWidth(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "日本": 4, "e\u0301": 1, "a\tb": 9, "😀": 2} {
		if got := displayWidth(s); got != want {
			t.Errorf("displayWidth(%q) = %d, want %d", s, got, want)
		}
	}
	for _, c := range []struct{ w, cols, up int }{{0, 80, 0}, {80, 80, 0}, {81, 80, 1}, {160, 80, 1}, {161, 80, 2}, {500, 0, 0}} {
		if got := rowsUp(c.w, c.cols); got != c.up {
			t.Errorf("rowsUp(%d, %d) = %d, want %d", c.w, c.cols, got, c.up)
		}
	}
}

// However a reply is cut into pieces, the cleaner gives out exactly what
// clean gives for the whole. Pieces are valid UTF-8, cut between runes,
// as the model's deltas are (JSON strings).
func FuzzCleanerPieces(f *testing.F) {
	for _, seed := range []string{"  hi \r\n there\r", "\x1b[31mred\x1b[0m\n\n", "a\u202eb\t\n", "\r", "\n\n x"} {
		f.Add(seed, uint8(1), uint8(4))
	}
	f.Fuzz(func(t *testing.T, s string, a, b uint8) {
		s = strings.ToValidUTF8(s, "?")
		i, j := int(a)%(len(s)+1), int(b)%(len(s)+1)
		if i > j {
			i, j = j, i
		}
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		for j < len(s) && !utf8.RuneStart(s[j]) {
			j++
		}
		var c cleaner
		got := c.next(s[:i]) + c.next(s[i:j]) + c.next(s[j:])
		if want := cleanReply(s); got != want {
			t.Errorf("pieces %q %q %q give %q, want %q", s[:i], s[i:j], s[j:], got, want)
		}
	})
}

// Interactive without a terminal (no width known) and in colour: lines
// are rendered as they complete, a status goes to the spinner, white
// space alone shows nothing, and a cut reply's note is dimmed.
func TestInteractiveStreamWithoutATerminal(t *testing.T) {
	h := newStreamHandler(streamStep{status: "looking through memory…"}, streamStep{text: "  "}, streamStep{text: "**One**\n"}, streamStep{text: "two"})
	h.cut = true
	var out strings.Builder
	if err := Run(context.Background(), Config{In: strings.NewReader("hi\n"), Out: &out, Interactive: true, Color: true, User: "a", Chat: chatOf(t, "a", h)}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"looking through memory… (Ctrl-C cancels)",
		"**One**\r" + ansiReset + "\x1b[J" + ansiMnemo + "mnemo>" + ansiReset + " " + ansiBold + "One" + ansiReset + "\n" + indent + "two",
		"two\r" + ansiReset + "\x1b[J" + indent + "two\n\n" + indent + ansiItalic + strings.Trim(strings.TrimSpace(mnemo.CutNote), "_") + ansiReset + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	(&pipedStream{}).Status("ignored") // a pipe shows no status
}
