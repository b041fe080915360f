package discord

// "Remember this": a message context-menu command (application command
// type 3, MESSAGE), registered with /memory. Its interaction names the
// message (data.target_id) and carries it (data.resolved.messages). It is
// answered at once with a deferred ephemeral response (Discord wants an
// answer within 3 s), then the message is kept in the background
// (bots/internal/remember) in the private memory of the person who chose
// it, and the deferred response is edited to the confirmation with an
// Undo button, which only they may press.

import (
	"context"
	"log/slog"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/markdown"
	"github.com/mnemo-agent/mnemo/bots/internal/remember"
)

// rememberName is the context-menu command's name (1–32 characters; a
// MESSAGE command has no description). buttonUndo prefixes the Undo
// button's custom id, followed by its token.
const (
	rememberName = "Remember this"
	buttonUndo   = "mnemo_remember_undo:"
)

// rememberCommand is the "Remember this" message command.
func rememberCommand() *discordgo.ApplicationCommand {
	return &discordgo.ApplicationCommand{Name: rememberName, Type: discordgo.MessageApplicationCommand}
}

// rememberInteraction takes the command and its Undo button; it reports
// whether i was one of them (then answered in the background).
func (b *Bot) rememberInteraction(i *discordgo.Interaction, asker string, log *slog.Logger) bool {
	var run func()
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		data := i.ApplicationCommandData()
		if data.CommandType != discordgo.MessageApplicationCommand || data.Name != rememberName {
			return false
		}
		run = func() { b.rememberThis(i, asker, log) }
	case discordgo.InteractionMessageComponent:
		token, ok := strings.CutPrefix(i.MessageComponentData().CustomID, buttonUndo)
		if !ok {
			return false
		}
		run = func() { b.rememberUndo(i, asker, token, log) }
	default:
		return false
	}
	b.goInteraction("Remember this", asker, log, run)
	return true
}

// keepFlow is "Remember this" with the bot's access rules and budgets.
func (b *Bot) keepFlow() *remember.Flow {
	return &remember.Flow{Service: b.cfg.Keeper, Access: b.cfg.Access, Budget: b.cfg.Budget, Refusals: b.cfg.Refusals,
		Platform: "discord", Log: b.log}
}

// rememberThis keeps the message the command was used on: deferred
// (ephemeral) first, then edited to the confirmation.
func (b *Bot) rememberThis(i *discordgo.Interaction, asker string, log *slog.Logger) {
	ctx := context.Background()
	if !b.deferEphemeral(ctx, i, "Remember this", log) {
		return
	}
	ans := remember.Answer{Text: "Sorry, Remember this is not available here."}
	data := i.ApplicationCommandData()
	var msg *discordgo.Message
	if data.Resolved != nil {
		msg = data.Resolved.Messages[data.TargetID]
	}
	switch {
	case b.cfg.Keeper == nil:
	case msg == nil || msg.Author == nil || !snowflake(data.TargetID):
		ans.Text = "Sorry, Discord did not send me that message, so nothing was kept."
	default:
		ans = b.keepFlow().Keep(ctx, b.keepMessage(ctx, i, asker, data.TargetID, msg), who(i.GuildID, i.ChannelID, asker, i.Member))
	}
	edit := &discordgo.WebhookEdit{Content: ptr(fitMessage(markdown.Discord(ans.Text))), AllowedMentions: noMentions()}
	if ans.Undo != "" {
		edit.Components = &[]discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Undo", Style: discordgo.SecondaryButton, CustomID: buttonUndo + ans.Undo},
		}}}
	}
	if _, err := b.s.InteractionResponseEdit(i, edit, discordgo.WithContext(ctx)); err != nil {
		log.Warn("discord: cannot answer Remember this", "error", err)
		return
	}
	log.Info("discord: Remember this answered", "kept", ans.Kept)
}

// keepMessage is msg as kept for asker: its text, author, time, place and
// link (https://discord.com/channels/<guild or @me>/<channel>/<message>).
func (b *Bot) keepMessage(ctx context.Context, i *discordgo.Interaction, asker, id string, msg *discordgo.Message) remember.Message {
	speaker := ""
	switch {
	case i.Member != nil:
		speaker = displayName(i.Member.User, i.Member)
	case i.User != nil:
		speaker = displayName(i.User, nil)
	}
	channel := i.ChannelID
	m := remember.Message{User: b.memoryUser(asker), Speaker: speaker, Platform: "discord",
		Own: msg.Author.ID == asker, Text: msg.Content, Time: msg.Timestamp.UTC(), // zero: the app takes now
		Origin: origin(i.GuildID, channel, id)}
	if !m.Own {
		m.Author = displayName(msg.Author, msg.Member)
	}
	m.Origin.Place = "dm"
	if i.GuildID != "" {
		home, thread := b.channels.home(ctx, channel)
		m.Origin.Place = "#" + home
		if thread {
			m.Origin.Place += " thread"
		}
	}
	return m
}

// rememberUndo carries out a pressed Undo: the confirmation is replaced by
// the outcome; someone else's press gets a private note instead.
func (b *Bot) rememberUndo(i *discordgo.Interaction, asker, token string, log *slog.Logger) {
	ctx := context.Background()
	err := b.s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate},
		discordgo.WithContext(ctx))
	if err != nil {
		log.Warn("discord: cannot acknowledge an Undo", "error", err)
		return
	}
	text, done := "Sorry, Remember this is not available here.", false
	if b.cfg.Keeper != nil {
		text, done = b.keepFlow().Undo(b.memoryUser(asker), token)
	}
	text = fitMessage(markdown.Discord(text))
	if done {
		_, err = b.s.InteractionResponseEdit(i, &discordgo.WebhookEdit{
			Content: &text, Components: &[]discordgo.MessageComponent{}, AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx))
	} else {
		_, err = b.s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{
			Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx))
	}
	if err != nil {
		log.Warn("discord: cannot answer an Undo", "error", err)
		return
	}
	log.Info("discord: Remember this undo", "done", done)
}
