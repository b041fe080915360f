package slack

import (
	"context"
	"log/slog"

	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// maxBatch bounds the events taken from socketmode at once: the messages
// among them share one journal write and fsync before they are acked.
const maxBatch = 64

// Forget drops user's messages that wait for their turn (received, not
// being answered yet), from the queue and the intake journal, and returns
// how many: they are not answered, now or after a restart. user is the
// memory user name.
func (b *Bot) Forget(user string) int { return b.pipe.Forget(user) }

// Queued is the number of messages accepted and not answered yet (for
// the metrics).
func (b *Bot) Queued() int { return b.pipe.Queued() }

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
		if b.assistantEvent(ctx, taskCtx, evt) {
			continue // acked; a welcome is spawned
		}
		if m := b.readEvent(evt); m != nil {
			if b.memoryMention(ctx, taskCtx, evt.Request, m) {
				continue // answered to the person alone, never journaled
			}
			if b.pipe.Admit(ctx, m) { // refused: acked, never journaled
				msgs = append(msgs, m)
			}
		} else {
			b.ackRequest(ctx, evt.Request)
			b.homeOpened(ctx, evt) // app_home_opened: the App Home tab (home.go)
		}
	}
	if len(msgs) > 0 {
		b.pipe.Receive(ctx, msgs...) // acknowledged once durable (platform.Ack)
	}
	return err
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
	// Files are read again when the message is answered (attach.go).
	Files []attach.File `json:"files,omitempty"`
}

func (m *incoming) wire() wireIncoming {
	return wireIncoming{EventID: m.eventID, Workspace: m.workspace, Team: m.team, User: m.author, Channel: m.channel,
		TS: m.ts, ThreadTS: m.threadTS, ReplyTS: m.replyTS, DM: m.DM, Text: m.Text, Conversation: m.Conversation, Files: m.files}
}

// Valid checks the ids a reply is addressed with.
func (w wireIncoming) Valid() bool {
	return validID(w.Workspace) && validID(w.Team) && validID(w.User) && validID(w.Channel) && validTS(w.TS) &&
		(w.ThreadTS == "" || validTS(w.ThreadTS)) && (w.ReplyTS == "" || validTS(w.ReplyTS)) && w.Conversation != ""
}

// Incoming is the message to answer again after a restart.
func (w wireIncoming) Incoming(e intake.Entry, log *slog.Logger) *incoming {
	return &incoming{Message: pipeline.Message{ID: e.ID, Keys: e.Keys, DM: w.DM, Text: w.Text, Conversation: w.Conversation,
		Log: log.With("event_id", w.EventID, "channel", w.Channel, "ts", w.TS, "user", w.User, "replayed", true)},
		eventID: w.EventID, workspace: w.Workspace, team: w.Team, author: w.User, channel: w.Channel,
		ts: w.TS, threadTS: w.ThreadTS, replyTS: w.ReplyTS, files: w.Files}
}

// ForgetQueued drops user's messages waiting in the Slack intake journal in
// intakeDir, for `mnemo memory forget` while no serve runs.
func ForgetQueued(intakeDir, user string) (int, error) {
	return intake.ForgetFile(intakeDir, "slack", user)
}
