package discord

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/markdown"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
)

// Texts of a memory mention, posted in the channel for everyone to see:
// they say nothing of anyone's memory.
const (
	mentionSentText = "I sent you a DM with your answer."
	mentionNoDMText = "I could not DM you; use /memory here."
	mentionSeenMax  = 1000 // memory mentions remembered against a RESUME replay
)

// memoryWord reports whether a guild message that mentions the bot is
// "@mnemo memory …": the message starts with the bot's mention, and the
// first word after it is "memory" (any case). It returns the words after
// it, as /memory would get them.
func memoryWord(m *discordgo.Message, text, botID string) (string, bool) {
	content := strings.TrimLeftFunc(m.Content, unicode.IsSpace)
	if m.GuildID == "" || botID == "" ||
		!strings.HasPrefix(content, "<@"+botID+">") && !strings.HasPrefix(content, "<@!"+botID+">") {
		return "", false
	}
	text = strings.TrimSpace(text)
	end := strings.IndexFunc(text, unicode.IsSpace)
	if end < 0 {
		end = len(text)
	}
	if !strings.EqualFold(text[:end], "memory") {
		return "", false
	}
	return text[end:], true
}

// mentionSeen remembers the memory mentions answered, so that a message
// Discord replays after a RESUME is not answered twice (they are never
// journaled, where the pipeline dedupes the others).
type mentionSeen struct {
	mu    sync.Mutex
	ids   map[string]bool
	order []string
}

// first reports whether id is seen for the first time, and remembers it.
func (s *mentionSeen) first(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	if s.ids[id] {
		return false
	}
	s.ids[id] = true
	s.order = append(s.order, id)
	if len(s.order) > mentionSeenMax {
		delete(s.ids, s.order[0])
		s.order = s.order[1:]
	}
	return true
}

// memoryMention answers "@mnemo memory …" in a guild channel or thread
// (Discord has no ephemeral message outside an interaction): the /memory
// flow with the same words and the same view as /memory there (the
// channel's memory, the person's shared files), sent to the person by DM
// with the same Delete and Cancel buttons for a forget, and a short note
// in the channel saying so — or, when no DM can be sent, a note to use
// /memory there, with nothing private in it. It is never journaled,
// posted as a reply or given to the model. It reports whether m was such
// a mention; it runs on the event goroutine and does its work on another.
func (b *Bot) memoryMention(m *discordgo.Message, in *incoming, botID string) bool {
	rest, ok := memoryWord(m, in.Text, botID)
	if !ok {
		return false
	}
	if !b.mentions.first(m.ID) {
		return true // a replay: answered already
	}
	log := in.Log
	b.goSafe("a memory mention", log, func() { b.answerMemoryMention(context.Background(), m, rest, log) })
	return true
}

// answerMemoryMention works out the answer and delivers it (see
// memoryMention).
func (b *Bot) answerMemoryMention(ctx context.Context, m *discordgo.Message, rest string, log *slog.Logger) {
	var text, confirm string
	// Someone not let in gets no memory, not even an empty folder; their
	// refusal (a pairing code, maybe) is theirs: it goes by DM too, at
	// most once an hour, as for a message.
	if b.cfg.Access != nil {
		if ok, reply := b.cfg.Access.Check(ctx, who(m.GuildID, m.ChannelID, m.Author.ID, m.Member)); !ok {
			if reply == "" {
				return
			}
			text = markdown.Discord(reply)
		}
	}
	if text == "" {
		ans := b.flow.Handle(memorycmd.Parse(rest), b.askerFor(ctx, m.GuildID, m.ChannelID, m.Author.ID))
		// The DM names the channel: the answer is that channel's view.
		text, confirm = "*Your `/memory` in <#"+m.ChannelID+">:*\n\n"+markdown.Discord(ans.Text), ans.Confirm
	}
	note := mentionSentText
	if err := b.sendDM(ctx, m.Author.ID, fitMessage(text), confirm); err != nil {
		log.Info("discord: cannot DM the answer to a memory mention; saying so in the channel", "error", redactErr(err))
		note = mentionNoDMText
	}
	noFail := false
	_, err := b.s.ChannelMessageSendComplex(m.ChannelID, &discordgo.MessageSend{Content: note, AllowedMentions: noMentions(),
		Reference: &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, FailIfNotExists: &noFail}},
		discordgo.WithContext(ctx))
	if err != nil {
		log.Warn("discord: cannot answer a memory mention in the channel", "error", redactErr(err))
		return
	}
	log.Info("discord: memory mention answered", "dm", note == mentionSentText, "confirm", confirm != "")
}

// sendDM sends text to user in their DM with the bot, with the Delete and
// Cancel buttons of confirm when it is not "".
func (b *Bot) sendDM(ctx context.Context, user, text, confirm string) error {
	ch, err := b.s.UserChannelCreate(user, discordgo.WithContext(ctx))
	if err != nil {
		return err
	}
	send := &discordgo.MessageSend{Content: text, AllowedMentions: noMentions()}
	if confirm != "" {
		send.Components = forgetButtons(confirm)
	}
	_, err = b.s.ChannelMessageSendComplex(ch.ID, send, discordgo.WithContext(ctx))
	return err
}

// askerFor is who asks /memory, and where: whose memory, and which
// channel's, come from the event, never from the text given. In a guild
// the channel's memory is the one its messages use (a thread's is its
// parent channel's, a private thread's its own).
func (b *Bot) askerFor(ctx context.Context, guild, channel, user string) memorycmd.Asker {
	a := memorycmd.Asker{ID: user, User: b.memoryUser(user), Own: "discord-" + user}
	if guild != "" {
		home, _ := b.channels.home(ctx, channel)
		a.Channel = mnemo.ChannelKey("discord", home)
	}
	return a
}

// forgetButtons are the Delete and Cancel buttons of a forget's
// confirmation.
func forgetButtons(token string) []discordgo.MessageComponent {
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{Label: "Delete", Style: discordgo.DangerButton, CustomID: buttonConfirm + token},
		discordgo.Button{Label: "Cancel", Style: discordgo.SecondaryButton, CustomID: buttonCancel + token},
	}}}
}
