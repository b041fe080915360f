// Package pipeline is the one path a chat message takes, whatever the
// platform it came from:
//
//	accept → journal → queue → answer → post
//	                                  ↘ busy
//	restart → replay → queue → answer → post, or resume an interrupted post
//
// Admit runs first (Options.Access, bots/access): a person not let in is
// acknowledged and answered whom to ask, and nothing of their message is
// journaled or answered. Receive journals the messages a platform decoded (one write, one fsync,
// duplicates refused), acknowledges them to the platform once durable, and
// queues each in its conversation (queue.Queue), or answers that the bot is
// busy when the conversation is full. A queued message is answered on the
// queue's goroutine: the typing indicator is shown, the platform fills in
// the task (speaker, channel, thread context), Answer asks the
// handler, and the reply is journaled, split into parts and posted part by
// part (reply, post). Replay answers what the journal kept from
// before a restart; a reply a crash interrupted is resumed from the first
// part the platform does not show yet.
//
// A platform that can edit its messages also implements Drafter (draft.go):
// the task then gets a Stream, and the reply is shown while it is written
// (the first words posted at once, then edits, continued in new messages
// where Parts splits; the messages' ids journaled, so that a crash is
// finished by edits rather than a second reply).
//
// A platform (bots/slack, bots/discord, bots/console) implements Platform,
// the few things only it knows: reading its events into messages, the
// journal form of a message, acknowledging, posting one part, finding the
// parts already posted, showing typing and reading the thread. The
// terminal (bots/console) shows a reply itself as it is written
// (Streamer), lets its person cancel one (Canceller) and is told of a
// message a forget dropped (Dropper).
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
	"github.com/mnemo-agent/mnemo/bots/internal/settings"
)

// Message is what the pipeline reads of every platform's message; a
// platform's message type embeds it (and so has Head).
type Message struct {
	ID           string   // journal id and first dedupe key ("msg:…")
	Keys         []string // more dedupe keys (a redelivery may come under another id)
	User         string   // the memory user name of the author
	Conversation string   // answered in order within it (the queue's key)
	DM           bool     // a direct message (else a channel: ChannelMemory applies)
	Speaker      string   // the author's display name ("" when the platform reads it while answering)
	Text         string   // the text for the model
	// Who is the author as the access check sees them (Admit).
	Who access.Who
	// Cut: the platform cut Text to its first Cut characters (its limit);
	// the person is told once the message is taken. 0: whole.
	Cut int
	Log *slog.Logger
}

// Head is m itself: a platform's message type embeds Message and so
// satisfies Incoming.
func (m *Message) Head() *Message { return m }

// Incoming is a platform's message.
type Incoming interface{ Head() *Message }

// Platform is what a chat platform does for the pipeline. M is its message
// type, a pointer embedding Message.
type Platform[M Incoming] interface {
	// Encode is m as the journal keeps it; Decode gives it back after a
	// restart (an error drops the entry, logged), logging to log.
	Encode(m M) []byte
	Decode(e intake.Entry, log *slog.Logger) (M, error)
	// Ack tells the platform that m was received (it is durable, or was
	// known already); a platform that needs no acknowledgement does nothing.
	Ack(ctx context.Context, m M)
	// Typing shows that the bot works on m until stop is called: before
	// the reply is posted, or after it with Options.TypingUntilPosted.
	Typing(ctx context.Context, m M) (stop func())
	// Prepare completes the task for m before the handler runs it: the
	// speaker, the channel's memory, the earlier messages of the thread.
	// A panic in it is answered politely, as one in the handler is.
	Prepare(ctx context.Context, m M, t *mnemo.Task)
	// Parts renders text as the messages of m's reply (at most the
	// platform's limit; never none).
	Parts(m M, text string) []string
	// PostPart posts part i of m's reply.
	PostPart(ctx context.Context, m M, i int, part string) error
	// Posted is how many of parts, m's reply, the platform shows already
	// (a crash interrupted the post); 0 when it cannot tell.
	Posted(ctx context.Context, m M, parts []string) int
}

// Streamer is a Platform that shows a reply itself while it is written
// (optional; the terminal, which prints the words as they come): the task's
// Stream is Stream(m), and the reply's Answered is handed to Answered
// before the reply is posted, so that the platform finishes what it showed
// (a cut note after a cut stream) rather than showing it again.
type Streamer[M Incoming] interface {
	Stream(m M) mnemo.Stream
	Answered(m M, a Answered)
}

// Canceller is a Platform whose person may cancel an answer while it is
// written (optional; the terminal's Ctrl-C): m's task runs under
// TaskContext(ctx, m), which ends when they do.
type Canceller[M Incoming] interface {
	TaskContext(ctx context.Context, m M) context.Context
}

// Dropper is a Platform told of a message that will not be answered
// because its person's memory was forgotten while it waited (optional;
// the terminal, whose person waits for every answer).
type Dropper[M Incoming] interface {
	Dropped(m M)
}

