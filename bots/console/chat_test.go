package console

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// over is a terminal platform answering with h, run for one test; deps
// change what it is made with.
func over(t testing.TB, h mnemo.Handler, deps ...func(*platform.Deps)) *Chat {
	t.Helper()
	d := platform.Deps{Handler: h}
	for _, f := range deps {
		f(&d)
	}
	c := New(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	return c
}

// chatOf is h's terminal platform's conversation of user, for one test.
func chatOf(t testing.TB, user string, h mnemo.Handler, deps ...func(*platform.Deps)) Conversation {
	return over(t, h, deps...).Conversation(user)
}

// withMemory gives the platform mem as its memory.
func withMemory(mem memorycmd.Memory) func(*platform.Deps) {
	return func(d *platform.Deps) { d.Memory = mem }
}

// withWithdraw gives the platform withdraw.
func withWithdraw(withdraw func(taskID string)) func(*platform.Deps) {
	return func(d *platform.Deps) { d.Withdraw = withdraw }
}

// Two chats of one person (a second one through the owner) share the
// conversation: a line waits for the other's answer, and a forget while
// it waits drops it, answering so; the platform says how many wait; a
// second Run is refused.
func TestPlatformQueueAndForget(t *testing.T) {
	h := bottest.NewHandler()
	release := h.Hold()
	c := over(t, h)
	ann := c.Conversation("ann")
	first := make(chan Said, 1)
	go func() { s, _ := ann.Say(context.Background(), Line{ID: "l1", Text: "one"}); first <- s }()
	h.WaitTasks(t, 1, time.Minute)
	second := make(chan Said, 1)
	go func() { s, _ := ann.Say(context.Background(), Line{ID: "l2", Text: "two"}); second <- s }()
	bottest.WaitFor(t, "the second line to wait", time.Minute, func() bool { return c.Queued() == 2 })
	if n := c.Forget("ann"); n != 1 {
		t.Errorf("forgot %d waiting", n)
	}
	release()
	if s := <-first; s.Text != "echo: one" || s.Failed {
		t.Errorf("first: %+v", s)
	}
	if s := <-second; s.Text != DroppedText {
		t.Errorf("second: %+v", s)
	}
	if n := len(h.Tasks()); n != 1 {
		t.Errorf("%d tasks", n)
	}
	// Cancels of lines never said (a Ctrl-C racing its reply's end) are
	// remembered, within a bound.
	for i := range maxEarly + 1 {
		c.Conversation("ann").Cancel(strconv.Itoa(i))
	}
	if n := len(c.early); n != 1 {
		t.Errorf("%d early cancels kept", n)
	}
	if err := c.Run(context.Background()); err == nil || !c.Ready() {
		t.Errorf("a second Run was taken (%v), or made the running platform not ready", err)
	}
}

// What the pipeline asks of a terminal that it does nothing for: no
// acknowledgement, typing (the front's spinner), preparation or parts
// already posted; a journal entry reads back as its line.
func TestPlatformPieces(t *testing.T) {
	p := chatPlatform{}
	m := &message{Message: pipeline.Message{ID: "line:a:1", User: "ann", Text: "hi"}}
	p.Ack(context.Background(), m)
	p.Typing(context.Background(), m)()
	p.Prepare(context.Background(), m, &mnemo.Task{})
	if n := p.Posted(context.Background(), m, []string{"x"}); n != 0 {
		t.Errorf("posted %d", n)
	}
	got, err := p.Decode(intake.Entry{ID: "line:a:1", Data: p.Encode(m)}, nil)
	if err != nil || got.User != "ann" || got.Text != "hi" || got.Conversation != "console:ann" || !got.DM {
		t.Errorf("decoded %+v, %v", got, err)
	}
	if _, err := p.Decode(intake.Entry{Data: []byte("{")}, nil); err == nil {
		t.Error("a torn entry decoded")
	}
	(&pipedStream{}).Status("ignored") // a pipe shows no status
}
