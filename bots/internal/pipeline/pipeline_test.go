package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/intake/intaketest"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 10 * time.Second

// msg is the fake platform's message.
type msg struct {
	Message
	Channel string
}

// fake is an in-memory platform: it records what the pipeline asks of it.
type fake struct {
	mu       sync.Mutex
	events   []string // "ack:id", "typing:id", "stop:id", "post:id:i:part", "prepare:id"
	changed  chan struct{}
	failPost int // PostPart fails for this part index (-1: never)
	posted   int // what Posted answers
	panicky  bool
}

func newFake() *fake { return &fake{changed: make(chan struct{}), failPost: -1} }

func (f *fake) record(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fake) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// waitEvent waits until an event with prefix was recorded.
func (f *fake) waitEvent(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		f.mu.Lock()
		ch := f.changed
		found := slices.ContainsFunc(f.events, func(e string) bool { return strings.HasPrefix(e, prefix) })
		f.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %q event in %q", prefix, f.Events())
		}
	}
}

func (f *fake) Encode(m *msg) []byte {
	data, _ := json.Marshal(map[string]any{"text": m.Text, "conv": m.Conversation, "user": m.User, "dm": m.DM})
	return data
}

func (f *fake) Decode(e intake.Entry, log *slog.Logger) (*msg, error) {
	var w struct {
		Text, Conv, User string
		DM               bool
	}
	if err := json.Unmarshal(e.Data, &w); err != nil {
		return nil, err
	}
	return &msg{Message: Message{ID: e.ID, User: w.User, Conversation: w.Conv, DM: w.DM, Text: w.Text, Log: log}}, nil
}

func (f *fake) Ack(_ context.Context, m *msg) { f.record("ack:" + m.ID) }

func (f *fake) Typing(_ context.Context, m *msg) func() {
	f.record("typing:" + m.ID)
	return func() { f.record("stop:" + m.ID) }
}

func (f *fake) Prepare(_ context.Context, m *msg, t *mnemo.Task) {
	f.record("prepare:" + m.ID)
	if f.panicky {
		panic("prepare broke")
	}
	if !m.DM {
		t.ChannelKey = mnemo.ChannelKey("fake", m.Channel)
	}
}

// Parts splits at "|".
func (f *fake) Parts(_ *msg, text string) []string { return strings.Split(text, "|") }

func (f *fake) PostPart(_ context.Context, m *msg, i int, part string) error {
	f.mu.Lock()
	fail := i == f.failPost
	f.mu.Unlock()
	if fail {
		return errors.New("HTTP 500")
	}
	f.record("post:" + m.ID + ":" + string(rune('0'+i)) + ":" + part)
	return nil
}

func (f *fake) Posted(_ context.Context, _ *msg, _ []string) int { return f.posted }

func (f *fake) posts() []string {
	var out []string
	for _, e := range f.Events() {
		if strings.HasPrefix(e, "post:") {
			out = append(out, e)
		}
	}
	return out
}

type env struct {
	p    *Pipeline[*msg]
	f    *fake
	h    *bottest.Handler
	logs *bottest.LogBuffer
	stop func()
}

func newEnv(t *testing.T, dir string, opts Options) *env {
	t.Helper()
	logs := &bottest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "fake", Dir: dir, Logger: log})
	h := bottest.NewHandler()
	opts.Name, opts.Handler, opts.Lifecycle = "fake", h, rt
	f := newFake()
	e := &env{p: New[*msg](f, opts), f: f, h: h, logs: logs}
	return e
}

func (e *env) start(t *testing.T) {
	t.Helper()
	stop, err := e.p.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.stop = stop
	t.Cleanup(func() {
		e.p.Close()
		stop()
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs)
		}
	})
}

func (e *env) msg(id, conv, text string) *msg {
	return &msg{Message: Message{ID: id, User: "u-" + conv, Conversation: conv, DM: true, Text: text,
		Log: slog.New(slog.NewTextHandler(e.logs, nil))}}
}

func (e *env) waitLog(t *testing.T, want string) {
	t.Helper()
	bottest.WaitFor(t, want, wait, func() bool { return strings.Contains(e.logs.String(), want) })
}

