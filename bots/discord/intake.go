package discord

import (
	"context"
	"log/slog"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

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

// replay answers what the journal kept from before a restart, in the order
// it came: messages not answered yet are queued (or told busy); replies a
// crash interrupted are finished.
func (b *Bot) replay() {
	intake.Replay[wireIncoming](b.rt, b.enqueue, func(in *incoming, text string) {
		if !b.queue.Submit(in.conversation, func() { b.resume(context.Background(), in, text) }) {
			b.wg.Go(func() { b.resume(context.Background(), in, text) })
		}
	})
}

// wireIncoming is a message as the journal keeps it: what answering it
// needs of the message (slim: its text is taken already) and the rest.
type wireIncoming struct {
	Msg          *discordgo.Message `json:"msg"`
	DM           bool               `json:"dm,omitempty"`
	User         string             `json:"user"`
	Speaker      string             `json:"speaker,omitempty"`
	Text         string             `json:"text"`
	Conversation string             `json:"conversation"`
}

func (in *incoming) wire() wireIncoming {
	return wireIncoming{Msg: slim(in.msg, true), DM: in.dm, User: in.user, Speaker: in.speaker, Text: in.text,
		Conversation: in.conversation}
}

// slim is what the answer reads of m: ids, author, text and mentions, the
// message it answers (one level).
func slim(m *discordgo.Message, withRef bool) *discordgo.Message {
	if m == nil {
		return nil
	}
	out := &discordgo.Message{ID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, Content: m.Content,
		Timestamp: m.Timestamp, Author: m.Author, Member: m.Member, Mentions: m.Mentions, Type: m.Type,
		MessageReference: m.MessageReference}
	if withRef {
		out.ReferencedMessage = slim(m.ReferencedMessage, false)
	}
	return out
}

// Valid checks the ids a reply is addressed with.
func (w wireIncoming) Valid() bool {
	m := w.Msg
	return m != nil && snowflake(m.ID) && snowflake(m.ChannelID) && (m.GuildID == "" || snowflake(m.GuildID)) &&
		m.Author != nil && snowflake(m.Author.ID) && w.User != "" && w.Conversation != ""
}

// Incoming is the message to answer again after a restart.
func (w wireIncoming) Incoming(e intake.Entry, log *slog.Logger) *incoming {
	return &incoming{id: e.ID, msg: w.Msg, dm: w.DM, user: w.User, speaker: w.Speaker, text: w.Text, conversation: w.Conversation,
		log: log.With("message_id", w.Msg.ID, "channel", w.Msg.ChannelID, "guild", w.Msg.GuildID,
			"memory_user", w.User, "platform", "discord", "replayed", true)}
}

// ForgetQueued drops user's messages waiting in the Discord intake journal
// in intakeDir, for `mnemo memory forget` while no serve runs.
func ForgetQueued(intakeDir, user string) (int, error) {
	return intake.ForgetFile(intakeDir, "discord", user)
}
