package discord

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// platform is what Discord does for the pipeline (pipeline.Platform):
// everything else of a message's way is the pipeline's.
type platform struct{ b *Bot }

var (
	_ pipeline.Platform[*incoming]    = platform{}
	_ pipeline.Drafter[*incoming]     = platform{}
	_ pipeline.DraftFinder[*incoming] = platform{}
)

// Encode is the message as the journal keeps it (wireIncoming).
func (p platform) Encode(in *incoming) []byte {
	data, _ := json.Marshal(in.wire())
	return data
}

// Decode is a journaled message back, after a restart.
func (p platform) Decode(e intake.Entry, log *slog.Logger) (*incoming, error) {
	return pipeline.DecodeJSON[wireIncoming](e, log)
}

// Ack does nothing: the gateway needs no acknowledgement of a message.
func (platform) Ack(context.Context, *incoming) {}

// Typing shows the typing indicator now and every typingEvery until stop
// is called.
func (p platform) Typing(ctx context.Context, in *incoming) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(p.b.typingEvery)
		defer t.Stop()
		for {
			if err := p.b.s.ChannelTyping(in.msg.ChannelID, discordgo.WithContext(ctx)); err != nil {
				in.Log.Debug("discord: cannot show typing", "error", err)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// Prepare finds whether the message was written in a thread (a thread is
// one conversation, whoever speaks in it, and belongs to its channel's
// memory), and reads what came before it.
func (p platform) Prepare(ctx context.Context, in *incoming, t *mnemo.Task) {
	t.Origin = origin(in.msg.GuildID, in.msg.ChannelID, in.msg.ID)
	if in.DM {
		t.Origin.Place = "dm"
		return
	}
	home, thread := p.b.channels.home(ctx, in.msg.ChannelID)
	in.thread = thread
	t.Origin.Place = "#" + home
	if thread {
		t.Origin.Place += " thread"
	}
	if thread {
		t.Conversation = "discord:" + in.msg.GuildID + ":" + in.msg.ChannelID
	}
	t.ChannelKey = mnemo.ChannelKey("discord", home)
	t.Context = p.b.context(ctx, in, in.Log)
}

// origin is a message's link (https://discord.com/channels/<guild or
// @me>/<channel>/<message>) and place, for the provenance of what is
// learned from it; Prepare names the place.
func origin(guild, channel, message string) mnemo.Origin {
	if guild == "" {
		guild = "@me"
	}
	var o mnemo.Origin
	if channel != "" && message != "" {
		o.Link = "https://discord.com/channels/" + guild + "/" + channel + "/" + message
	}
	return o
}

// Parts is the reply rendered for Discord and split (replyParts).
func (platform) Parts(_ *incoming, text string) []string { return replyParts(text) }

// PostPart posts one part of the reply to in; only the first part is a
// Discord reply to it. Nothing in the text pings anyone.
func (p platform) PostPart(ctx context.Context, in *incoming, i int, part string) error {
	_, err := p.StartDraft(ctx, in, pipeline.DraftEdit{Part: i, Text: part})
	return err
}

// allowedMentions is every post's and edit's: an empty, non-nil Parse,
// so nothing in the text pings anyone.
func (p platform) allowedMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: p.b.cfg.ReplyMention}
}

// DraftInterval: Discord takes 5 edits per 5 s in a channel; one update a
// second, and the bot's edit pacer holds back an edit past the limit (the
// final one after an interval's), so discordgo's rate limiter never has to.
func (p platform) DraftInterval() time.Duration { return p.b.editEvery }

// StartDraft posts part e.Part of the reply to in (the first answers it)
// and returns the new message's id.
func (p platform) StartDraft(ctx context.Context, in *incoming, e pipeline.DraftEdit) (string, error) {
	m, i, part := in.msg, e.Part, e.Text
	noFail := false
	send := &discordgo.MessageSend{Content: part, AllowedMentions: p.allowedMentions()}
	if i == 0 {
		send.Reference = &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, FailIfNotExists: &noFail}
	}
	posted, err := p.b.s.ChannelMessageSendComplex(m.ChannelID, send, discordgo.WithContext(ctx))
	if err != nil {
		return "", err
	}
	p.b.recent.put(posted)
	return posted.ID, nil
}

