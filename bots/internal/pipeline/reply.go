package pipeline

// A queued message answered: the task prepared, the handler asked, the
// reply journaled and posted part by part.

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/settings"
)

// answer runs m through the handler and posts the reply.
func (p *Pipeline[M]) answer(m M) {
	h := m.Head()
	id := TaskID(h.ID)
	log := h.Log.With("task_id", id)
	if !p.Journal().Start(h.ID) {
		log.Info(p.opts.Name + ": message not answered: its user's memory was forgotten since it came")
		if d, ok := p.plat.(Dropper[M]); ok {
			d.Dropped(m)
		}
		return
	}
	if a, ok := p.plat.(Attacher[M]); ok {
		h.Text += a.Attach(p.work, m)
	}
	start := time.Now()
	settle, ok := p.reserve(m, log, start)
	if !ok {
		return
	}
	ctx := p.work
	if c, ok := p.plat.(Canceller[M]); ok {
		ctx = c.TaskContext(ctx, m)
	}
	stopTyping := sync.OnceFunc(p.plat.Typing(ctx, m))
	task := mnemo.Task{
		ID:            id,
		User:          h.User,
		Conversation:  h.Conversation,
		Platform:      p.opts.Name,
		Speaker:       h.Speaker,
		Text:          h.Text,
		Time:          p.now(),
		Channel:       !h.DM,
		ChannelMemory: settings.TaskMemory(h.DM, p.opts.ChannelMemory),
	}
	// A platform that shows replies as they are written gets the task's
	// stream: the typing indicator ends at the first words.
	var dr *draft[M]
	st, streams := p.plat.(Streamer[M])
	if streams {
		task.Stream = st.Stream(m)
	} else if d, ok := p.plat.(Drafter[M]); ok {
		dr = newDraft(p, d, m, p.takeDrafts(m), func() {
			stopTyping()
			if p.opts.FirstVisible != nil {
				p.opts.FirstVisible(time.Since(start))
			}
		})
		dr.visible = sync.OnceFunc(dr.visible)
		task.Stream = dr
	}
	a := Answered{Text: ErrorReplyText, Failed: true}
	tokens := 0
	if p.prepare(ctx, m, &task, log) {
		a = Answer(ctx, metered{p.opts.Handler, &tokens}, task, log)
	}
	// Both recover panics: the hold is settled whatever happened, before
	// the reply is posted (the next message may ask at once).
	settle(tokens)
	if !p.opts.TypingUntilPosted {
		stopTyping()
	}
	if a.Failed {
		log.Warn(p.opts.Name+": answering with an apology", "cut", a.Cut)
	}
	if streams {
		st.Answered(m, a)
	}
	text := a.Text
	if dr != nil {
		text = finalText(a, dr.written())
	}
	if dr == nil || !dr.finish(text, start) {
		p.reply(m, text, start)
	}
	if p.opts.TypingUntilPosted {
		stopTyping()
	}
}

// prepare runs the platform's Prepare; a panic in it is logged and
// reported false (answered with ErrorReplyText, as Answer does
// for the handler).
func (p *Pipeline[M]) prepare(ctx context.Context, m M, t *mnemo.Task, log *slog.Logger) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("task panicked", "panic", r, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	p.plat.Prepare(ctx, m, t)
	return true
}

// reply posts text as the answer to m. The text is journaled first, so
// that a crash while it is posted neither loses nor doubles it (resume).
func (p *Pipeline[M]) reply(m M, text string, start time.Time) {
	h := m.Head()
	if err := p.Journal().Posting(h.ID, text); err != nil {
		h.Log.Error(p.opts.Name+": the reply could not be journaled; posting it anyway (a crash while it is posted could post it twice)", "error", err)
	}
	p.post(m, text, 0, start)
}

// post posts the parts of text, m's reply, from the part from on, then
// takes m out of the journal. It stops at the first part that cannot be
// posted, which is not retried (logged).
func (p *Pipeline[M]) post(m M, text string, from int, start time.Time) {
	h := m.Head()
	parts := p.plat.Parts(m, text)
	n, err := 0, error(nil)
	for i := from; i < len(parts) && err == nil; i++ {
		if err = p.plat.PostPart(p.work, m, i, parts[i]); err != nil {
			err = fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
		} else {
			n++
		}
	}
	if err != nil {
		what := "reply"
		if text == BusyReplyText {
			what = "busy reply"
		}
		h.Log.Error(p.opts.Name+": cannot post the "+what, "error", err, "parts_posted", n)
	} else {
		h.Log.Info(p.opts.Name+": replied", "parts", n, "duration", time.Since(start))
	}
	if err := p.Journal().Done(h.ID); err != nil {
		h.Log.Warn(p.opts.Name+": the reply was posted but could not be marked done; after a restart it is checked, not posted again", "error", err)
	}
}
