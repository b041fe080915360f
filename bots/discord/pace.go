package discord

import (
	"context"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
)

// Discord takes editLimit message edits per editWindow in a channel.
const (
	editLimit  = 5
	editWindow = 5 * time.Second
)

// editPacer keeps the bot's message edits within Discord's limit per
// channel by itself: an edit past it waits for the window to move on, so
// a streamed reply's final edit, landing right after an interval edit, is
// held back here rather than by discordgo's rate limiter (and every reply
// streaming in one channel shares the channel's edits). An edit counts
// from when it is asked until its answer came back, whatever the answer:
// Discord saw it by then, so the next edit's window starts no earlier.
type editPacer struct {
	clock  clock.Clock
	limit  int
	window time.Duration

	mu      sync.Mutex
	edits   map[string][]*paced // per channel, oldest first; dropped once out of the window
	changed chan struct{}       // closed and replaced when an edit ends
}

// paced is one edit: under way (at unset) or ended at at.
type paced struct {
	at    time.Time
	ended bool
}

func newEditPacer(c clock.Clock, limit int, window time.Duration) *editPacer {
	return &editPacer{clock: clock.Or(c), limit: limit, window: window, edits: map[string][]*paced{}, changed: make(chan struct{})}
}

// begin waits until channel may take one more edit (or ctx ends: its
// error) and returns the edit, for end.
func (p *editPacer) begin(ctx context.Context, channel string) (*paced, error) {
	for {
		p.mu.Lock()
		now := p.clock.Now()
		es := p.edits[channel]
		for len(es) > 0 && es[0].ended && !now.Before(es[0].at.Add(p.window)) {
			es = es[1:]
		}
		if len(es) < p.limit {
			e := &paced{}
			p.edits[channel] = append(es, e)
			p.mu.Unlock()
			return e, nil
		}
		p.edits[channel] = es
		changed := p.changed
		var wake <-chan time.Time
		var t clock.Timer
		if es[0].ended { // else the oldest is under way: its end wakes us
			t = p.clock.NewTimer(es[0].at.Add(p.window).Sub(now))
			wake = t.C()
		}
		p.mu.Unlock()
		select {
		case <-wake:
		case <-changed:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// end notes that edit e of channel has its answer; edits out of their
// window are dropped, and channels left with none forgotten (the edits of
// the last few seconds are all the pacer keeps).
func (p *editPacer) end(channel string, e *paced) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.at, e.ended = p.clock.Now(), true
	close(p.changed)
	p.changed = make(chan struct{})
	for ch, es := range p.edits {
		for len(es) > 0 && es[0].ended && !e.at.Before(es[0].at.Add(p.window)) {
			es = es[1:]
		}
		if len(es) == 0 {
			delete(p.edits, ch)
		} else {
			p.edits[ch] = es
		}
	}
}
