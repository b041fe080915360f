package access

import (
	"sync"
	"time"
)

// limiter remembers when each key was last let through, for every, in
// bounded memory: at most max keys, the oldest forgotten first. Safe for
// concurrent use.
type limiter struct {
	mu    sync.Mutex
	max   int
	every time.Duration
	last  map[string]time.Time
	order []told // in the order given: every entry lasts the same time
}

type told struct {
	key string
	at  time.Time
}

func newLimiter(max int, every time.Duration) *limiter {
	return &limiter{max: max, every: every, last: map[string]time.Time{}}
}

// take reports whether key may be answered at now (not answered within
// every), and if so records it.
func (l *limiter) take(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Forget what is over, oldest first; and the oldest when full.
	for len(l.order) > 0 && (now.Sub(l.order[0].at) >= l.every || len(l.last) >= l.max && l.order[0].key != key) {
		o := l.order[0]
		l.order = l.order[1:]
		if at, ok := l.last[o.key]; ok && at.Equal(o.at) {
			delete(l.last, o.key)
		}
	}
	if at, ok := l.last[key]; ok && now.Sub(at) < l.every {
		return false
	}
	l.last[key] = now
	l.order = append(l.order, told{key, now})
	return true
}
