package reflector

import (
	"container/heap"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
)

// What a user waiting to be reflected holds is data, not a goroutine or a
// file: 10,000 people each waiting for their idle timer held 10,000
// goroutines (one loop each) and as many open journal files, and when
// their timers fired, 10,000 runs at once. So the idle timers of every user
// share one goroutine and one clock timer (timers), runs share a bounded
// pool of goroutines (runPool), and a user's journal file is closed once
// what was written to it is durable and no run is writing it (settle).

// DefaultMaxRunning is Config.MaxRunning's default: reflections running
// at once, across users.
const DefaultMaxRunning = 8

// timers fires the users' idle and retry timers: a heap of the armed
// users by deadline, one clock timer for the earliest, one goroutine
// waiting on it that has each due user's loop fire its timer.
type timers struct {
	clock clock.Clock
	fire  func(u *userState) // runs u's timer if it is still due

	mu   sync.Mutex
	h    userHeap
	t    clock.Timer // armed for at, or nil
	at   time.Time
	wake chan struct{} // capacity 1: t changed
	quit chan struct{}
	done chan struct{}
}

func newTimers(c clock.Clock, fire func(*userState)) *timers {
	tm := &timers{clock: c, fire: fire, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go tm.loop()
	return tm
}

// move arms u for deadline d, armed or not: a turn that only pushes an
// armed user's idle deadline later (every message of a conversation)
// moves it in the heap and wakes no one (see rearmLocked).
func (tm *timers) move(u *userState, d time.Time) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	u.deadline = d
	if u.hidx >= 0 {
		heap.Fix(&tm.h, u.hidx)
	} else {
		heap.Push(&tm.h, u)
	}
	tm.rearmLocked()
}

// remove disarms u (armed or not).
func (tm *timers) remove(u *userState) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if u.hidx >= 0 {
		heap.Remove(&tm.h, u.hidx)
	}
	tm.rearmLocked()
}

// rearmLocked makes the clock timer the earliest deadline's (none when
// nobody is armed). tm.mu held.
func (tm *timers) rearmLocked() {
	if len(tm.h) == 0 {
		if tm.t != nil {
			tm.t.Stop()
			tm.t = nil
			tm.poke()
		}
		return
	}
	next := tm.h[0].deadline
	if tm.t != nil && !tm.at.After(next) {
		// The armed timer fires no later than the earliest deadline: it
		// stays, and fireDue arms the next one when it fires early. A
		// deadline pushed later (each turn re-arms its user's idle timer)
		// so costs no new timer and no wake-up of the loop.
		return
	}
	if tm.t != nil {
		tm.t.Stop()
	}
	tm.t, tm.at = tm.clock.NewTimer(next.Sub(tm.clock.Now())), next
	tm.poke()
}

func (tm *timers) poke() {
	select {
	case tm.wake <- struct{}{}:
	default:
	}
}

func (tm *timers) loop() {
	defer close(tm.done)
	for {
		tm.mu.Lock()
		t := tm.t
		tm.mu.Unlock()
		var fired <-chan time.Time
		if t != nil {
			fired = t.C()
		}
		select {
		case <-fired:
			tm.fireDue(t)
		case <-tm.wake:
		case <-tm.quit:
			return
		}
	}
}

// fireDue takes the users whose deadline passed off the heap, arms the
// clock timer for the next one, and has each fire.
func (tm *timers) fireDue(fired clock.Timer) {
	tm.mu.Lock()
	now := tm.clock.Now()
	var due []*userState
	for len(tm.h) > 0 && !tm.h[0].deadline.After(now) {
		due = append(due, heap.Pop(&tm.h).(*userState))
	}
	if tm.t == fired {
		tm.t = nil
	}
	tm.rearmLocked()
	tm.mu.Unlock()
	for _, u := range due {
		tm.fire(u)
	}
}

// stop ends the goroutine and the clock timer; armed users stay armed
// (nothing fires them any more).
func (tm *timers) stop() {
	select {
	case <-tm.quit:
		return
	default:
	}
	close(tm.quit)
	<-tm.done
	tm.mu.Lock()
	if tm.t != nil {
		tm.t.Stop()
		tm.t = nil
	}
	tm.mu.Unlock()
}

// userHeap orders armed users by deadline; each knows its index (hidx,
// -1 when not in the heap).
type userHeap []*userState

func (h userHeap) Len() int           { return len(h) }
func (h userHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h userHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *userHeap) Push(x any) {
	u := x.(*userState)
	u.hidx = len(*h)
	*h = append(*h, u)
}
func (h *userHeap) Pop() any {
	old := *h
	u := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	u.hidx = -1
	return u
}

// runPool runs the reflections, at most max at once: a run waiting for a
// slot is a queued function, not a goroutine.
type runPool struct {
	mu      sync.Mutex
	max     int
	running int
	queue   []func()
}

func (p *runPool) submit(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running < p.max {
		p.running++
		go p.work(f)
		return
	}
	p.queue = append(p.queue, f)
}

// work runs f, then the queued runs, until none is left.
func (p *runPool) work(f func()) {
	for f != nil {
		f()
		p.mu.Lock()
		f = nil
		if len(p.queue) > 0 {
			f = p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
		} else {
			p.running--
			p.queue = nil // let the array go
		}
		p.mu.Unlock()
	}
}