// A message is acknowledged, answered with the platform's task and posted
// part by part; the typing indicator ends before the post, or after it.
func TestAnswer(t *testing.T) {
	for _, untilPosted := range []bool{false, true} {
		e := newEnv(t, t.TempDir(), Options{ChannelMemory: mnemo.ChannelMemoryRead, TypingUntilPosted: untilPosted})
		e.start(t)
		e.h.SetReply(func(t mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: "a|b"}, nil })
		dm := e.msg("m1", "c1", "hi")
		dm.Speaker = "Ann"
		ch := e.msg("m2", "c2", "hello")
		ch.DM, ch.Channel = false, "general"
		if errs := e.p.Receive(context.Background(), dm, ch); errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		e.f.waitEvent(t, "stop:m1")
		e.f.waitEvent(t, "stop:m2")
		e.f.waitEvent(t, "post:m2:1")
		e.f.waitEvent(t, "post:m1:1")
		var m1 []string
		for _, ev := range e.f.Events() {
			if strings.Contains(ev, ":m1") {
				m1 = append(m1, ev)
			}
		}
		want := []string{"ack:m1", "typing:m1", "prepare:m1", "stop:m1", "post:m1:0:a", "post:m1:1:b"}
		if untilPosted {
			want = []string{"ack:m1", "typing:m1", "prepare:m1", "post:m1:0:a", "post:m1:1:b", "stop:m1"}
		}
		if !slices.Equal(m1, want) {
			t.Errorf("until posted %v: events %q", untilPosted, m1)
		}
		bottest.WaitFor(t, "the journal to empty", wait, func() bool { return e.p.Journal().Len() == 0 && e.p.Queued() == 0 })
		tasks := e.h.Tasks()
		slices.SortFunc(tasks, func(a, b mnemo.Task) int { return strings.Compare(a.Text, b.Text) })
		if d := tasks[1]; d.Platform != "fake" || d.User != "u-c1" || d.Speaker != "Ann" || d.Conversation != "c1" ||
			d.Channel || d.ChannelMemory != mnemo.ChannelMemoryFull || d.ID != TaskID("m1") {
			t.Errorf("DM task %+v", d)
		}
		if c := tasks[0]; !c.Channel || c.ChannelMemory != mnemo.ChannelMemoryRead || c.ChannelKey != mnemo.ChannelKey("fake", "general") {
			t.Errorf("channel task %+v", c)
		}
	}
}

// A redelivery is acknowledged and not answered again.
func TestDuplicate(t *testing.T) {
	e := newEnv(t, "", Options{})
	e.start(t)
	m := e.msg("m1", "c1", "hi")
	m.Keys = []string{"event:1"}
	e.p.Receive(context.Background(), m)
	again := e.msg("m9", "c1", "hi")
	again.Keys = []string{"event:1"}
	if errs := e.p.Receive(context.Background(), again); !errors.Is(errs[0], intake.ErrDuplicate) {
		t.Fatalf("redelivery: %v", errs)
	}
	e.f.waitEvent(t, "ack:m9")
	e.f.waitEvent(t, "post:m1")
	e.waitLog(t, "fake: duplicate message ignored")
	e.p.Close()
	if n := len(e.h.Tasks()); n != 1 {
		t.Errorf("%d tasks", n)
	}
}

// A message that cannot be journaled: left to the redelivery when the
// platform redelivers (not acknowledged), else answered anyway; while
// stopping, not answered.
func TestJournalError(t *testing.T) {
	for _, redelivers := range []bool{true, false} {
		e := newEnv(t, t.TempDir(), Options{Redelivers: redelivers})
		e.start(t)
		e.stop() // the journal is closed: Add fails
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		if redelivers {
			e.waitLog(t, "message not acknowledged: it could not be journaled; fake will deliver it again")
			e.p.Close()
			if ev := e.f.Events(); len(ev) != 0 {
				t.Errorf("events %q", ev)
			}
			continue
		}
		e.waitLog(t, "the message could not be journaled; answering it anyway")
		e.f.waitEvent(t, "post:m1")
		e.p.Stop()
		e.p.Receive(context.Background(), e.msg("m2", "c1", "late"))
		e.waitLog(t, "fake: shutting down; this message will not be answered")
	}
}