// Attacher is a Platform whose messages may carry files (optional; Slack,
// Discord): Attach returns what the model is given of m's files, added to
// its text before its budget is held, so the budget counts it. It runs
// when m is answered, after a restart too: the journal keeps the files'
// names and addresses, not their text.
type Attacher[M Incoming] interface {
	Attach(ctx context.Context, m M) string
}

// Options configures a Pipeline. Platform, Handler and Adapter are
// required.
type Options struct {
	Name    string // "slack", "discord": log prefix and Task.Platform
	Handler mnemo.Handler
	// ChannelMemory is the platform's channelMemory setting (full, read,
	// off) for messages in channels.
	ChannelMemory string
	// Redelivers: the platform delivers a message again when it was not
	// acknowledged (Slack). A message that cannot be journaled is then not
	// acknowledged and left to the redelivery; else (Discord) it is
	// answered anyway.
	Redelivers bool
	// FirstVisible, when set, is told how long after a message was taken
	// to answer the first words of its streamed reply were shown
	// (mnemo_time_to_first_visible_seconds).
	FirstVisible func(time.Duration)
	// TypingUntilPosted keeps the typing indicator until the reply is
	// posted (Slack: a status or reaction taken away before would
	// flicker); else it ends before (Discord: typing shown after the post
	// would last another ten seconds).
	TypingUntilPosted bool
	// Lifecycle is the intake journal's life: memory-only until Start,
	// closed at the end of Run.
	Lifecycle *intake.Lifecycle
	// Access decides who may talk (Admit); nil lets everyone in.
	Access Gate
	// Budget, when set, limits what people spend (budget.go); Refusals
	// counts the messages answered without the model. Either may be nil.
	Budget   Budget
	Refusals Refusals
}

// Gate is who may talk on a platform (*access.Gate): ok, or the reply to
// give ("" for none).
type Gate interface {
	Check(ctx context.Context, who access.Who) (ok bool, reply string)
}

// Pipeline runs every message of one platform; create it with New.
type Pipeline[M Incoming] struct {
	opts  Options
	plat  Platform[M]
	rt    *intake.Lifecycle
	log   *slog.Logger
	now   func() time.Time
	Queue *queue.Queue // messages, in order per conversation (tests may replace it before Start)
	// Slots bounds the goroutines Spawn runs at once (busy replies and the
	// platform's commands); tests may replace it before Start.
	Slots chan struct{}

	work     context.Context // what answers run under: outlives Run's ctx
	stopping atomic.Bool
	wg       sync.WaitGroup

	// drafts are the messages a streamed reply showed before a restart,
	// by message id (Replay), finished by the answer (takeDrafts).
	draftsMu sync.Mutex
	drafts   map[string][]string
}

// New returns the pipeline of platform plat.
func New[M Incoming](plat Platform[M], opts Options) *Pipeline[M] {
	return &Pipeline[M]{opts: opts, plat: plat, rt: opts.Lifecycle, log: opts.Lifecycle.Log, now: opts.Lifecycle.Now,
		Queue: queue.New(queue.MaxInFlight, queue.PerConversation), Slots: make(chan struct{}, queue.MaxInFlight), work: context.Background()}
}

// Journal is the intake journal.
func (p *Pipeline[M]) Journal() *intake.Journal { return p.rt.Journal() }

// Forget drops user's messages that wait for their turn, from the queue
// and the journal, and returns how many.
func (p *Pipeline[M]) Forget(user string) int { return p.Journal().Forget(user) }

// Queued is the number of messages accepted and not answered yet.
func (p *Pipeline[M]) Queued() int { return p.Queue.Len() }

// Start opens the journal (intake.Lifecycle.Start); answers run under a
// context that keeps ctx's values but not its end (a message taken is
// answered, even during shutdown). stop closes the journal: call it
// after Close.
func (p *Pipeline[M]) Start(ctx context.Context) (stop func(), err error) {
	p.work = context.WithoutCancel(ctx)
	return p.rt.Start()
}

// Stop stops taking messages: those received from now on stay journaled
// and are answered after the next start.
func (p *Pipeline[M]) Stop() { p.stopping.Store(true) }

// Close stops taking messages (Stop) and waits until every message taken
// is answered and every spawned goroutine has ended.
func (p *Pipeline[M]) Close() {
	p.Stop()
	_ = p.Queue.Close(context.Background()) // no deadline: a message taken is answered
	p.wg.Wait()
}

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

// Wire is a message as a platform journals it (W, JSON) that gives back
// the message to answer (M): Valid checks the ids a reply is addressed
// with, Incoming rebuilds the message of entry e, logging to log.
type Wire[M any] interface {
	Valid() bool
	Incoming(e intake.Entry, log *slog.Logger) M
}

// DecodeJSON is the usual Platform.Decode: the entry's data as JSON into
// a W, which must be Valid, and the message it gives back.
func DecodeJSON[W Wire[M], M any](e intake.Entry, log *slog.Logger) (M, error) {
	var w W
	var zero M
	if err := json.Unmarshal(e.Data, &w); err != nil {
		return zero, err
	}
	if !w.Valid() {
		return zero, errors.New("malformed ids")
	}
	return w.Incoming(e, log), nil
}
