package bottest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// Run is an adapter's Run started for one test.
type Run struct {
	// Done receives what Run returned. A test that reads it must send the
	// value back (Done <- err) so that Stop, at the end of the test, finds it.
	Done chan error
	stop func() error
}

// RunOptions says what to check when the test ends.
type RunOptions struct {
	Ready    func() bool // must be false once Run returned
	Logs     *LogBuffer  // shown when the test failed
	Secrets  []string    // must never appear in Logs
	AllowErr bool        // Run may return an error (a test of a fatal fault)
	Timeout  time.Duration
}

// Start runs run(ctx) in the background. When the test ends it stops it
// (cancelling ctx), and fails the test if Run did not return within
// Timeout, returned an error (unless AllowErr), left Ready true, or
// logged a secret; the logs are shown when the test failed.
func Start(t testing.TB, run func(context.Context) error, o RunOptions) *Run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Run{Done: make(chan error, 1)}
	go func() { r.Done <- run(ctx) }()
	var once sync.Once
	var result error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-r.Done:
			case <-time.After(o.Timeout):
				result = errors.New("Run did not return after cancel")
			}
		})
		return result
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil && !o.AllowErr {
			t.Errorf("Run: %v", err)
		}
		if o.Ready != nil && o.Ready() {
			t.Error("Ready after Run returned")
		}
		logs := ""
		if o.Logs != nil {
			logs = o.Logs.String()
		}
		for _, s := range o.Secrets {
			if s != "" && strings.Contains(logs, s) {
				t.Errorf("a secret was logged:\n%s", logs)
			}
		}
		if t.Failed() && logs != "" {
			t.Logf("logs:\n%s", logs)
		}
	})
	return r
}

// Stop cancels Run's context and returns what Run returned (once; later
// calls return the same).
func (r *Run) Stop() error { return r.stop() }

// WaitN calls a fake's Wait method (slacktest's and discordtest's WaitPosts
// and the like) for n records and fails the test if they did not come
// within timeout.
func WaitN[T any](t testing.TB, wait func(n int, timeout time.Duration) ([]T, error), n int, timeout time.Duration) []T {
	t.Helper()
	out, err := wait(n, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WaitFor polls cond until it holds, failing the test after timeout.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
