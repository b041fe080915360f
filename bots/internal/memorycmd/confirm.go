package memorycmd

import (
	"crypto/rand"
	"sync"
	"time"
)

// Pending is a /memory forget waiting for its confirmation button.
type Pending struct {
	User  string // memory user
	Asker string // platform user id allowed to confirm
	Path  string // "" = all
}

// ConfirmResult is what Confirms.Take found.
type ConfirmResult int

// Results of Confirms.Take.
const (
	ConfirmOK        ConfirmResult = iota // the asker's own, live token: taken
	ConfirmUnknown                        // no such token, expired or used
	ConfirmWrongUser                      // someone else's token: left in place
)

// Confirms keeps pending confirmations under random single-use tokens (32
// hex digits), at most max of them (the one closest to expiry goes
// first), each for ttl. It is safe for concurrent use.
type Confirms struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	m   map[string]pendingEntry
}

type pendingEntry struct {
	Pending
	expires time.Time
}

// NewConfirms returns a Confirms of at most n tokens (at least 1), each
// valid for ttl.
func NewConfirms(n int, ttl time.Duration) *Confirms {
	return &Confirms{max: max(n, 1), ttl: ttl, m: map[string]pendingEntry{}}
}

// TTL is how long a token stays valid.
func (c *Confirms) TTL() time.Duration { return c.ttl }

// Add keeps p from now and returns its token.
func (c *Confirms) Add(p Pending, now time.Time) string {
	token := rand.Text() // 128 bits, unguessable
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.m {
		if now.After(v.expires) {
			delete(c.m, k)
		}
	}
	if len(c.m) >= c.max { // drop the one closest to expiry
		oldest := ""
		for k, v := range c.m {
			if oldest == "" || v.expires.Before(c.m[oldest].expires) {
				oldest = k
			}
		}
		delete(c.m, oldest)
	}
	c.m[token] = pendingEntry{Pending: p, expires: now.Add(c.ttl)}
	return token
}

// Take returns and removes the confirmation of token when asker may use
// it (ConfirmOK). A token of someone else's is left in place
// (ConfirmWrongUser); an unknown or expired one gives ConfirmUnknown.
func (c *Confirms) Take(token, asker string, now time.Time) (Pending, ConfirmResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[token]
	switch {
	case !ok || now.After(p.expires):
		delete(c.m, token)
		return Pending{}, ConfirmUnknown
	case p.Asker != asker:
		return Pending{}, ConfirmWrongUser
	}
	delete(c.m, token)
	return p.Pending, ConfirmOK
}

// Len is the number of tokens kept (expired ones included until the next
// Add).
func (c *Confirms) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
