package wiring

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// One front end failing stops the others: they see their context end,
// finish, and RunFrontends returns the failure named by its front end;
// stopping was called before the others were let go.
func TestRunFrontendsFirstFailureStopsTheOthers(t *testing.T) {
	defer goleak.VerifyNone(t)
	var stops atomic.Int32
	boom := errors.New("socket gone")
	finished := make(chan string, 2)
	waiter := func(name string) Frontend {
		return Frontend{Name: name, Run: func(ctx context.Context) error {
			<-ctx.Done()
			if stops.Load() == 0 {
				t.Errorf("%s stopped before the grace started", name)
			}
			finished <- name
			return nil
		}}
	}
	err := RunFrontends(context.Background(), func() { stops.Add(1) },
		waiter("slack"),
		Frontend{Name: "discord", Run: func(context.Context) error { return boom }},
		waiter("console"))
	if !errors.Is(err, boom) || err.Error() != "discord: socket gone" {
		t.Fatalf("RunFrontends = %v; want the failure named by its front end", err)
	}
	if len(finished) != 2 {
		t.Errorf("%d of 2 front ends finished before RunFrontends returned", len(finished))
	}
	if stops.Load() == 0 {
		t.Error("stopping was never called")
	}
}

// Only the first failure is returned; ctx ending stops every front end,
// and the grace starts once they have returned.
func TestRunFrontendsCancelledAndSeveralFailures(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stops atomic.Int32
	running := make(chan struct{})
	first := errors.New("first")
	err := RunFrontends(ctx, func() { stops.Add(1) },
		Frontend{Name: "a", Run: func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return first
		}},
		Frontend{Name: "b", Run: func(ctx context.Context) error {
			<-running
			cancel()
			<-ctx.Done()
			return nil
		}})
	if !errors.Is(err, first) || err.Error() != "a: first" {
		t.Fatalf("RunFrontends = %v", err)
	}
	if stops.Load() < 1 {
		t.Error("stopping was never called")
	}

	stops.Store(0)
	if err := RunFrontends(context.Background(), func() { stops.Add(1) },
		Frontend{Name: "a", Run: func(context.Context) error { return nil }}); err != nil {
		t.Fatalf("a front end returning nil: %v", err)
	}
	if stops.Load() != 1 {
		t.Errorf("stopping called %d times after every front end returned by itself; want 1", stops.Load())
	}
	if err := RunFrontends(context.Background(), func() {}); err != nil {
		t.Fatalf("no front ends: %v", err)
	}
}

// A failure that names its front end already is not named twice.
func TestRunFrontendsNamesOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	err := RunFrontends(context.Background(), func() {},
		Frontend{Name: "discord", Run: func(context.Context) error { return errors.New("discord: cannot check DISCORD_BOT_TOKEN") }})
	if err == nil || err.Error() != "discord: cannot check DISCORD_BOT_TOKEN" {
		t.Fatalf("RunFrontends = %v", err)
	}
}
