package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
)

// streamWait bounds every wait of these tests; reached only when one fails.
const streamWait = 30 * time.Second

// pipedChat is `mnemo chat` run() with stdin and stdout piped: lines are
// sent one at a time and stdout is read as it is written.
type pipedChat struct {
	in     *io.PipeWriter
	out    *syncWriter
	errOut *syncWriter
	done   chan error
}

// scriptThinker answers the Thinker's requests with script(user message,
// how many requests that message has had so far) and the reflector's with
// the brain.
func scriptThinker(w *chatWorld, script func(user string, n int) openaitest.Reply) {
	asked := map[string]int{}
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if strings.Contains(r.System(), "memory reflector") {
			return w.brain.handle(r)
		}
		for i := len(r.Chat.Messages) - 1; i >= 0; i-- { // the message being answered, also after a tool call
			if m := r.Chat.Messages[i]; m.Role == "user" {
				asked[m.Content]++ // the handler runs on one request at a time here
				return script(m.Content, asked[m.Content]), true
			}
		}
		return openaitest.Reply{}, false
	})
}

func startPipedChat(t *testing.T, w *chatWorld, args ...string) *pipedChat {
	t.Helper()
	inR, inW := io.Pipe()
	c := &pipedChat{in: inW, out: &syncWriter{}, errOut: &syncWriter{}, done: make(chan error, 1)}
	go func() {
		c.done <- run(stopOn(context.Background()), append([]string{"chat"}, args...), func(k string) string { return w.env[k] }, inR, c.out, c.errOut)
	}()
	return c
}

func (c *pipedChat) send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatal(err)
	}
}

// waitOut waits until stdout holds want.
func (c *pipedChat) waitOut(t *testing.T, want string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%q on stdout (it has %q)", want, c.out.String()), streamWait, c.out.Changed,
		func() bool { return strings.Contains(c.out.String(), want) })
}

// end closes stdin and returns the exit code.
func (c *pipedChat) end(t *testing.T) int {
	t.Helper()
	c.in.Close()
	select {
	case err := <-c.done:
		return exitCode(err, &c.errOut.b)
	case <-time.After(streamWait):
		t.Fatal("chat did not end at the end of its input")
	}
	return -1
}

// reflected is every transcript the reflector got, joined.
func (w *chatWorld) reflected() string { return strings.Join(w.brain.transcripts(), "\n----\n") }

// The first words reach stdout while the model is still writing; the
// reply ends up there complete, once; the reflector gets exactly it.
func TestChatStreamsTheFirstWordsBeforeTheModelFinishes(t *testing.T) {
	w := newChatWorld(t)
	const reply = "Hello Ada, these words come one by one."
	scriptThinker(w, func(string, int) openaitest.Reply { return openaitest.Text(reply).WithPauseAfter(3) })
	c := startPipedChat(t, w, "--user", "ada")
	c.send(t, "hi there")
	c.waitOut(t, "Hello Ada, these")
	w.srv.WaitPaused(1, streamWait) // the model holds after its first words
	if strings.Contains(c.out.String(), "words") {
		t.Fatalf("more than the model's first words are out: %q", c.out.String())
	}
	w.srv.Resume()
	c.waitOut(t, reply+"\n")
	if code := c.end(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.errOut.String())
	}
	if got := c.out.String(); got != reply+"\n" {
		t.Errorf("stdout %q, want the reply once", got)
	}
	if tr := w.reflected(); strings.Count(tr, reply) != 1 {
		t.Errorf("the reflector did not get the reply exactly once:\n%s", tr)
	}
	if !w.srv.Requests()[0].Chat.Stream {
		t.Error("the model was not asked to stream")
	}
}

