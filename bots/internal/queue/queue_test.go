package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gatedTask is a task that reports its start and waits for release.
type gatedTask struct {
	name    string
	release chan struct{}
}

// recorder collects the names of started tasks, in order.
type recorder struct {
	mu      sync.Mutex
	started []string
	ch      chan string
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 1000)} }

func (r *recorder) task(name string, release chan struct{}) func() {
	return func() {
		r.mu.Lock()
		r.started = append(r.started, name)
		r.mu.Unlock()
		r.ch <- name
		if release != nil {
			<-release
		}
	}
}

// next waits for the next task to start.
func (r *recorder) next(t *testing.T) string {
	t.Helper()
	select {
	case n := <-r.ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no task started")
		return ""
	}
}

func (q *Queue) counts() (running, ready, lanes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running, len(q.ready), len(q.lanes)
}

func TestQueueSubmitLimits(t *testing.T) {
	for _, c := range []struct {
		name        string
		maxInFlight int
		perKey      int
		keys        []string
		accepted    []bool
		running     int
	}{
		{"per key", 4, 2, []string{"a", "a", "a", "b"}, []bool{true, true, false, true}, 2},
		{"one slot", 1, 3, []string{"a", "b", "c", "a"}, []bool{true, true, true, true}, 1},
		{"zero limits mean one", 0, 0, []string{"a", "a", "b"}, []bool{true, false, true}, 1},
		{"empty key", 2, 1, []string{"", "", "x"}, []bool{true, false, true}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := New(c.maxInFlight, c.perKey)
			release := make(chan struct{})
			rec := newRecorder()
			n := 0
			for i, k := range c.keys {
				if got := q.Submit(k, rec.task(fmt.Sprint(i), release)); got != c.accepted[i] {
					t.Errorf("Submit %d (%q) = %v", i, k, got)
				}
				if c.accepted[i] {
					n++
				}
			}
			if q.Len() != n {
				t.Errorf("Len %d; want %d", q.Len(), n)
			}
			if running, _, _ := q.counts(); running != c.running {
				t.Errorf("running %d; want %d", running, c.running)
			}
			close(release)
			if t.Failed() {
				t.FailNow() // the queue's books are wrong: Close might never return
			}
			if err := q.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if q.Len() != 0 || len(rec.started) != n {
				t.Errorf("after Close: Len %d, %d started of %d", q.Len(), len(rec.started), n)
			}
			if running, ready, lanes := q.counts(); running != 0 || ready != 0 || lanes != 0 {
				t.Errorf("left over: running %d ready %d lanes %d", running, ready, lanes)
			}
		})
	}
}

func TestQueueOrderPerKey(t *testing.T) {
	q := New(8, 5)
	rec := newRecorder()
	gates := make([]chan struct{}, 5)
	for i := range gates {
		gates[i] = make(chan struct{})
		if !q.Submit("k", rec.task(fmt.Sprint(i), gates[i])) {
			t.Fatal("refused")
		}
	}
	// One at a time, in order: the next starts only when the one before
	// has finished.
	for i := range gates {
		if got := rec.next(t); got != fmt.Sprint(i) {
			t.Fatalf("started %s; want %d", got, i)
		}
		if running, _, _ := q.counts(); running != 1 {
			t.Fatalf("%d running for one key", running)
		}
		if q.Len() != 5-i {
			t.Errorf("Len %d", q.Len())
		}
		close(gates[i])
	}
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A full key takes tasks again once they are done.
	q2 := New(1, 1)
	done := make(chan struct{})
	q2.Submit("k", func() { close(done) })
	<-done
	if err := q2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestQueueConcurrencyAndFairness(t *testing.T) {
	q := New(2, 3)
	rec := newRecorder()
	gate := map[string]chan struct{}{}
	submit := func(key, name string) {
		gate[name] = make(chan struct{})
		if !q.Submit(key, rec.task(name, gate[name])) {
			t.Fatalf("%s refused", name)
		}
	}
	submit("a", "a1")
	submit("b", "b1")
	submit("c", "c1") // waits for a slot
	submit("a", "a2") // waits behind a1
	submit("d", "d1") // waits for a slot, after c
	first := map[string]bool{rec.next(t): true, rec.next(t): true}
	if !first["a1"] || !first["b1"] {
		t.Fatalf("started %v", first)
	}
	if running, ready, lanes := q.counts(); running != 2 || ready != 2 || lanes != 4 || q.Len() != 5 {
		t.Fatalf("running %d ready %d lanes %d len %d", running, ready, lanes, q.Len())
	}
	// a1 ends: c (ready first) starts, a goes to the end of the line.
	close(gate["a1"])
	if got := rec.next(t); got != "c1" {
		t.Fatalf("started %s; want c1", got)
	}
	close(gate["b1"])
	if got := rec.next(t); got != "d1" {
		t.Fatalf("started %s; want d1", got)
	}
	close(gate["c1"])
	if got := rec.next(t); got != "a2" {
		t.Fatalf("started %s; want a2", got)
	}
	close(gate["d1"])
	close(gate["a2"])
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestQueueClose(t *testing.T) {
	for _, c := range []struct {
		name    string
		tasks   int
		cancel  bool // Close's context ends before the tasks do
		wantErr error
	}{
		{"idle", 0, false, nil},
		{"waits for tasks", 3, false, nil},
		{"gives up with its context", 2, true, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := New(1, 10)
			rec := newRecorder()
			release := make(chan struct{})
			for i := range c.tasks {
				q.Submit("k", rec.task(fmt.Sprint(i), release))
			}
			if c.tasks > 0 {
				rec.next(t)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if c.cancel {
				// Close gives up at once when its context has ended; the
				// tasks still run (the second one starts after Close
				// began), and a second Close waits for them.
				cancel()
				if err := q.Close(ctx); err != c.wantErr {
					t.Errorf("Close = %v; want %v", err, c.wantErr)
				}
				if q.Len() != c.tasks {
					t.Errorf("Len %d", q.Len())
				}
				close(release)
				if err := q.Close(t.Context()); err != nil {
					t.Error(err)
				}
			} else {
				closed := make(chan error, 1)
				go func() { closed <- q.Close(ctx) }()
				close(release)
				if err := <-closed; err != nil {
					t.Errorf("Close = %v", err)
				}
			}
			if q.Len() != 0 || len(rec.started) != c.tasks {
				t.Errorf("Len %d, started %d", q.Len(), len(rec.started))
			}
			if q.Submit("k", func() { t.Error("ran after Close") }) {
				t.Error("accepted after Close")
			}
			if err := q.Close(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
}
