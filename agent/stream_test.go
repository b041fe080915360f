package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// recStream is a Task.Stream that records what it is shown; each text
// also goes on texts as it comes.
type recStream struct {
	mu     sync.Mutex
	events []string
	text   strings.Builder
	texts  chan string
}

func newRecStream() *recStream { return &recStream{texts: make(chan string, 1000)} }

func (r *recStream) Text(d string) {
	r.mu.Lock()
	r.events = append(r.events, "text:"+d)
	r.text.WriteString(d)
	r.mu.Unlock()
	r.texts <- d
}

func (r *recStream) Status(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "status:"+s)
}

func (r *recStream) got() (string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String(), append([]string(nil), r.events...)
}

// turnLog records OnTurn's turns.
type turnLog struct {
	mu    sync.Mutex
	turns []mnemo.Turn
}

func (l *turnLog) add(t mnemo.Turn) { l.mu.Lock(); l.turns = append(l.turns, t); l.mu.Unlock() }

func (l *turnLog) all() []mnemo.Turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]mnemo.Turn(nil), l.turns...)
}

func streamFixture(t *testing.T, stream bool, edit func(*Config)) (*Agent, *openaitest.Server, *turnLog) {
	t.Helper()
	turns := &turnLog{}
	a, srv := agentFixture(t, &fakeMemory{indexes: []string{adaIndex}}, func(c *Config) {
		c.Stream, c.OnTurn = stream, turns.add
		if edit != nil {
			edit(c)
		}
	})
	return a, srv, turns
}

type handled struct {
	reply mnemo.Reply
	err   error
}

func handleAsync(ctx context.Context, a *Agent, task mnemo.Task) chan handled {
	done := make(chan handled, 1)
	go func() {
		r, err := a.Handle(ctx, task)
		done <- handled{r, err}
	}()
	return done
}

// The first words reach the stream while the model still writes; the
// reply is exactly what was shown, and so is what the reflector gets.
func TestStreamedReply(t *testing.T) {
	a, srv, turns := streamFixture(t, true, nil)
	srv.Enqueue(openaitest.Text("\n  Hello Ada, nice to see you again.").WithPauseAfter(2))
	rs := newRecStream()
	done := handleAsync(context.Background(), a, mnemo.Task{User: "ada", Platform: "console", Text: "hi", Stream: rs})
	if first := <-rs.texts + <-rs.texts; first != "Hello Ada, " {
		t.Errorf("first words %q (white space at the start is not shown)", first)
	}
	if len(turns.all()) != 0 {
		t.Error("the turn reached OnTurn before the reply was complete")
	}
	srv.Resume()
	h := <-done
	shown, _ := rs.got()
	r := h.reply
	if h.err != nil || r.Failed || !r.Streamed || r.Cut || r.Text != shown || shown != "Hello Ada, nice to see you again." {
		t.Fatalf("reply %+v err %v, shown %q", r, h.err, shown)
	}
	if tu := turns.all(); len(tu) != 1 || tu[0].ReplyText != shown || tu[0].Failed {
		t.Errorf("turns %+v", tu)
	}
	if !srv.Requests()[0].Chat.Stream {
		t.Error("the model was not asked to stream")
	}
}

