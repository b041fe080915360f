package reflector

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// envWithTwoUsers opens an env holding two turns of alice's and one of
// bob's, none reflected yet: forgetting alice must leave bob's.
func envWithTwoUsers(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, nil)
	e.add(turn("alice", "t1", "I'm Ada"))
	e.add(turn("alice", "t2", "I live in Paris"))
	e.add(turn("bob", "t3", "I'm Bob"))
	return e
}

func TestForgetDropsPendingTurns(t *testing.T) {
	e := envWithTwoUsers(t)
	n, err := e.r.Forget(context.Background(), "alice")
	if err != nil || n != 2 {
		t.Fatalf("Forget = %d, %v; want 2 turns", n, err)
	}
	if lines := e.journalLines("alice"); lines != nil {
		t.Errorf("alice's journal still holds %q", lines)
	}
	if e.r.Pending() != 1 {
		t.Errorf("Pending = %d, want bob's 1", e.r.Pending())
	}
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.clock.Advance(time.Hour)
	e.drain("bob's reflection")
	for _, q := range e.srv.Requests() {
		if strings.Contains(q.LastUser(), "I'm Ada") {
			t.Fatal("a forgotten turn was reflected")
		}
	}
	if n, err := e.r.Forget(context.Background(), "nobody"); n != 0 || err != nil {
		t.Errorf("Forget of an unknown user = %d, %v", n, err)
	}
	if _, err := e.r.Forget(context.Background(), "../x"); err == nil {
		t.Error("Forget accepted a bad user name")
	}
}

// TestForgetStopsARunningReflection: a forget cancels the user's running
// reflection and returns once it has ended, so nothing of it is written
// after the forget.
func TestForgetStopsARunningReflection(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	arrived, release := e.gateModel("nothing to remember")
	defer close(release)
	e.add(turn("alice", "t1", "I'm Ada"))
	<-arrived
	n, err := e.r.Forget(context.Background(), "alice")
	if err != nil || n != 1 {
		t.Fatalf("Forget during a run = %d, %v; want 1 turn dropped", n, err)
	}
	if e.running("alice") {
		t.Fatal("Forget returned while the run was still going")
	}
	if e.r.Pending() != 0 || e.journalLines("alice") != nil {
		t.Fatalf("after Forget: pending %d, journal %q", e.r.Pending(), e.journalLines("alice"))
	}
	if !strings.Contains(e.logs.String(), "the user's memory was forgotten") {
		t.Errorf("logs:\n%s", e.logs.String())
	}
	e.endWindow()
	if kept := e.r.hasState("alice"); kept || e.clock.Armed() != 0 {
		t.Errorf("after the forgotten run: state kept %v, %d timers armed", kept, e.clock.Armed())
	}
}

// TestForgetWaitsForARunThatIgnoresCancel: a tool that does not heed the
// cancel keeps the run going; Forget waits for it, bounded by its ctx, and
// the write the tool was making is refused by the journal afterwards.
func TestForgetWaitsForARunThatIgnoresCancel(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.stuckWrite()
	e.add(turn("alice", "t1", "I'm Ada"))
	e.waitFor("the write to start", func() bool { return len(e.mem.Calls()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.r.Forget(ctx, "alice"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Forget during a stuck run = %v; want it to wait and time out", err)
	}
	close(e.mem.block)
	e.waitFor("the run to end", func() bool { return !e.running("alice") })
	if v := e.mem.version("alice", "facts/user.md"); v != "" {
		t.Fatalf("the write of a forgotten run was made: %q", v)
	}
	if e.journalLines("alice") != nil || e.r.Pending() != 0 {
		t.Fatalf("after the forgotten run: journal %q, pending %d", e.journalLines("alice"), e.r.Pending())
	}
}

// stuckWrite makes the next run's model call memory_write, which then
// waits, heeding no cancel, until e.mem.block is closed.
func (e *env) stuckWrite() {
	e.mem.block = make(chan struct{})
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_write", `{"path":"facts/user.md","content":"x"}`)))
	e.srv.Enqueue(openaitest.Text("saved"))
}

func (e *env) running(user string) bool {
	busy := false
	e.r.each(func(u *userState) {
		if u.name == user {
			busy = u.busy
		}
	})
	return busy
}

// TestTurnAddedWhileAForgottenRunEnds: a turn added after the forget, while
// the forgotten run still ends, waits for its own idle timer.
func TestTurnAddedWhileAForgottenRunEnds(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 2 })
	e.stuckWrite()
	e.add(turn("alice", "t1", "I'm Ada"))
	e.add(turn("alice", "t2", "I write Go"))
	e.waitFor("the write to start", func() bool { return len(e.mem.Calls()) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // do not wait for the stuck run
	if n, err := e.r.Forget(ctx, "alice"); n != 2 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Forget = %d, %v", n, err)
	}
	e.add(turn("alice", "t3", "new"))
	close(e.mem.block)
	e.settle()
	e.endWindow()
	if e.r.Pending() != 1 || e.clock.Armed() != 1 || len(e.journalLines("alice")) != 1 {
		t.Fatalf("after the forgotten run: pending %d, %d timers, journal %q", e.r.Pending(), e.clock.Armed(), e.journalLines("alice"))
	}
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Text("ok"), true })
	e.clock.Advance(2 * time.Minute)
	e.waitFor("t3's run", func() bool { return e.r.Pending() == 0 })
}

// TestForgetJournalFailure: a journal that cannot be rewritten fails the
// forget, naming the user.
func TestForgetJournalFailure(t *testing.T) {
	e := newEnv(t, nil)
	e.add(turn("alice", "t1", "hi"))
	e.failOp(durable.Remove, errors.New("disk on fire"))
	if _, err := e.r.Forget(context.Background(), "alice"); err == nil || !strings.Contains(err.Error(), "forget the journaled turns of alice") || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Forget = %v", err)
	}
	e.failOp("", nil)
}

// TestForgetAfterClose: turns whose run failed at Close stay journaled, and
// a forget after Close still drops them.
func TestForgetAfterClose(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Error(400, "", "nope"), true })
	e.add(turn("alice", "t1", "hi"))
	if err := e.r.Close(context.Background()); err == nil || e.r.Pending() != 1 {
		t.Fatalf("Close = %v, pending %d", err, e.r.Pending())
	}
	if n, err := e.r.Forget(context.Background(), "alice"); n != 1 || err != nil {
		t.Fatalf("Forget after Close = %d, %v", n, err)
	}
	if e.journalLines("alice") != nil || e.r.Pending() != 0 {
		t.Fatalf("journal %q, pending %d", e.journalLines("alice"), e.r.Pending())
	}
	if n, err := e.r.Forget(context.Background(), "bob"); n != 0 || err != nil {
		t.Fatalf("Forget(bob) after Close = %d, %v", n, err)
	}
}
