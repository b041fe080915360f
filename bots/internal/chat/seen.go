package chat

import (
	"sync"
	"time"
)

// Seen remembers keys (event ids, message ids, client message ids) for a
// while, so a retried or replayed event is answered once. Memory is
// bounded: at most max keys, each kept at most ttl, oldest dropped first.
// It is safe for concurrent use.
type Seen struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	at    map[string]time.Time
	order []string // insertion order; order[head:] are live
	head  int
}

// NewSeen returns a Seen of at most max keys (at least 1), each kept for
// ttl.
func NewSeen(max int, ttl time.Duration) *Seen {
	n := 1
	if max > n {
		n = max
	}
	return &Seen{max: n, ttl: ttl, at: make(map[string]time.Time)}
}

// SeenOrAdd reports whether any of keys (empty ones ignored) was seen
// within ttl before now; if none was, it remembers them all.
func (s *Seen) SeenOrAdd(now time.Time, keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	for _, k := range keys {
		if _, ok := s.at[k]; ok && k != "" {
			return true
		}
	}
	for _, k := range keys {
		if _, ok := s.at[k]; ok || k == "" {
			continue // a key given twice is remembered once
		}
		if len(s.at) >= s.max {
			s.dropOldestLocked()
		}
		s.at[k] = now
		s.order = append(s.order, k)
	}
	return false
}

func (s *Seen) expireLocked(now time.Time) {
	for s.head < len(s.order) && now.Sub(s.at[s.order[s.head]]) > s.ttl {
		s.dropOldestLocked()
	}
}

func (s *Seen) dropOldestLocked() {
	delete(s.at, s.order[s.head])
	s.order[s.head] = ""
	s.head++
	if s.head > len(s.order)/2 && s.head > 64 {
		s.order = append([]string(nil), s.order[s.head:]...)
		s.head = 0
	}
}

// Len is the number of keys remembered.
func (s *Seen) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}