// Words written before a tool call are shown and stay in the reply; a
// status says what the tool does; the answer follows after a blank line.
func TestStreamedToolCallBeforeTheAnswer(t *testing.T) {
	a, srv, turns := streamFixture(t, true, nil)
	srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`)).WithContent("Let me check."),
		openaitest.Text("You are Ada."),
	)
	rs := newRecStream()
	r, err := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "who am I?", Stream: rs})
	shown, events := rs.got()
	want := "Let me check.\n\nYou are Ada."
	if err != nil || r.Text != want || shown != want || !r.Streamed || r.Failed {
		t.Fatalf("reply %+v err %v shown %q", r, err, shown)
	}
	joined := strings.Join(events, "|")
	if !strings.Contains(joined, ".|status:reading facts/user.md…|status:|text:\n\nYou ") {
		t.Errorf("events %q", events)
	}
	if tu := turns.all(); len(tu) != 1 || tu[0].ReplyText != want {
		t.Errorf("turns %+v", tu)
	}
}

// A stream cut after its first words: the reply is what was shown,
// Failed and Cut; neither the reflector nor the short-term history gets
// it; the model is not asked again (no second copy).
func TestStreamCutMidway(t *testing.T) {
	a, srv, turns := streamFixture(t, true, nil)
	srv.Enqueue(openaitest.Text("One two three four.").WithCutAfter(2), openaitest.Text("a second copy"))
	rs := newRecStream()
	r, err := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "count", Stream: rs})
	shown, _ := rs.got()
	if err != nil || !r.Failed || !r.Cut || !r.Streamed || r.Text != "One two " || shown != r.Text {
		t.Fatalf("reply %+v err %v shown %q", r, err, shown)
	}
	if !errors.Is(r.Err, llm.ErrCut) || !errors.Is(r.Err, llm.ErrUnavailable) {
		t.Errorf("Err = %v", r.Err)
	}
	if len(turns.all()) != 0 {
		t.Errorf("a cut reply reached OnTurn: %+v", turns.all())
	}
	if len(srv.Requests()) != 1 || srv.Pending() != 1 {
		t.Errorf("%d requests", len(srv.Requests()))
	}
	srv.Enqueue(openaitest.Text("ok"))
	if _, err := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "again", Stream: newRecStream()}); err != nil {
		t.Fatal(err)
	}
	for _, m := range srv.Requests()[1].Chat.Messages {
		if strings.Contains(m.Content, "One two") {
			t.Errorf("the cut reply is in the next request's history: %q", m.Content)
		}
	}
}

// Cancelled while the words come (Ctrl-C, shutdown): cut, not remembered.
func TestStreamCancelledMidway(t *testing.T) {
	a, srv, turns := streamFixture(t, true, nil)
	srv.Enqueue(openaitest.Text("One two three four.").WithPauseAfter(1))
	rs := newRecStream()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := handleAsync(ctx, a, mnemo.Task{User: "ada", Platform: "console", Text: "count", Stream: rs})
	<-rs.texts
	cancel()
	h := <-done
	if h.err != nil || !h.reply.Cut || h.reply.Text != "One " || !errors.Is(h.reply.Err, context.Canceled) {
		t.Fatalf("reply %+v err %v", h.reply, h.err)
	}
	if len(turns.all()) != 0 {
		t.Error("a cancelled stream reached OnTurn")
	}
}

// A failure before any word: the apology, not streamed (the front end
// posts it whole), and the failed turn goes to OnTurn as without a stream.
func TestStreamFailsBeforeTheFirstWord(t *testing.T) {
	a, srv, turns := streamFixture(t, true, nil)
	srv.Enqueue(openaitest.Error(401, "invalid_api_key", "no"))
	rs := newRecStream()
	r, _ := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "hi", Stream: rs})
	if shown, _ := rs.got(); !r.Failed || r.Cut || r.Streamed || r.Text != mnemo.ApologyText || shown != "" {
		t.Fatalf("reply %+v shown %q", r, shown)
	}
	if tu := turns.all(); len(tu) != 1 || !tu[0].Failed {
		t.Errorf("turns %+v", tu)
	}
}

// With Stream off the model is asked without a stream and the whole
// reply goes to Task.Stream at once: front ends have one path.
func TestStreamOffShowsTheWholeReply(t *testing.T) {
	a, srv, _ := streamFixture(t, false, nil)
	srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_list", `{}`)).WithContent("Hmm."), openaitest.Text("All of it."))
	rs := newRecStream()
	r, err := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "hi", Stream: rs})
	_, events := rs.got()
	if err != nil || !r.Streamed || r.Text != "All of it." || strings.Join(events, "|") != "status:looking through memory…|status:|text:All of it." {
		t.Fatalf("reply %+v err %v events %q", r, err, events)
	}
	for _, req := range srv.Requests() {
		if req.Chat.Stream {
			t.Error("asked for a stream with Stream off")
		}
	}
}

// A streamed answer longer than MaxReplyChars stops at it, closed as
// cutReply closes one; the model's stream is left (Handle returns while
// the model holds, never resumed).
func TestStreamStopsAtMaxReplyChars(t *testing.T) {
	a, srv, turns := streamFixture(t, true, func(c *Config) { c.MaxReplyChars = 200 })
	long := "```go\n" + strings.Repeat("fmt.Println(1) ", 100) + "\n```"
	srv.Enqueue(openaitest.Text(long).WithPauseAfter(90))
	rs := newRecStream()
	r, err := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "code", Stream: rs})
	shown, _ := rs.got()
	if err != nil || r.Failed || r.Text != shown || utf8.RuneCountInString(shown) > 200 ||
		!strings.HasSuffix(shown, "\n```"+cutNote(200)) {
		t.Fatalf("reply %+v err %v shown %q (%d)", r, err, shown, utf8.RuneCountInString(shown))
	}
	if tu := turns.all(); len(tu) != 1 || tu[0].ReplyText != shown {
		t.Errorf("turns %+v", tu)
	}
}

