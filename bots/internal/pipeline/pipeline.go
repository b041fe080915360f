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
//
// The files, by responsibility: pipeline.go the Pipeline and its life
// (New, Start, Stop, Close); platform.go what a platform implements;
// receive.go the way in (Admit, Receive, the queue or the busy answer);
// reply.go a queued message answered and its reply posted; replay.go what
// a restart finds in the journal; draft.go a reply shown as it is written;
// answer.go, budget.go and refusal.go the handler's call, the budgets and
// what is answered without the model.
package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
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
