package pipeline

// After a restart: what the journal kept answered, and a reply a crash
// interrupted finished without posting a part twice.

import (
	"context"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// Replay answers what the journal kept from before a restart, in the
// order it came: a message not answered yet is queued (or told busy); a
// reply a crash interrupted is finished from the first part not posted.
// An entry the platform cannot decode is logged and dropped. Call it after
// Start and before the platform's new messages come, so each conversation
// stays in order.
func (p *Pipeline[M]) Replay(ctx context.Context) {
	pending := p.Journal().Pending()
	if len(pending) == 0 {
		return
	}
	p.log.Info(p.opts.Name+": answering the messages received before a restart", "messages", len(pending))
	for _, e := range pending {
		m, err := p.plat.Decode(e, p.log)
		switch {
		case err != nil:
			p.log.Error(p.opts.Name+": an unreadable message in the intake journal cannot be answered; dropping it",
				"file", p.Journal().Path(), "id", e.ID, "error", err)
			_ = p.Journal().Done(e.ID)
		case e.Posting:
			resume := func() { p.resume(m, e) }
			if !p.Queue.Submit(m.Head().Conversation, resume) {
				p.Spawn(ctx, resume)
			}
		default:
			p.keepDrafts(e.ID, e.Drafts) // nil too: its answer looks for a message a crash left
			p.enqueue(ctx, m)
		}
	}
}

// keepDrafts keeps the messages a streamed reply to message id showed
// before a restart, for its answer to finish in them.
func (p *Pipeline[M]) keepDrafts(id string, ids []string) {
	p.draftsMu.Lock()
	defer p.draftsMu.Unlock()
	if p.drafts == nil {
		p.drafts = map[string][]string{}
	}
	p.drafts[id] = ids
}

// takeDrafts is what keepDrafts kept for m (nil when nothing): for a
// message replayed without any, the first message of its reply the
// platform shows (DraftFinder), which a crash may have left unjournaled.
func (p *Pipeline[M]) takeDrafts(m M) []string {
	h := m.Head()
	p.draftsMu.Lock()
	ids, replayed := p.drafts[h.ID]
	delete(p.drafts, h.ID)
	p.draftsMu.Unlock()
	if f, ok := p.plat.(DraftFinder[M]); ok && replayed && len(ids) == 0 {
		if id := f.FindDraft(p.work, m); id != "" {
			h.Log.Info(p.opts.Name + ": a reply a crash interrupted is answered again in the message it had begun")
			ids = []string{id}
		}
	}
	return ids
}

// resume finishes a reply a crash interrupted: the parts of it the
// platform shows already are not posted again; the messages a streamed
// reply showed are edited to their final text.
func (p *Pipeline[M]) resume(m M, e intake.Entry) {
	text := e.Reply
	if d, ok := p.plat.(Drafter[M]); ok && len(e.Drafts) > 0 {
		m.Head().Log.Info(p.opts.Name+": finishing a streamed reply interrupted by a restart", "messages_streamed", len(e.Drafts))
		dr := newDraft(p, d, m, e.Drafts, func() {})
		dr.stop()
		dr.complete(text, time.Now())
		return
	}
	posted := p.plat.Posted(p.work, m, p.plat.Parts(m, text))
	m.Head().Log.Info(p.opts.Name+": finishing a reply interrupted by a restart", "parts_posted_before", posted)
	p.post(m, text, posted, time.Now())
}
