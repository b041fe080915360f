package reflector

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(entries) - 1
}

// People waiting for their idle timer hold no goroutine and, once their
// turns are durable, no open file: 200 of them held 200 goroutines (a loop
// each) and 200 journal files. Their timers share one clock timer.
func TestWaitingPeopleHoldNoGoroutineNorFile(t *testing.T) {
	e := newEnv(t, nil)
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	for i := range 200 {
		e.add(turn(fmt.Sprintf("person-%03d", i), "t1", "hello"))
	}
	e.r.j.flushAll() // what the flusher does at the end of the window
	if n := runtime.NumGoroutine(); n > goroutines+2 {
		t.Errorf("200 people waiting: %d goroutines, %d before", n, goroutines)
	}
	if n := openFDs(t); n > fds+2 {
		t.Errorf("200 people waiting: %d open files, %d before", n, fds)
	}
	if n := e.r.Pending(); n != 200 {
		t.Fatalf("pending %d", n)
	}
	if n := e.clock.Armed(); n != 2 { // the idle timers' one, and the window's
		t.Errorf("%d timers armed", n)
	}
	// The turns are journaled, and reflected when the timers fire.
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Text("nothing to remember"), true })
	e.clock.Advance(2 * time.Minute)
	e.drain("every person reflected")
	e.r.j.mu.Lock()
	open := len(e.r.j.files)
	e.r.j.mu.Unlock()
	if open != 0 {
		t.Errorf("after the reflections: %d journal files open", open)
	}
}

// At most Config.MaxRunning reflections run at once, whatever the number
// of people whose timers fired together; the others wait for a slot
// (without a goroutine) and all are reflected.
func TestRunsAreBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxRunning = 2 })
	var (
		mu       sync.Mutex
		inFlight int
		most     int
		arrived  = make(chan struct{}, 100)
		gate     = make(chan struct{})
	)
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		arrived <- struct{}{}
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return openaitest.Text("nothing to remember"), true
	})
	const people = 8
	for i := range people {
		e.add(turn(fmt.Sprintf("person-%d", i), "t1", "hello"))
	}
	e.clock.Advance(2 * time.Minute)
	for range people {
		<-arrived // a run reached the model
		gate <- struct{}{}
	}
	e.drain("every person reflected")
	if most > 2 {
		t.Errorf("%d reflections at the model at once, MaxRunning 2", most)
	}
}

// When the flusher falls behind (a slow disk: here its window never
// ends), at most maxOpenJournals files wait open for it: past that, the
// operation that wrote a file fsyncs and closes it.
func TestOpenJournalsBoundedWhenTheFlusherLags(t *testing.T) {
	e := newEnv(t, nil)
	fds := openFDs(t)
	for i := range 3 * maxOpenJournals {
		e.add(turn(fmt.Sprintf("person-%03d", i), "t1", "hello"))
	}
	e.r.j.mu.Lock()
	open, dirty := len(e.r.j.files), len(e.r.j.dirty)
	e.r.j.mu.Unlock()
	if open > maxOpenJournals+1 || dirty > maxOpenJournals+1 {
		t.Errorf("%d journal files open, %d waiting for an fsync; at most %d should wait", open, dirty, maxOpenJournals)
	}
	if n := openFDs(t); n > fds+maxOpenJournals+2 {
		t.Errorf("%d open files, %d before", n, fds)
	}
	if n := e.r.Pending(); n != 3*maxOpenJournals {
		t.Errorf("pending %d", n)
	}
}
