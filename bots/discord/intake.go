package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// journal is the intake journal (a memory-only one until Run opens the
// one in Config.IntakeDir).
func (b *Bot) journal() *intake.Journal { return b.intake.Load() }

// Forget drops user's messages that wait for their turn (received, not
// being answered yet), from the queue and the intake journal, and returns
// how many: they are not answered, now or after a restart. user is the
// memory user name.
func (b *Bot) Forget(user string) int { return b.journal().Forget(user) }

// Queued is the number of messages accepted and not answered yet (for
// the metrics).
func (b *Bot) Queued() int { return b.queue.Len() }

// openJournal opens the journal in Config.IntakeDir, when set.
func (b *Bot) openJournal() error {
	if b.cfg.IntakeDir == "" {
		return nil
	}
	j, err := intake.Open(intake.Options{Dir: b.cfg.IntakeDir, Name: "discord", Logger: b.log, Now: b.now,
		OpenFile: b.intakeFiles})
	if err != nil {
		return fmt.Errorf("discord: %w (the intake journal keeps the messages received and not yet answered; the state folder must be writable)", err)
	}
	b.intake.Store(j)
	return nil
}

// replay answers what the journal kept from before a restart, in the order
// it came: messages not answered yet are queued (or told busy); replies a
// crash interrupted are finished.
func (b *Bot) replay() {
	pending := b.journal().Pending()
	if len(pending) == 0 {
		return
	}
	b.log.Info("discord: answering the messages received before a restart", "messages", len(pending))
	for _, e := range pending {
		var w wireIncoming
		err := json.Unmarshal(e.Data, &w)
		if err == nil && !w.valid() {
			err = errors.New("malformed ids")
		}
		if err != nil {
			b.log.Error("discord: an unreadable message in the intake journal cannot be answered; dropping it",
				"file", b.journal().Path(), "id", e.ID, "error", err)
			_ = b.journal().Done(e.ID)
			continue
		}
		in := w.incoming()
		in.id = e.ID
		in.log = b.log.With("message_id", in.msg.ID, "channel", in.msg.ChannelID, "guild", in.msg.GuildID,
			"memory_user", in.user, "platform", "discord", "replayed", true)
		if !e.Posting {
			b.enqueue(in)
			continue
		}
		text := e.Reply
		if !b.queue.Submit(in.conversation, func() { b.resume(context.Background(), in, text) }) {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.resume(context.Background(), in, text)
			}()
		}
	}
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

// valid checks the ids a reply is addressed with.
func (w wireIncoming) valid() bool {
	m := w.Msg
	return m != nil && snowflake(m.ID) && snowflake(m.ChannelID) && (m.GuildID == "" || snowflake(m.GuildID)) &&
		m.Author != nil && snowflake(m.Author.ID) && w.User != "" && w.Conversation != ""
}

func (w wireIncoming) incoming() *incoming {
	return &incoming{msg: w.Msg, dm: w.DM, user: w.User, speaker: w.Speaker, text: w.Text, conversation: w.Conversation}
}

// ForgetQueued drops user's messages waiting in the Discord intake journal
// in intakeDir, for `mnemo memory forget` while no serve runs.
func ForgetQueued(intakeDir, user string) (int, error) {
	return intake.ForgetFile(intakeDir, "discord", user)
}
