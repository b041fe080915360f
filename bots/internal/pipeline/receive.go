package pipeline

// A message taken in: admitted (access, budgets), journaled,
// acknowledged and queued, or answered busy.

import (
	"context"
	"errors"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
)

// Receive journals ms together (one write), acknowledges each one durable
// or known already, and queues the new ones; ctx bounds only the wait for
// a busy reply's slot. A message over its author's messages a minute is
// acknowledged and not journaled (ErrRefused). It returns each message's
// journal error (nil when taken; intake.ErrDuplicate when known).
func (p *Pipeline[M]) Receive(ctx context.Context, ms ...M) []error {
	errs := make([]error, len(ms))
	taken := make([]int, 0, len(ms)) // indexes of the messages to journal
	entries := make([]intake.Entry, 0, len(ms))
	for i, m := range ms {
		if p.overRate(ctx, m) {
			errs[i] = ErrRefused
			continue
		}
		h := m.Head()
		taken = append(taken, i)
		entries = append(entries, intake.Entry{ID: h.ID, Keys: h.Keys, User: h.User, Data: p.plat.Encode(m)})
	}
	for j, err := range p.Journal().Add(entries...) {
		errs[taken[j]] = err
	}
	for _, i := range taken {
		m := ms[i]
		h, err := m.Head(), errs[i]
		switch {
		case errors.Is(err, intake.ErrDuplicate):
			p.plat.Ack(ctx, m)
			h.Log.Info(p.opts.Name + ": duplicate message ignored")
			continue
		case err != nil && p.opts.Redelivers:
			h.Log.Warn(p.opts.Name+": message not acknowledged: it could not be journaled; "+p.opts.Name+" will deliver it again", "error", err)
			continue
		case err != nil:
			h.Log.Error(p.opts.Name+": the message could not be journaled; answering it anyway (a crash before the answer would lose it)", "error", err)
		}
		p.plat.Ack(ctx, m)
		p.noteCut(ctx, m)
		if p.stopping.Load() {
			if err != nil {
				h.Log.Warn(p.opts.Name + ": shutting down; this message will not be answered")
			} else {
				h.Log.Info(p.opts.Name + ": shutting down; the message is answered after the next start")
			}
			continue
		}
		h.Log.Info(p.opts.Name+": message received", "dm", h.DM)
		p.enqueue(ctx, m)
	}
	return errs
}

// Admit reports whether m's author may talk (Options.Access), before
// anything of m is journaled or answered. When not, m is acknowledged and
// dropped: no journal line, no memory, no model call; the refusal reply,
// if the gate gives one, is posted in the background when a slot is free.
func (p *Pipeline[M]) Admit(ctx context.Context, m M) bool {
	if p.opts.Access == nil {
		return true
	}
	h := m.Head()
	ok, reply := p.opts.Access.Check(ctx, h.Who)
	if ok {
		return true
	}
	p.plat.Ack(ctx, m)
	if reply == "" || p.stopping.Load() {
		return false
	}
	// Never waits for a slot: a flood of strangers must not hold up the
	// platform's events. Without a free one the refusal goes unsaid.
	select {
	case p.Slots <- struct{}{}:
	default:
		h.Log.Warn(p.opts.Name+": too busy to tell a refused person whom to ask; not answered", "limit", cap(p.Slots))
		return false
	}
	p.wg.Go(func() {
		defer func() { <-p.Slots }()
		for i, part := range p.plat.Parts(m, reply) {
			if err := p.plat.PostPart(p.work, m, i, part); err != nil {
				h.Log.Warn(p.opts.Name+": cannot post the refusal", "error", err)
				return
			}
		}
	})
	return false
}

// enqueue queues the answer to m, or, when its conversation already holds
// queue.PerConversation messages, answers that the bot is busy.
func (p *Pipeline[M]) enqueue(ctx context.Context, m M) {
	h := m.Head()
	if p.Queue.Submit(h.Conversation, func() { p.answer(m) }) {
		return
	}
	if p.stopping.Load() { // the queue is closed: it stays journaled
		h.Log.Info(p.opts.Name + ": shutting down; the message is answered after the next start")
		return
	}
	h.Log.Warn(p.opts.Name+": conversation busy; answering that the bot is busy",
		"conversation", h.Conversation, "limit", queue.PerConversation)
	if !p.Spawn(ctx, func() {
		if p.Journal().Start(h.ID) {
			p.reply(m, BusyReplyText, time.Now())
		}
	}) {
		h.Log.Warn(p.opts.Name + ": shutting down before the busy reply; it is answered after the next start")
	}
}

// Spawn runs fn (a busy reply, a command: what must not wait behind a
// conversation's messages) in a goroutine Close waits for, at most
// cap(Slots) at a time; when all are taken it logs and waits. It reports
// false, without running fn, when ctx ended first.
func (p *Pipeline[M]) Spawn(ctx context.Context, fn func()) bool {
	select {
	case p.Slots <- struct{}{}:
	default:
		p.log.Warn(p.opts.Name+": too many commands in progress; waiting for one to finish", "limit", cap(p.Slots))
		select {
		case p.Slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
	}
	p.wg.Go(func() {
		defer func() { <-p.Slots }()
		fn()
	})
	return true
}
