package slack

import (
	"sync"
	"time"
)

// seenSet remembers keys (event ids, channel+ts, client_msg_id) for a
// while, so a retried or replayed event is answered once. Memory is
// bounded: at most max keys, each kept at most ttl, oldest dropped first.
type seenSet struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	at    map[string]time.Time
	order []string // insertion order; order[head:] are live
	head  int
}

func newSeenSet(max int, ttl time.Duration) *seenSet {
	return &seenSet{max: max, ttl: ttl, at: make(map[string]time.Time, max)}
}

// seenOrAdd reports whether any of keys (empty ones ignored) was seen
// within ttl; if none was, it remembers them all.
func (s *seenSet) seenOrAdd(now time.Time, keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	for _, k := range keys {
		if _, ok := s.at[k]; ok && k != "" {
			return true
		}
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if len(s.at) >= s.max {
			s.dropOldestLocked()
		}
		s.at[k] = now
		s.order = append(s.order, k)
	}
	return false
}

func (s *seenSet) expireLocked(now time.Time) {
	for s.head < len(s.order) && now.Sub(s.at[s.order[s.head]]) > s.ttl {
		s.dropOldestLocked()
	}
}

func (s *seenSet) dropOldestLocked() {
	delete(s.at, s.order[s.head])
	s.order[s.head] = ""
	s.head++
	if s.head > len(s.order)/2 && s.head > 64 {
		s.order = append([]string(nil), s.order[s.head:]...)
		s.head = 0
	}
}

// len is the number of keys remembered.
func (s *seenSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}
