// Package fakewait is how the fake platforms (slacktest, discordtest) let
// a test wait for something they record, without polling: every recorded
// change wakes the waiters, which check their condition again.
package fakewait

import (
	"sync"
	"time"
)

// Changes broadcasts "something was recorded". The zero value is ready.
// It is guarded by the fake's own mutex, passed to Wait.
type Changes struct {
	ch chan struct{}
}

// NotifyLocked wakes every waiter; the fake's mutex must be held.
func (c *Changes) NotifyLocked() {
	if c.ch != nil {
		close(c.ch)
	}
	c.ch = make(chan struct{})
}

// Next is closed at the next change, for a waiter that checks its
// condition itself (without the fake's mutex) after taking it.
func (c *Changes) Next(mu *sync.Mutex) <-chan struct{} {
	mu.Lock()
	defer mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// Wait blocks until cond (called with mu held) holds or timeout passes,
// and reports whether it held.
func (c *Changes) Wait(mu *sync.Mutex, timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		mu.Lock()
		ok := cond()
		if c.ch == nil {
			c.ch = make(chan struct{})
		}
		ch := c.ch
		mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			mu.Lock()
			defer mu.Unlock()
			return cond()
		}
	}
}