// While stopping, a message is journaled and answered after the next
// start, also when it reaches a closed queue.
func TestStopping(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir, Options{})
	e.start(t)
	e.p.Stop()
	e.p.Receive(context.Background(), e.msg("m1", "c1", "late"))
	e.waitLog(t, "fake: shutting down; the message is answered after the next start")
	e.p.Close()
	e.p.enqueue(context.Background(), e.msg("m2", "c1", "later")) // reaches the closed queue
	if n := strings.Count(e.logs.String(), "answered after the next start"); n != 2 {
		t.Errorf("logged %d times:\n%s", n, e.logs)
	}
	if len(e.f.posts()) != 0 {
		t.Fatal("answered while stopping")
	}
	e.stop()

	next := newEnv(t, dir, Options{})
	next.start(t)
	next.p.Replay(context.Background())
	next.f.waitEvent(t, "post:m1:0:echo: late")
}

// A full conversation is answered that the bot is busy; with no slot for
// that reply and ctx ended, it waits for the next start.
func TestBusy(t *testing.T) {
	e := newEnv(t, "", Options{})
	e.p.Queue = queue.New(4, 1)
	e.p.Slots = make(chan struct{}, 1)
	e.start(t)
	release := e.h.Hold()
	e.p.Receive(context.Background(), e.msg("m1", "c1", "one"))
	e.h.WaitTasks(t, 1, wait)
	e.p.Receive(context.Background(), e.msg("m2", "c1", "two"))
	e.f.waitEvent(t, "post:m2:0:"+BusyReplyText)
	e.waitLog(t, "fake: conversation busy; answering that the bot is busy")

	e.p.Slots <- struct{}{} // no slot left
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.p.Receive(ctx, e.msg("m3", "c1", "three"))
	e.waitLog(t, "fake: too many commands in progress; waiting for one to finish")
	e.waitLog(t, "fake: shutting down before the busy reply; it is answered after the next start")
	<-e.p.Slots
	release()
	e.f.waitEvent(t, "post:m1")
	e.p.Close()
	if e.p.Journal().Len() != 1 {
		t.Errorf("%d messages journaled; want m3", e.p.Journal().Len())
	}
}

// A panic in Prepare is answered politely; a part that cannot be posted
// ends the reply, logged, and the message leaves the journal.
func TestFailures(t *testing.T) {
	e := newEnv(t, "", Options{})
	e.start(t)
	e.f.panicky = true
	e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
	e.f.waitEvent(t, "post:m1:0:"+ErrorReplyText)
	e.waitLog(t, "fake: answering with an apology")
	e.p.Close()

	e = newEnv(t, "", Options{})
	e.start(t)
	e.f.failPost = 1
	e.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: "a|b|c"}, nil })
	e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
	e.waitLog(t, "fake: cannot post the reply")
	e.p.Close()
	if got := e.f.posts(); !slices.Equal(got, []string{"post:m1:0:a"}) {
		t.Errorf("posts %q", got)
	}
	if !strings.Contains(e.logs.String(), "part 2 of 3: HTTP 500") || !strings.Contains(e.logs.String(), "parts_posted=1") {
		t.Errorf("the failed part, or how many were posted, is not named:\n%s", e.logs)
	}
	if e.p.Journal().Len() != 0 {
		t.Error("the message stayed in the journal")
	}
}

// A message whose user was forgotten while it waited is not answered.
func TestForgottenWhileQueued(t *testing.T) {
	e := newEnv(t, "", Options{})
	e.p.Queue = queue.New(1, queue.PerConversation)
	e.start(t)
	release := e.h.Hold()
	e.p.Receive(context.Background(), e.msg("m1", "c1", "one"))
	e.h.WaitTasks(t, 1, wait)
	e.p.Receive(context.Background(), e.msg("m2", "c2", "two"))
	if n := e.p.Forget("u-c2"); n != 1 {
		t.Fatalf("forgot %d", n)
	}
	release()
	e.waitLog(t, "fake: message not answered: its user's memory was forgotten since it came")
	e.p.Close()
	if n := len(e.h.Tasks()); n != 1 {
		t.Errorf("%d tasks", n)
	}
}

