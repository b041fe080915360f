package thread

import (
	"sync"
	"time"
)

// NameCache keeps display names (as a platform's user lookup gave them)
// for ttl, at most max of them (it starts over when full). It is safe for
// concurrent use.
type NameCache struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	names map[string]cachedName
}

type cachedName struct {
	name string
	at   time.Time
}

// NewNameCache returns a NameCache of at most n names (at least 1),
// each kept for ttl.
func NewNameCache(n int, ttl time.Duration) *NameCache {
	return &NameCache{max: max(n, 1), ttl: ttl, names: map[string]cachedName{}}
}

// Get returns the name kept for id, if it was put within ttl before now.
// A name kept as "" (the user is unknown) is found too.
func (c *NameCache) Get(id string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.names[id]
	if !ok || now.Sub(n.at) > c.ttl {
		return "", false
	}
	return n.name, true
}

// Put keeps name for id from now.
func (c *NameCache) Put(id, name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.names[id]; !ok && len(c.names) >= c.max {
		clear(c.names)
	}
	c.names[id] = cachedName{name: name, at: now}
}
