package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mnemo-agent/mnemo"
)

// Budget is what people may spend (cmd/internal/budget.Budget): a reason
// ("rate", "tokens", "total_tokens") says a message is over a budget,
// "" that it is within; tell says to reply so (at most once a minute per
// person and reason: the other refusals are silent).
type Budget interface {
	// Message counts a message of user against messages a minute.
	Message(user string) (reason string, tell bool)
	// Ask says whether user may ask the model now.
	Ask(user string) (reason string, tell bool)
	// Charge adds what an answer to user cost.
	Charge(user string, tokens int)
}

// Refusals counts messages answered without the model, by platform and
// reason (*metrics.Metrics: mnemo_refused_total).
type Refusals interface {
	Refused(platform, reason string)
}

// ErrRefused is Receive's error for a message over its author's messages
// a minute: acknowledged, not journaled, not answered.
var ErrRefused = errors.New("refused: over the messages a minute")

// refused counts a refusal for reason.
func (p *Pipeline[M]) refused(reason string) {
	if p.opts.Refusals != nil {
		p.opts.Refusals.Refused(p.opts.Name, reason)
	}
}

// overRate reports whether m is over its author's messages a minute; it is
// then acknowledged, and the author told (once a minute), without a
// journal line or a model call.
func (p *Pipeline[M]) overRate(ctx context.Context, m M) bool {
	if p.opts.Budget == nil {
		return false
	}
	h := m.Head()
	reason, tell := p.opts.Budget.Message(h.User)
	if reason == "" {
		return false
	}
	p.refused(reason)
	p.plat.Ack(ctx, m)
	h.Log.Info(p.opts.Name+": message refused: over limits.messagesPerMinute; not read", "user", h.User, "told", tell)
	if tell {
		p.notice(ctx, m, RefusalText(reason))
	}
	return true
}

// noteCut tells the author of m, when the platform cut its text, that only
// the first characters were read.
func (p *Pipeline[M]) noteCut(ctx context.Context, m M) {
	h := m.Head()
	if h.Cut <= 0 {
		return
	}
	p.refused("too_long")
	h.Log.Info(p.opts.Name+": message cut at the platform's limit", "chars", h.Cut)
	p.notice(ctx, m, CutNoteText(h.Cut))
}

// notice posts text in reply to m, apart from its answer: not journaled
// (a crash or a shutdown may lose it), on a goroutine Close waits for.
func (p *Pipeline[M]) notice(ctx context.Context, m M, text string) {
	if p.stopping.Load() {
		return
	}
	p.Spawn(ctx, func() {
		for i, part := range p.plat.Parts(m, text) {
			if err := p.plat.PostPart(p.work, m, i, part); err != nil {
				m.Head().Log.Warn(p.opts.Name+": cannot post a notice", "error", err)
				return
			}
		}
	})
}

// overBudget reports whether m, taken and started, is over its author's
// tokens a day or everyone's: the model is not asked; the author is told
// (once a minute) or the message is dropped from the journal silently.
func (p *Pipeline[M]) overBudget(m M, log *slog.Logger, start time.Time) bool {
	if p.opts.Budget == nil {
		return false
	}
	h := m.Head()
	reason, tell := p.opts.Budget.Ask(h.User)
	if reason == "" {
		return false
	}
	p.refused(reason)
	key := map[string]string{"tokens": "limits.tokensPerDay", "total_tokens": "limits.totalTokensPerDay"}[reason]
	log.Info(p.opts.Name+": message refused: over "+key+"; the model is not asked", "user", h.User, "told", tell)
	if tell {
		p.reply(m, RefusalText(reason), start)
	} else if err := p.Journal().Done(h.ID); err != nil {
		log.Warn(p.opts.Name+": a refused message could not be marked done; it is refused again after a restart", "error", err)
	}
	return true
}

// charging is a Handler that charges each answer's tokens to its user.
type charging struct {
	h      mnemo.Handler
	budget Budget
}

func (c charging) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	r, err := c.h.Handle(ctx, t)
	c.budget.Charge(t.User, r.Tokens)
	return r, err
}
