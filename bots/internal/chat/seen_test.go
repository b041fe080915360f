package chat

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestSeen(t *testing.T) {
	now := time.Now()
	type step struct {
		at   time.Duration
		keys []string
		seen bool
		len  int
	}
	for _, c := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"new and known keys", 10, []step{
			{0, []string{"a", "", "b"}, false, 2},
			{0, []string{"x", "b"}, true, 2}, // x is not remembered from a duplicate
			{0, []string{"x"}, false, 3},
			{0, []string{""}, false, 3},
			{0, []string{"y", "y"}, false, 4},
		}},
		{"oldest dropped first", 2, []step{
			{0, []string{"a"}, false, 1},
			{time.Second, []string{"b"}, false, 2},
			{2 * time.Second, []string{"c"}, false, 2},
			{2 * time.Second, []string{"a"}, false, 2}, // a was dropped (and b now)
			{2 * time.Second, []string{"c"}, true, 2},
		}},
		{"expiry", 10, []step{
			{0, []string{"a"}, false, 1},
			{30 * time.Second, []string{"b"}, false, 2},
			{time.Minute, []string{"a"}, true, 2}, // exactly ttl: still known
			{time.Minute + time.Second, []string{"a"}, false, 2},
			{5 * time.Minute, nil, false, 0},
		}},
		{"max below one", 0, []step{
			{0, []string{"a"}, false, 1},
			{0, []string{"b"}, false, 1},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSeen(c.max, time.Minute)
			for i, st := range c.steps {
				if got := s.SeenOrAdd(now.Add(st.at), st.keys...); got != st.seen {
					t.Errorf("step %d: SeenOrAdd(%q) = %v", i, st.keys, got)
				}
				if s.Len() != st.len {
					t.Errorf("step %d: Len = %d; want %d", i, s.Len(), st.len)
				}
			}
		})
	}
}

func TestSeenBounded(t *testing.T) {
	now := time.Now()
	s := NewSeen(100, time.Minute)
	for i := range 1000 {
		s.SeenOrAdd(now, fmt.Sprint("k", i))
	}
	if s.Len() != 100 || s.SeenOrAdd(now, "k0") || !s.SeenOrAdd(now, "k999") {
		t.Errorf("Len %d after 1000 keys", s.Len())
	}
	if len(s.order)-s.head != 100 || len(s.order) > 300 {
		t.Errorf("order %d head %d", len(s.order), s.head)
	}
	// Concurrent use: exactly one of many callers with the same key wins.
	var wg sync.WaitGroup
	wins := make(chan bool, 50)
	for range 50 {
		wg.Go(func() { wins <- !s.SeenOrAdd(now, "race") })
	}
	wg.Wait()
	close(wins)
	n := 0
	for w := range wins {
		if w {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d winners", n)
	}
}