// FindDraft is the bot's first reply to in in the channel (a message
// referencing it), which a crash may have left unjournaled; "" when there
// is none or the channel cannot be read (logged).
func (p platform) FindDraft(ctx context.Context, in *incoming) string {
	m := in.msg
	msgs, err := p.b.s.ChannelMessages(m.ChannelID, 100, "", m.ID, "", discordgo.WithContext(ctx))
	if err != nil {
		in.Log.Warn("discord: cannot look for a reply a crash interrupted; answering anew (its first words may show twice)", "error", err)
		return ""
	}
	botID, _, _ := p.b.self()
	for i := len(msgs) - 1; i >= 0; i-- { // Discord answers newest first
		r := msgs[i]
		if r != nil && r.Author != nil && r.Author.ID == botID && r.MessageReference != nil && r.MessageReference.MessageID == m.ID {
			return r.ID
		}
	}
	return ""
}

// EditDraft edits a message of the reply to in (a final edit of an
// unchanged text is not sent).
func (p platform) EditDraft(ctx context.Context, in *incoming, e pipeline.DraftEdit) error {
	if e.Text == e.Shown {
		return nil
	}
	text := e.Text
	pe, err := p.b.pace.begin(ctx, in.msg.ChannelID)
	if err != nil {
		return err
	}
	edited, err := p.b.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: e.ID, Channel: in.msg.ChannelID, Content: &text,
		AllowedMentions: p.allowedMentions()}, discordgo.WithContext(ctx))
	p.b.pace.end(in.msg.ChannelID, pe)
	if err != nil {
		return err
	}
	p.b.recent.put(edited)
	return nil
}

// Posted is how many of parts, the reply to in, are in the channel
// already: the bot's reply to the message, then the following parts in
// order, among the messages after it. When they cannot be read, 0: the
// reply is posted whole, as answering twice is better than not at all.
func (p platform) Posted(ctx context.Context, in *incoming, parts []string) int {
	m := in.msg
	msgs, err := p.b.s.ChannelMessages(m.ChannelID, 100, "", m.ID, "", discordgo.WithContext(ctx))
	if err != nil {
		in.Log.Warn("discord: cannot read which parts of an interrupted reply were posted; posting all of it (it may appear twice)", "error", err)
		return 0
	}
	botID, _, _ := p.b.self()
	k := 0
	for i := len(msgs) - 1; i >= 0 && k < len(parts); i-- { // Discord answers newest first
		p := msgs[i]
		if p == nil || p.Author == nil || p.Author.ID != botID || p.Content != parts[k] {
			continue
		}
		if k > 0 || p.MessageReference != nil && p.MessageReference.MessageID == m.ID {
			k++
		}
	}
	return k
}

// Forget drops user's messages that wait for their turn (received, not
// being answered yet), from the queue and the intake journal, and returns
// how many: they are not answered, now or after a restart. user is the
// memory user name.
func (b *Bot) Forget(user string) int { return b.pipe.Forget(user) }

// Queued is the number of messages accepted and not answered yet (for
// the metrics).
func (b *Bot) Queued() int { return b.pipe.Queued() }

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
	return wireIncoming{Msg: slim(in.msg, true), DM: in.DM, User: in.User, Speaker: in.Speaker, Text: in.Text,
		Conversation: in.Conversation}
}

// slim is what the answer reads of m: ids, author, text, mentions and
// attachments (read again when it is answered), the message it answers
// (one level).
func slim(m *discordgo.Message, withRef bool) *discordgo.Message {
	if m == nil {
		return nil
	}
	content, _ := pipeline.CutIncoming(m.Content, MaxIncomingChars) // never journaled whole past the limit
	out := &discordgo.Message{ID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, Content: content,
		Timestamp: m.Timestamp, Author: m.Author, Member: m.Member, Mentions: m.Mentions, Type: m.Type,
		MessageReference: m.MessageReference, Attachments: m.Attachments}
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
	return &incoming{msg: w.Msg, Message: pipeline.Message{ID: e.ID, DM: w.DM, User: w.User, Speaker: w.Speaker, Text: w.Text,
		Conversation: w.Conversation,
		Log: log.With("message_id", w.Msg.ID, "channel", w.Msg.ChannelID, "guild", w.Msg.GuildID,
			"memory_user", w.User, "platform", "discord", "replayed", true)}}
}

// ForgetQueued drops user's messages waiting in the Discord intake journal
// in intakeDir, for `mnemo memory forget` while no serve runs.
func ForgetQueued(intakeDir, user string) (int, error) {
	return intake.ForgetFile(intakeDir, "discord", user)
}
