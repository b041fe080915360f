package reflector

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

func TestForgetDropsPendingTurns(t *testing.T) {
	e := newEnv(t, nil)
	e.add(turn("alice", "t1", "I'm Ada"))
	e.add(turn("alice", "t2", "I live in Paris"))
	e.add(turn("bob", "t3", "I'm Bob"))
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
	waitFor(t, "bob's reflection", func() bool { return e.r.Pending() == 0 })
	e.settle()
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

func TestForgetWaitsForARunningReflection(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	_, release := e.gateModel("nothing to remember")
	e.add(turn("alice", "t1", "I'm Ada"))
	waitFor(t, "the run to start", func() bool { return e.running("alice") })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.r.Forget(ctx, "alice"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Forget during a run = %v; want it to wait and time out", err)
	}
	done := make(chan error, 1)
	go func() { _, err := e.r.Forget(context.Background(), "alice"); done <- err }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func (e *env) running(user string) bool {
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	u := e.r.users[user]
	return u != nil && u.busy
}