// Words written before a tool call stay; the answer follows after a blank
// line; that whole text is what is remembered.
func TestChatStreamsAToolCallBeforeTheAnswer(t *testing.T) {
	w := newChatWorld(t)
	w.putMemory(t, "ada/facts/user.md", "# User\n\n> Summary: user name\n\n- Name: Ada\n")
	scriptThinker(w, func(_ string, n int) openaitest.Reply {
		if n == 1 {
			return openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`)).WithContent("Let me look.")
		}
		return openaitest.Text("Your name is Ada.")
	})
	c := startPipedChat(t, w, "--user", "ada")
	c.send(t, "what is my name?")
	const want = "Let me look.\n\nYour name is Ada.\n"
	c.waitOut(t, want)
	if code := c.end(t); code != 0 || c.out.String() != want {
		t.Fatalf("exit %d stdout %q; stderr:\n%s", code, c.out.String(), c.errOut.String())
	}
	if tr := w.reflected(); !strings.Contains(tr, "Let me look.\n") || !strings.Contains(tr, "Your name is Ada.") {
		t.Errorf("the reflector did not get the reply as shown:\n%s", tr)
	}
}

// A stream cut in the middle: what came, then the note; the model is not
// asked again; the turn is not remembered; a piped chat exits 1.
func TestChatStreamCut(t *testing.T) {
	w := newChatWorld(t)
	scriptThinker(w, func(_ string, n int) openaitest.Reply {
		if n == 1 {
			return openaitest.Text("One two three four.").WithCutAfter(2)
		}
		return openaitest.Text("a second copy")
	})
	c := startPipedChat(t, w, "--user", "ada")
	c.send(t, "count for me")
	want := "One two\n\n" + strings.TrimSpace(mnemo.CutNote) + "\n"
	c.waitOut(t, want)
	if code := c.end(t); code != 1 {
		t.Errorf("exit %d, want 1 (a message was not answered)", code)
	}
	if got := c.out.String(); got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	thinker := 0
	for _, r := range w.srv.Requests() {
		if !strings.Contains(r.System(), "memory reflector") {
			thinker++
		}
	}
	if thinker != 1 {
		t.Errorf("the model was asked %d times: a cut stream was retried", thinker)
	}
	if tr := w.reflected(); strings.Contains(tr, "count for me") {
		t.Errorf("a cut turn was reflected:\n%s", tr)
	}
}

// A failure before the first word is retried (the person saw nothing);
// after the first word it is not (they would see the words twice).
func TestChatStreamRetriesOnlyBeforeTheFirstWord(t *testing.T) {
	w := newChatWorld(t)
	scriptThinker(w, func(user string, n int) openaitest.Reply {
		switch {
		case user == "first" && n == 1:
			return openaitest.Error(503, "", "overloaded").WithRetryAfter("0")
		case user == "first":
			return openaitest.Text("Hello once.")
		case n == 1:
			return openaitest.Text("Half a reply").WithErrorAfter(1, openaitest.Error(500, "", "overloaded"))
		}
		return openaitest.Text("a second copy")
	})
	c := startPipedChat(t, w, "--user", "ada")
	c.send(t, "first")
	c.waitOut(t, "Hello once.\n")
	c.send(t, "second")
	c.waitOut(t, strings.TrimSpace(mnemo.CutNote))
	c.end(t)
	if got, want := c.out.String(), "Hello once.\nHalf\n\n"+strings.TrimSpace(mnemo.CutNote)+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	var asked []string
	for _, r := range w.srv.Requests() {
		if !strings.Contains(r.System(), "memory reflector") {
			asked = append(asked, r.LastUser())
		}
	}
	if strings.Join(asked, ",") != "first,first,second" {
		t.Errorf("the model was asked for %q", asked)
	}
}

// llm.stream: false asks the model without a stream, and the chat works
// as before.
func TestChatWithStreamingOff(t *testing.T) {
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "llm:\n  stream: false\n")
	w.chat(t, "Hello, I'm Ada Lovelace.\n", "--user", "ada").want(t, 0, "Noted.\n", "")
	for _, r := range w.srv.Requests() {
		if r.Chat.Stream {
			t.Errorf("request %d asked for a stream with llm.stream false", r.Seq)
		}
	}
	if !strings.Contains(w.file(t, "ada/facts/user.md"), "Ada Lovelace") {
		t.Error("the turn was not remembered")
	}
}

// At a terminal: the words show while the model writes; Ctrl-C stops the
// stream, keeps what was shown, and the turn is not remembered.
func TestChatStreamsAtATerminal(t *testing.T) {
	w := newChatWorld(t)
	scriptThinker(w, func(user string, _ int) openaitest.Reply {
		if strings.Contains(user, "long") {
			return openaitest.Text("This is a long story that never ends.").WithPauseAfter(3)
		}
		return openaitest.Text("Short answer here.").WithPauseAfter(2)
	})
	c := startTTYChat(t, w, "ada")
	tty := c.tty
	tty.WaitFor(t, "you> ")
	tty.Type(t, "a short one\r")
	tty.WaitFor(t, "mnemo>"+"\x1b[0m Short answer")
	w.srv.WaitPaused(1, streamWait) // the model holds after its first words
	if strings.Contains(tty.Screen(), "here.") {
		t.Fatal("more than the model's first words are shown")
	}
	w.srv.Resume()
	tty.WaitFor(t, "here.")
	tty.WaitFor(t, "you> ")
	tty.Type(t, "tell me a long story\r")
	tty.WaitFor(t, "This is a")
	tty.Type(t, "\x03")
	tty.WaitFor(t, "reply cancelled")
	c.endAtCtrlD(t, streamWait)
	if s := tty.Screen(); strings.Contains(s, "never ends") || !strings.Contains(s, "This is a") {
		t.Errorf("screen %q", s)
	}
	tr := w.reflected()
	if strings.Contains(tr, "long story") || !strings.Contains(tr, "Short answer here.") {
		t.Errorf("reflected:\n%s", tr)
	}
}

// A stream still running when shutdown's grace is over is cut there: the
// words shown, then the note; the turn is not remembered.
func TestChatStreamCutAtShutdown(t *testing.T) {
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "shutdown:\n  grace: 200ms\n")
	scriptThinker(w, func(string, int) openaitest.Reply { return openaitest.Text("Words before the end.").WithPauseAfter(2) })
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	out, errOut := &syncWriter{}, &syncWriter{}
	done := make(chan error, 1)
	go func() {
		done <- run(stopOn(stop), []string{"chat", "--user", "ada"}, func(k string) string { return w.env[k] }, inR, out, errOut)
	}()
	fmt.Fprintln(inW, "say something")
	c := &pipedChat{out: out}
	c.waitOut(t, "Words before")
	cancel() // SIGTERM: the grace starts; the model stays paused past it
	want := "Words before\n\n" + strings.TrimSpace(mnemo.CutNote) + "\n"
	c.waitOut(t, want)
	select {
	case err := <-done:
		if code := exitCode(err, &errOut.b); code != 0 {
			t.Errorf("exit %d; stderr:\n%s", code, errOut.String())
		}
	case <-time.After(streamWait):
		t.Fatal("chat did not end after the grace")
	}
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if tr := w.reflected(); strings.Contains(tr, "say something") {
		t.Errorf("a cut turn was reflected:\n%s", tr)
	}
}

// At a terminal the log shares the screen with the reply (issue 34, item
// 10): the warning of a cut stream never lands inside the line being
// written, and the cut note is rendered as the rest of the reply's
// Markdown (italic), its underscores not shown; the reply is not printed
// a second time.
func TestChatStreamCutAtATerminalKeepsLogsOffTheLine(t *testing.T) {
	w := newChatWorld(t)
	scriptThinker(w, func(string, int) openaitest.Reply {
		return openaitest.Text("d1 d2 d3 d4 d5 d6").WithCutAfter(4)
	})
	tty := consoletest.Open(t)
	done := make(chan error, 1)
	go func() {
		// stderr is the terminal too, as when a person runs mnemo chat.
		done <- run(stopOn(context.Background()), []string{"chat", "--user", "ada"}, func(k string) string { return w.env[k] }, tty.Slave, tty.Slave, tty.Slave)
	}()
	tty.WaitFor(t, "you> ")
	tty.Type(t, "count for me\r")
	tty.WaitFor(t, "cut off here")
	tty.WaitFor(t, "you> ")
	tty.Type(t, "\x04")
	select {
	case <-done:
	case <-time.After(streamWait):
		t.Fatalf("chat did not end at Ctrl-D; screen:\n%q", tty.Screen())
	}
	screen := tty.Screen()
	for _, line := range strings.Split(screen, "\n") {
		if strings.Contains(line, "d3 d4") && strings.Contains(line, "level=") {
			t.Errorf("a log line was written inside the reply's line: %q", line)
		}
	}
	if !strings.Contains(screen, "reply cut off") {
		t.Errorf("the warning is not on the screen: %q", screen)
	}
	if strings.Contains(screen, "_(") || strings.Contains(screen, ")_") {
		t.Errorf("the cut note is shown with its Markdown: %q", screen)
	}
	if !strings.Contains(screen, "\x1b[3m(The reply was cut off here") {
		t.Errorf("the cut note is not rendered in italics: %q", screen)
	}
	// The words together, not "d3" alone: a log line's task_id is hex.
	if _, after, _ := strings.Cut(screen, "level=WARN"); strings.Contains(after, "d1 d2 d3") {
		t.Errorf("the reply is shown again after the warning: %q", screen)
	}
}