// After a restart: a message not answered yet is answered; an interrupted
// reply is finished from the first part not posted (also when its
// conversation is full); an unreadable entry is dropped.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	j, err := intake.Open(intake.Options{Dir: dir, Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	enc := func(id, conv, text string) intake.Entry {
		return intake.Entry{ID: id, User: "u", Data: f.Encode(&msg{Message: Message{Conversation: conv, User: "u", DM: true, Text: text}})}
	}
	j.Add(enc("m1", "c1", "pending"), enc("m2", "c2", "interrupted"), enc("m3", "c3", "interrupted too"),
		intake.Entry{ID: "bad", User: "u", Data: []byte(`{"Text":5}`)})
	j.Posting("m2", "a|b|c")
	j.Posting("m3", "x|y")
	j.Close()

	e := newEnv(t, dir, Options{})
	e.p.Queue = queue.New(4, 1)
	e.f.posted = 1
	e.start(t)
	// c3 is full (its one slot held by a message not done yet): its
	// resume is spawned instead.
	release := e.h.Hold()
	e.p.Receive(context.Background(), e.msg("m0", "c3", "holding"))
	e.h.WaitTasks(t, 1, wait)
	e.p.Replay(context.Background())
	e.f.waitEvent(t, "post:m2:2:c")
	e.f.waitEvent(t, "post:m3:1:y")
	release()
	e.f.waitEvent(t, "post:m1:0:echo: pending")
	e.p.Close()
	for _, p := range e.f.posts() {
		if p == "post:m2:0:a" || p == "post:m3:0:x" {
			t.Errorf("posted again: %s", p)
		}
	}
	for _, want := range []string{"finishing a reply interrupted by a restart", "an unreadable message in the intake journal cannot be answered"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("logs lack %q", want)
		}
	}
}

// A second Start fails (intake.Lifecycle.Start).
func TestStartTwice(t *testing.T) {
	e := newEnv(t, "", Options{})
	e.start(t)
	if _, err := e.p.Start(context.Background()); err == nil {
		t.Fatal("a second Start did not fail")
	}
	// Nothing journaled: nothing replayed, nothing said.
	e.p.Replay(context.Background())
	if strings.Contains(e.logs.String(), "before a restart") {
		t.Errorf("an empty replay was logged:\n%s", e.logs)
	}
}

// BenchmarkMessage is one DM's way through the pipeline alone (memory
// journal, in-memory platform, echoing handler): receive, queue, answer,
// post, done.
func BenchmarkMessage(b *testing.B) {
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "fake"})
	f := &countingPlatform{fake: newFake(), posted: make(chan struct{}, 1024)}
	p := New[*msg](f, Options{Name: "fake", Handler: bottest.NewHandler(), Lifecycle: rt})
	stop, err := p.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	defer p.Close()
	log := slog.New(slog.DiscardHandler)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := "m" + strconv.Itoa(i)
		p.Receive(context.Background(), &msg{Message: Message{ID: id, User: "u", Conversation: id, DM: true, Text: "hi", Log: log}})
		<-f.posted
	}
}

// countingPlatform is fake without the recording: PostPart signals.
type countingPlatform struct {
	*fake
	posted chan struct{}
}

func (c *countingPlatform) Ack(context.Context, *msg)                  {}
func (c *countingPlatform) Typing(context.Context, *msg) func()        { return func() {} }
func (c *countingPlatform) Prepare(context.Context, *msg, *mnemo.Task) {}
func (c *countingPlatform) PostPart(context.Context, *msg, int, string) error {
	c.posted <- struct{}{}
	return nil
}

// A journal that cannot record: the reply is posted anyway, and both
// failures are logged; a busy reply that cannot be posted is named so.
func TestReplyJournalError(t *testing.T) {
	files := &intaketest.FailingFiles{}
	e := newEnv(t, t.TempDir(), Options{})
	e.p.rt.Faults = files.Hook
	e.p.Queue = queue.New(4, 1)
	e.start(t)
	release := e.h.Hold()
	e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
	e.h.WaitTasks(t, 1, wait)
	files.Fail.Store(true)
	release()
	e.f.waitEvent(t, "post:m1:0:echo: hi")
	e.waitLog(t, "fake: the reply could not be journaled; posting it anyway")
	e.waitLog(t, "fake: the reply was posted but could not be marked done")
	files.Fail.Store(false)

	release = e.h.Hold()
	e.p.Receive(context.Background(), e.msg("m2", "c2", "one"))
	e.h.WaitTasks(t, 2, wait)
	e.f.mu.Lock()
	e.f.failPost = 0
	e.f.mu.Unlock()
	e.p.Receive(context.Background(), e.msg("m3", "c2", "two"))
	e.waitLog(t, "fake: cannot post the busy reply")
	release()
}

// wireMsg is a message as a platform journals it.
type wireMsg struct{ Text string }

func (w wireMsg) Valid() bool { return w.Text != "" }

