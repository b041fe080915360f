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
	// Reserve says whether user may ask the model now about text, and
	// when so holds tokens for the answer until Settle gives back held.
	Reserve(user, text string) (held int, reason string, tell bool)
	// Settle gives back held and charges what the answer cost (0 when it
	// failed before any model call).
	Settle(user string, held, tokens int)
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

// reserve reports whether m, taken and started, may be answered: within
// its author's tokens a day and everyone's, tokens are held for the answer
// (settle gives them back with what it cost). Over a budget the model is
// not asked; the author is told (once a minute) or the message is dropped
// from the journal silently.
func (p *Pipeline[M]) reserve(m M, log *slog.Logger, start time.Time) (settle func(tokens int), ok bool) {
	if p.opts.Budget == nil {
		return func(int) {}, true
	}
	h := m.Head()
	held, reason, tell := p.opts.Budget.Reserve(h.User, h.Text)
	if reason == "" {
		return func(tokens int) { p.opts.Budget.Settle(h.User, held, tokens) }, true
	}
	p.refused(reason)
	key := map[string]string{"tokens": "limits.tokensPerDay", "total_tokens": "limits.totalTokensPerDay"}[reason]
	log.Info(p.opts.Name+": message refused: over "+key+"; the model is not asked", "user", h.User, "told", tell)
	if tell {
		p.reply(m, RefusalText(reason), start)
	} else if err := p.Journal().Done(h.ID); err != nil {
		log.Warn(p.opts.Name+": a refused message could not be marked done; it is refused again after a restart", "error", err)
	}
	return nil, false
}

// metered is a Handler that notes what each answer cost.
type metered struct {
	h      mnemo.Handler
	tokens *int
}

func (c metered) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	r, err := c.h.Handle(ctx, t)
	*c.tokens = r.Tokens
	return r, err
}