// An answer with no words gets the usual text, shown.
func TestStreamEmptyAnswer(t *testing.T) {
	a, srv, _ := streamFixture(t, true, nil)
	srv.Enqueue(openaitest.Text("  "))
	rs := newRecStream()
	r, _ := a.Handle(context.Background(), mnemo.Task{User: "ada", Platform: "console", Text: "hi", Stream: rs})
	if shown, _ := rs.got(); r.Text != emptyAnswerText || shown != emptyAnswerText {
		t.Errorf("reply %q shown %q", r.Text, shown)
	}
}

func TestToolStatus(t *testing.T) {
	for call, want := range map[llm.ToolCall]string{
		{Name: "memory_read", Arguments: `{"path":"facts/tea.md"}`}:                    "reading facts/tea.md…",
		{Name: "memory_read", Arguments: `{"path":"a\nb"}`}:                            "reading a b…",
		{Name: "memory_read", Arguments: `{`}:                                          "reading memory…",
		{Name: "memory_read", Arguments: `{"path":"` + strings.Repeat("x", 81) + `"}`}: "reading memory…",
		{Name: "memory_list"}:           "looking through memory…",
		{Name: "web\x1b[2J"}:            "using web [2J…",
		{Name: strings.Repeat("n", 65)}: "using a tool…",
	} {
		if got := toolStatus(call); got != want {
			t.Errorf("toolStatus(%+v) = %q, want %q", call, got, want)
		}
	}
}

// The shower: a new model call's words come after a blank line (white
// space alone waits for words); past the limit the words stop at a break
// with the note, and nothing more is shown.
func TestShower(t *testing.T) {
	rs := newRecStream()
	sh := newShower(rs, 150)
	for _, c := range []struct {
		step  int
		delta string
	}{{1, "  \n"}, {1, "Let me see."}, {2, " \n "}, {2, "\nFound it:\n"}, {3, "more"}} {
		if err := sh.text(c.step, c.delta); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := rs.got(); got != "Let me see.\n\nFound it:\n\nmore" {
		t.Errorf("shown %q", got)
	}
	long := strings.Repeat("abcdefghi ", 20)
	if err := sh.text(3, long); err != errReplyFull {
		t.Errorf("past the limit: %v", err)
	}
	if err := sh.text(3, "after"); err != errReplyFull {
		t.Errorf("after the limit: %v", err)
	}
	got, _ := rs.got()
	if utf8.RuneCountInString(got) > 150 || !strings.HasSuffix(got, "abcdefghi"+cutNote(150)) || strings.Contains(got, "after") {
		t.Errorf("shown %q (%d)", got, utf8.RuneCountInString(got))
	}
	if sh.finish() != got {
		t.Error("finish changed a full reply")
	}
}
