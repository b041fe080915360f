package fakewait

import (
	"sync"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	var (
		mu sync.Mutex
		c  Changes
		n  int
	)
	done := make(chan bool)
	go func() { done <- c.Wait(&mu, time.Minute, func() bool { return n == 2 }) }()
	for range 2 {
		mu.Lock()
		n++
		c.NotifyLocked()
		mu.Unlock()
	}
	if !<-done {
		t.Fatal("Wait did not see the change")
	}
	// A condition that never holds times out and says so.
	if c.Wait(&mu, time.Millisecond, func() bool { return n == 3 }) {
		t.Fatal("Wait reported a condition that does not hold")
	}
	// Already true: no wait at all, even with a zero timeout.
	var fresh Changes
	if !fresh.Wait(&mu, 0, func() bool { return true }) {
		t.Fatal("Wait missed a condition that held")
	}
}

func TestNext(t *testing.T) {
	var (
		mu sync.Mutex
		c  Changes
	)
	next := c.Next(&mu)
	select {
	case <-next:
		t.Fatal("closed before a change")
	default:
	}
	mu.Lock()
	c.NotifyLocked()
	mu.Unlock()
	<-next
	if c.Next(&mu) == next {
		t.Fatal("Next after a change is the spent channel")
	}
}