func (w wireMsg) Incoming(e intake.Entry, log *slog.Logger) *msg {
	return &msg{Message: Message{ID: e.ID, Text: w.Text, Log: log}}
}

func TestDecodeJSON(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if m, err := DecodeJSON[wireMsg](intake.Entry{ID: "a", Data: []byte(`{"Text":"hi"}`)}, log); err != nil || m.ID != "a" || m.Text != "hi" {
		t.Errorf("decoded %+v, %v", m, err)
	}
	if _, err := DecodeJSON[wireMsg](intake.Entry{Data: []byte(`{"Text":""}`)}, log); err == nil || err.Error() != "malformed ids" {
		t.Errorf("not valid: %v", err)
	}
	if _, err := DecodeJSON[wireMsg](intake.Entry{Data: []byte(`{"Text":5}`)}, log); err == nil {
		t.Error("not JSON of a wireMsg: no error")
	}
}

// terminal is the fake platform showing replies itself (Streamer), with a
// context per message (Canceller), told of the messages a forget dropped
// (Dropper).
type terminal struct {
	*fake
	mu       sync.Mutex
	shown    map[string]*strings.Builder
	answered map[string]Answered
	dropped  []string
	ctx      map[string]context.Context
}

func (f *terminal) Stream(m *msg) mnemo.Stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &strings.Builder{}
	f.shown[m.ID] = b
	return shownStream{f, b}
}

func (f *terminal) Answered(m *msg, a Answered) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered[m.ID] = a
}

func (f *terminal) TaskContext(ctx context.Context, m *msg) context.Context {
	if c, ok := f.ctx[m.ID]; ok {
		return c
	}
	return ctx
}

func (f *terminal) Dropped(m *msg) {
	f.mu.Lock()
	f.dropped = append(f.dropped, m.ID)
	f.mu.Unlock()
	f.record("dropped:" + m.ID)
}

type shownStream struct {
	f *terminal
	b *strings.Builder
}

func (s shownStream) Text(d string) { s.f.mu.Lock(); s.b.WriteString(d); s.f.mu.Unlock() }
func (s shownStream) Status(string) {}

// A platform that shows the reply itself gets the task's stream (not a
// draft) and the Answered before the post; a cancelled task's answer
// says Cancelled; a message a forget dropped is told to the platform.
func TestStreamerCancellerDropper(t *testing.T) {
	f := &terminal{fake: newFake(), shown: map[string]*strings.Builder{}, answered: map[string]Answered{}, ctx: map[string]context.Context{}}
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "term"})
	started, gate := make(chan struct{}, 1), make(chan struct{})
	h := handlerFunc(func(ctx context.Context, task mnemo.Task) (mnemo.Reply, error) {
		if task.Text == "m2" { // held until m3 is queued and forgotten, then cancelled
			started <- struct{}{}
			<-gate
			return mnemo.Reply{Text: mnemo.ApologyText, Failed: true, Err: ctx.Err()}, nil
		}
		if task.Stream == nil {
			return mnemo.Reply{Text: "no stream"}, nil
		}
		task.Stream.Text("Hello")
		return mnemo.Reply{Text: "Hello", Streamed: true}, nil
	})
	p := New[*msg](f, Options{Name: "term", Handler: h, Lifecycle: rt})
	p.Queue = queue.New(1, queue.PerConversation)
	stop, err := p.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	f.ctx["m2"] = cancelled
	m := func(id, user string) *msg {
		return &msg{Message: Message{ID: id, User: user, Conversation: user, DM: true, Text: id, Log: slog.New(slog.DiscardHandler)}}
	}
	p.Receive(context.Background(), m("m1", "ann"))
	f.waitEvent(t, "post:m1:0")
	p.Receive(context.Background(), m("m2", "ann"))
	<-started
	p.Receive(context.Background(), m("m3", "bob"))
	p.Forget("bob")
	close(gate)
	f.waitEvent(t, "dropped:m3")
	p.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.shown["m1"].String(); got != "Hello" || !f.answered["m1"].Streamed || f.answered["m1"].Cancelled {
		t.Errorf("m1: shown %q, answered %+v", got, f.answered["m1"])
	}
	if a := f.answered["m2"]; !a.Failed || !a.Cancelled {
		t.Errorf("m2, cancelled: %+v", a)
	}
	if !slices.Equal(f.dropped, []string{"m3"}) {
		t.Errorf("dropped %v", f.dropped)
	}
}
