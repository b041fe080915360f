package clocktest

import (
	"slices"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
)

// Fake is a clock.Clock whose time moves only by Advance.
type Fake struct {
	mu      sync.Mutex
	changed *sync.Cond
	now     time.Time
	timers  []*timer
	leaky   bool
}

var _ clock.Clock = (*Fake)(nil)

// New is a fake clock at t.
func New(t time.Time) *Fake {
	f := &Fake{now: t}
	f.changed = sync.NewCond(&f.mu)
	return f
}

// SetLeaky makes Stop report failure and leave the timer to fire, as a
// real timer whose firing is already on its way would.
func (f *Fake) SetLeaky(leaky bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaky = leaky
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

type timer struct {
	f       *Fake
	at      time.Time
	c       chan time.Time
	stopped bool
	fired   bool
}

// NewTimer arms a timer that fires when Advance passes now+d.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &timer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	f.timers = append(f.timers, t)
	f.changed.Broadcast()
	return t
}

func (t *timer) C() <-chan time.Time { return t.c }

func (t *timer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.f.leaky || t.fired || t.stopped {
		return false
	}
	t.stopped = true
	t.f.changed.Broadcast()
	return true
}

// Advance moves the time by d and fires, in time order, the timers it
// passed.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	var due []*timer
	for _, t := range f.timers {
		if !t.fired && !t.stopped && !t.at.After(f.now) {
			due = append(due, t)
		}
	}
	slices.SortStableFunc(due, func(a, b *timer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.fired = true
		t.c <- f.now // buffered and fired once: never blocks
	}
	f.timers = slices.DeleteFunc(f.timers, func(t *timer) bool { return t.fired || t.stopped })
	f.changed.Broadcast()
}

// Armed counts the timers that would still fire.
func (f *Fake) Armed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.armed()
}

func (f *Fake) armed() int {
	n := 0
	for _, t := range f.timers {
		if !t.fired && !t.stopped {
			n++
		}
	}
	return n
}

// WaitArmed blocks until exactly n timers are armed: the code under test
// is then waiting on them.
func (f *Fake) WaitArmed(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.armed() != n {
		f.changed.Wait()
	}
}
