package slack

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo/bots/internal/core"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// maxBatch bounds the events taken from socketmode at once: the messages
// among them share one journal write and fsync before they are acked.
const maxBatch = 64

// journal is the intake journal (a memory-only one until Run opens the
// one in Config.IntakeDir).
func (b *Bot) journal() *intake.Journal { return b.rt.Journal() }

// Forget drops user's messages that wait for their turn (received, not
// being answered yet), from the queue and the intake journal, and returns
// how many: they are not answered, now or after a restart. user is the
// memory user name.
func (b *Bot) Forget(user string) int { return b.journal().Forget(user) }

// Queued is the number of messages accepted and not answered yet (for
// the metrics).
func (b *Bot) Queued() int { return b.queue.Len() }

// drain is evt and the events socketmode already has waiting, up to
// maxBatch.
func (b *Bot) drain(evt socketmode.Event) []socketmode.Event {
	evts := []socketmode.Event{evt}
	for len(evts) < maxBatch {
		select {
		case e := <-b.sm.Events:
			evts = append(evts, e)
		default:
			return evts
		}
	}
	return evts
}

// receive handles socketmode events in order. The messages to answer
// among them are journaled together, and each is acknowledged only once
// it is durable; every other envelope is acknowledged at once.
func (b *Bot) receive(ctx, taskCtx context.Context, evts []socketmode.Event) error {
	var msgs []*incoming
	var err error
	for _, evt := range evts {
		if evt.Type != socketmode.EventTypeEventsAPI {
			if err = b.dispatch(ctx, taskCtx, evt); err != nil {
				break // the messages before it are still taken
			}
			continue
		}
		if m := b.readEvent(evt); m != nil {
			msgs = append(msgs, m)
		} else {
			b.ackRequest(ctx, evt.Request)
		}
	}
	b.take(ctx, taskCtx, msgs)
	return err
}

// take journals msgs, acknowledges each one that is durable (or known
// already) and queues the new ones. One that cannot be journaled is not
// acknowledged: Slack delivers it again.
func (b *Bot) take(ctx, taskCtx context.Context, msgs []*incoming) {
	if len(msgs) == 0 {
		return
	}
	entries := make([]intake.Entry, len(msgs))
	for i, m := range msgs {
		data, _ := json.Marshal(m.wire()) // strings and bools only
		entries[i] = intake.Entry{ID: m.id, Keys: m.keys, User: b.memoryUser(m.team, m.user), Data: data}
	}
	errs := b.journal().Add(entries...)
	for i, m := range msgs {
		switch err := errs[i]; {
		case errors.Is(err, intake.ErrDuplicate):
			b.ackEnvelope(ctx, m.envelope)
			m.log.Info("slack: duplicate event ignored", "retry_attempt", m.retry)
		case err != nil:
			m.log.Warn("slack: message not acknowledged: it could not be journaled; Slack will deliver it again", "error", err)
		default:
			b.ackEnvelope(ctx, m.envelope)
			m.log.Info("slack: message received", "user", m.user, "dm", m.dm, "retry_attempt", m.retry)
			b.enqueue(ctx, taskCtx, m)
		}
	}
}

func (b *Bot) ackEnvelope(ctx context.Context, envelope string) {
	if envelope != "" {
		b.ack(ctx, envelope, nil)
	}
}

// enqueue queues the answer to m, or, when its conversation already holds
// core.PerConversation messages, answers that the bot is busy. When ctx
// ends first, m stays journaled and is answered after the next start.
func (b *Bot) enqueue(ctx, taskCtx context.Context, m *incoming) {
	if b.queue.Submit(m.conversation, func() { b.answer(taskCtx, m) }) {
		return
	}
	m.log.Warn("slack: too many messages waiting in this conversation; answering that the bot is busy",
		"user", m.user, "conversation", m.conversation, "limit", core.PerConversation)
	if !b.spawn(ctx, func() { b.busy(taskCtx, m) }) {
		m.log.Warn("slack: shutting down before the busy reply; it is answered after the next start")
	}
}

// replay answers what the journal kept from before a restart, in the order
// it came: messages not answered yet are queued (or told busy); replies a
// crash interrupted are finished.
func (b *Bot) replay(ctx, taskCtx context.Context) {
	intake.Replay[wireIncoming](b.rt, func(m *incoming) { b.enqueue(ctx, taskCtx, m) }, func(m *incoming, text string) {
		if !b.queue.Submit(m.conversation, func() { b.resume(taskCtx, m, text) }) {
			b.spawn(ctx, func() { b.resume(taskCtx, m, text) })
		}
	})
}

// wireIncoming is a message as the journal keeps it.
type wireIncoming struct {
	EventID      string `json:"eventId,omitempty"`
	Workspace    string `json:"workspace"`
	Team         string `json:"team"`
	User         string `json:"user"`
	Channel      string `json:"channel"`
	TS           string `json:"ts"`
	ThreadTS     string `json:"threadTs,omitempty"`
	ReplyTS      string `json:"replyTs,omitempty"`
	DM           bool   `json:"dm,omitempty"`
	Text         string `json:"text"`
	Conversation string `json:"conversation"`
}

func (m *incoming) wire() wireIncoming {
	return wireIncoming{EventID: m.eventID, Workspace: m.workspace, Team: m.team, User: m.user, Channel: m.channel,
		TS: m.ts, ThreadTS: m.threadTS, ReplyTS: m.replyTS, DM: m.dm, Text: m.text, Conversation: m.conversation}
}

// Valid checks the ids a reply is addressed with.
func (w wireIncoming) Valid() bool {
	return validID(w.Workspace) && validID(w.Team) && validID(w.User) && validID(w.Channel) && validTS(w.TS) &&
		(w.ThreadTS == "" || validTS(w.ThreadTS)) && (w.ReplyTS == "" || validTS(w.ReplyTS)) && w.Conversation != ""
}

// Incoming is the message to answer again after a restart.
func (w wireIncoming) Incoming(e intake.Entry, log *slog.Logger) *incoming {
	return &incoming{id: e.ID, keys: e.Keys, log: log.With("event_id", w.EventID, "channel", w.Channel, "ts", w.TS, "replayed", true),
		eventID: w.EventID, workspace: w.Workspace, team: w.Team, user: w.User, channel: w.Channel,
		ts: w.TS, threadTS: w.ThreadTS, replyTS: w.ReplyTS, dm: w.DM, text: w.Text, conversation: w.Conversation}
}

// ForgetQueued drops user's messages waiting in the Slack intake journal in
// intakeDir, for `mnemo memory forget` while no serve runs.
func ForgetQueued(intakeDir, user string) (int, error) {
	return intake.ForgetFile(intakeDir, "slack", user)
}
