package reflector

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"

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

// countingClock counts the timers made on a fake clock.
type countingClock struct {
	*clocktest.Fake
	made atomic.Int64
}

func (c *countingClock) NewTimer(d time.Duration) clock.Timer {
	c.made.Add(1)
	return c.Fake.NewTimer(d)
}

// Each turn pushes its person's idle deadline later: the deadline moves in
// the heap, and the clock timer armed for the first one stays (no new
// timer, no wake-up of the timers' loop per turn). When it fires early,
// nothing is due yet and the next one is armed; the person fires once, at
// the last deadline.
func TestIdleDeadlineMovesWithoutANewTimer(t *testing.T) {
	c := &countingClock{Fake: clocktest.New(time.Unix(1e9, 0))}
	fired := make(chan *userState, 10)
	tm := newTimers(c, func(u *userState) { fired <- u })
	defer tm.stop()
	u := &userState{name: "alice", hidx: -1}
	start := c.Now()
	for range 50 { // a turn a second: the first deadline (60 s) does not pass
		tm.move(u, c.Now().Add(time.Minute))
		c.Advance(time.Second)
	}
	if n := c.made.Load(); n != 1 {
		t.Errorf("50 turns made %d clock timers, want 1", n)
	}
	// The first deadline passes: the timer fires early, nothing is due,
	// and the last deadline is armed.
	c.Advance(10 * time.Second)
	c.WaitArmed(1)
	if n := c.made.Load(); n != 2 {
		t.Errorf("after the early firing: %d clock timers made, want 2", n)
	}
	if len(fired) != 0 {
		t.Fatal("fired before its last deadline")
	}
	c.Advance(start.Add(49*time.Second + time.Minute).Sub(c.Now()))
	if got := <-fired; got != u {
		t.Fatalf("fired %v", got)
	}
	// A deadline earlier than the armed timer's replaces it.
	v := &userState{name: "bob", hidx: -1}
	tm.move(u, c.Now().Add(time.Hour))
	tm.move(v, c.Now().Add(time.Second))
	c.Advance(time.Second)
	if got := <-fired; got != v {
		t.Fatalf("fired %v, want bob", got)
	}
}
