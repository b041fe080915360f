package slack

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo/agent/clock"
)

// Limits of the App Home tabs kept current.
const (
	homeEvery   = 5 * time.Second // least time between two refreshes of one person's tab
	homePeople  = 1000            // people kept (those who opened the tab since start); the one seen longest ago goes first
	homeRetries = 3               // 429s in a row before a refresh is given up until the next change
)

// homePerson is one person whose Home tab is kept current: who they are
// and what their tab shows besides their memory (the search, the answer to
// their last button), and when it may be published next.
type homePerson struct {
	key                 string // team/user: only they may press their tab's buttons
	team, user, memUser string
	query               string // the last search ("" none)
	notice              string // the answer to the last button, Markdown
	confirm             string // a forget's confirmation token waiting for Delete or Cancel
	confirmText         string // its question, Markdown

	seen      time.Time // opened or pressed last: the least recent is dropped first
	last      time.Time // the last publish began
	notBefore time.Time // a Retry-After's end
	limited   int       // 429s in a row

	dirty   bool // a publish is wanted
	urgent  bool // the person asked (opened, pressed, searched): no waiting for homeEvery
	busy    bool // a publish runs (run)
	waiting bool // a timer will look again
}

// homeTabs keeps the Home tabs of the people who opened theirs current:
// at most one publish per person at a time and per every (a person's own
// action goes at once), the last change always published, a 429's
// Retry-After honoured (homeRetries in a row give up until the next
// change). It is safe for concurrent use.
type homeTabs struct {
	clock   clock.Clock
	every   time.Duration
	maxWait time.Duration // cap on a Retry-After
	max     int
	log     *slog.Logger
	// publish shows p's tab as it is now; a *slackgo.RateLimitedError
	// is retried after its Retry-After.
	publish func(ctx context.Context, p homePerson) error

	mu     sync.Mutex
	ctx    context.Context // Run's; nil before it
	done   bool            // wait was called: no publish starts any more
	people map[string]*homePerson
	wg     sync.WaitGroup
}

func newHomeTabs(c clock.Clock, log *slog.Logger, publish func(context.Context, homePerson) error) *homeTabs {
	return &homeTabs{clock: clock.Or(c), every: homeEvery, maxWait: maxRetryAfter, max: homePeople, log: log,
		publish: publish, people: map[string]*homePerson{}}
}

// start lets publishes run until ctx ends; wait then waits for them.
func (h *homeTabs) start(ctx context.Context) {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
}

func (h *homeTabs) wait() {
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
	h.wg.Wait()
}

// person is the tab of team/user (memory user memUser), kept from now on;
// change edits it under the lock. The person seen longest ago is dropped
// past max.
func (h *homeTabs) person(team, user, memUser string, change func(p *homePerson)) {
	key := team + "/" + user
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.people[key]
	if p == nil {
		if len(h.people) >= h.max {
			var oldest *homePerson
			for _, q := range h.people {
				if oldest == nil || q.seen.Before(oldest.seen) {
					oldest = q
				}
			}
			delete(h.people, oldest.key) // a publish running for it finds it gone
		}
		p = &homePerson{key: key, team: team, user: user}
		h.people[key] = p
	}
	p.memUser, p.seen = memUser, h.clock.Now()
	if change != nil {
		change(p)
	}
	p.dirty, p.urgent = true, true
	h.scheduleLocked(p)
}

// changed re-publishes the tabs of memory user memUser (the app says their
// memory changed), within every of the last publish.
func (h *homeTabs) changed(memUser string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.people {
		if p.memUser == memUser {
			p.dirty = true
			h.scheduleLocked(p)
		}
	}
}

// waitLocked is how long p's next publish must wait.
func (h *homeTabs) waitLocked(p *homePerson) time.Duration {
	next := p.notBefore
	if !p.urgent && p.last.Add(h.every).After(next) {
		next = p.last.Add(h.every)
	}
	return next.Sub(h.clock.Now())
}

// scheduleLocked starts p's publish now, or a timer for when it may run.
func (h *homeTabs) scheduleLocked(p *homePerson) {
	if h.ctx == nil || h.done || h.ctx.Err() != nil || p.busy || !p.dirty {
		return
	}
	d := h.waitLocked(p)
	if d <= 0 {
		p.busy = true
		h.wg.Add(1)
		go h.run(p)
		return
	}
	if p.waiting {
		return
	}
	p.waiting = true
	t := h.clock.NewTimer(d)
	ctx := h.ctx
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		p.waiting = false
		h.scheduleLocked(p)
	}()
}

// run publishes p's tab for as long as a change is waiting and may go.
func (h *homeTabs) run(p *homePerson) {
	defer h.wg.Done()
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if !p.dirty || h.ctx.Err() != nil || h.people[p.key] != p {
			p.busy = false
			return
		}
		if h.waitLocked(p) > 0 {
			p.busy = false
			h.scheduleLocked(p)
			return
		}
		urgent, last := p.urgent, p.last
		p.dirty, p.urgent, p.last = false, false, h.clock.Now()
		snap, ctx := *p, h.ctx
		h.mu.Unlock()
		err := h.publish(ctx, snap)
		h.mu.Lock()
		rl, limited := errors.AsType[*slackgo.RateLimitedError](err)
		switch {
		case !limited:
			p.limited = 0
		case p.limited < homeRetries:
			p.limited++
			p.dirty = true // the change is published after the wait
			p.urgent = p.urgent || urgent
			p.last = last // refused: nothing was shown, and homeEvery counts from the last publish
			p.notBefore = h.clock.Now().Add(min(max(rl.RetryAfter, time.Second), h.maxWait))
		default:
			p.limited = 0
			h.log.Warn("slack: views.publish is rate limited; the Home tab is refreshed at the next change", "user", p.user, "tries", homeRetries+1)
		}
	}
}
