package discord

import (
	"context"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/markdown"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/split"
)

// Custom ids of the /memory forget buttons: prefix + token.
const (
	buttonConfirm = "mnemo_forget_confirm:"
	buttonCancel  = "mnemo_forget_cancel:"
)

// memoryCommand is the /memory application command.
var memoryCommand = discordgo.ApplicationCommand{
	Name:        "memory",
	Description: "See what mnemo remembers about you and why, share or keep private a file, or make it forget",
	Options: []*discordgo.ApplicationCommandOption{
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "show", Description: "Show what mnemo remembers about you (only you see the answer)"},
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "forget", Description: "Delete one memory file, or all of it (asks you to confirm)",
			Options: []*discordgo.ApplicationCommandOption{{
				Type: discordgo.ApplicationCommandOptionString, Name: "file", Required: true, MaxLength: 100,
				Description: "facts/<name>.md, episodes/YYYY-MM.md, or all",
			}}},
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "share", Description: "Let mnemo use one of your memory files in channels too",
			Options: []*discordgo.ApplicationCommandOption{fileOption}},
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "private", Description: "Keep one of your memory files to private conversations (DMs)",
			Options: []*discordgo.ApplicationCommandOption{fileOption}},
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "why", Description: "Where mnemo learned what it remembers about something, and who changed it",
			Options: []*discordgo.ApplicationCommandOption{{
				Type: discordgo.ApplicationCommandOptionString, Name: "text", Required: true, MaxLength: 200,
				Description: "words of what it remembers, e.g. Berlin",
			}}},
		{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "help", Description: "How /memory works"},
	},
}

// fileOption names the file /memory share and /memory private change.
var fileOption = &discordgo.ApplicationCommandOption{
	Type: discordgo.ApplicationCommandOptionString, Name: "file", Required: true, MaxLength: 100,
	Description: "facts/<name>.md or episodes/YYYY-MM.md, as /memory show lists them",
}

// registerCommands registers /memory and the Remember this message
// command (remember.go) once per process (by shard 0 only,
// so several shards do not overwrite each other), per listed guild or
// globally. A failure is logged: chat still works without /memory.
func (b *Bot) registerCommands(ctx context.Context) {
	_, _, appID := b.self()
	if b.cfg.ShardID != 0 || appID == "" { // no application id yet: the next READY brings it
		return
	}
	b.mu.Lock()
	done := b.commands
	b.commands = true
	b.mu.Unlock()
	if done {
		return
	}
	cmd := memoryCommand
	guilds := b.cfg.GuildIDs
	if len(guilds) == 0 {
		guilds = []string{""}
	}
	for _, g := range guilds {
		if _, err := b.s.ApplicationCommandBulkOverwrite(appID, g, []*discordgo.ApplicationCommand{&cmd, rememberCommand()}, discordgo.WithContext(ctx)); err != nil {
			b.log.Error("discord: cannot register /memory; is the bot invited with the applications.commands scope?", "guild", g, "error", err)
			continue
		}
		where := "globally (it can take up to an hour to appear)"
		if g != "" {
			where = "in guild " + g
		}
		b.log.Info("discord: /memory registered " + where)
	}
}

// onInteraction answers /memory and its buttons. It acknowledges at once
// (deferred) and does the work in a goroutine, so Discord's 3-second
// window is kept whatever the memory store does.
func (b *Bot) onInteraction(_ *discordgo.Session, e *discordgo.InteractionCreate) {
	i := e.Interaction
	if i == nil {
		return
	}
	asker := ""
	switch {
	case i.Member != nil && i.Member.User != nil:
		asker = i.Member.User.ID
	case i.User != nil:
		asker = i.User.ID
	}
	log := b.log.With("interaction_id", i.ID, "user", asker, "platform", "discord")
	if b.rememberInteraction(i, asker, log) {
		return // Remember this, or its Undo (remember.go)
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		if i.ApplicationCommandData().Name != memoryCommand.Name {
			return
		}
	case discordgo.InteractionMessageComponent:
		id := i.MessageComponentData().CustomID
		if !strings.HasPrefix(id, buttonConfirm) && !strings.HasPrefix(id, buttonCancel) {
			return
		}
	default:
		return
	}
	b.goInteraction("/memory", asker, log, func() {
		if i.Type == discordgo.InteractionApplicationCommand {
			b.slashCommand(i, asker, log)
		} else {
			b.button(i, asker, log)
		}
	})
}

// goInteraction does an interaction's work on a goroutine of the bot's
// (Close waits for it), off the gateway's event loop; a panic is logged
// with what panicked and never reaches the gateway, and an interaction
// without a user is ignored.
func (b *Bot) goInteraction(what, asker string, log *slog.Logger, run func()) {
	b.goSafe(what, log, func() {
		if !snowflake(asker) {
			log.Warn("discord: interaction without a user; ignored")
			return
		}
		run()
	})
}

// goSafe runs work on a goroutine of the bot's, a panic logged as what's.
func (b *Bot) goSafe(what string, log *slog.Logger, work func()) {
	b.wg.Go(func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("discord: "+what+" panicked", "panic", r, "stack", string(debug.Stack()))
			}
		}()
		work()
	})
}

// deferEphemeral acknowledges i with a deferred answer only its user
// sees (Discord wants an answer within 3 s; the work takes longer); false,
// logged, when Discord refused it.
func (b *Bot) deferEphemeral(ctx context.Context, i *discordgo.Interaction, what string, log *slog.Logger) bool {
	err := b.s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral},
	}, discordgo.WithContext(ctx))
	if err != nil {
		log.Warn("discord: cannot acknowledge "+what, "error", err)
		return false
	}
	return true
}

// slashCommand answers /memory: deferred (ephemeral), then edited.
func (b *Bot) slashCommand(i *discordgo.Interaction, asker string, log *slog.Logger) {
	ctx := context.Background()
	if !b.deferEphemeral(ctx, i, "/memory", log) {
		return
	}
	cmd := memorycmd.Command{Kind: memorycmd.Show}
	data := i.ApplicationCommandData()
	if len(data.Options) > 0 {
		sub := data.Options[0]
		switch sub.Name {
		case "forget":
			cmd.Kind = memorycmd.Forget
		case "share":
			cmd.Kind = memorycmd.Share
		case "private":
			cmd.Kind = memorycmd.Private
		case "help":
			cmd.Kind = memorycmd.Help
		case "why":
			cmd.Kind = memorycmd.Why
		}
		for _, o := range sub.Options {
			if v, ok := o.Value.(string); ok && (o.Name == "file" || o.Name == "text") && cmd.Kind != memorycmd.Help {
				cmd.Target = strings.TrimSpace(v)
			}
		}
	}
	// Someone not let in gets no memory, not even an empty folder.
	if b.cfg.Access != nil {
		if ok, reply := b.cfg.Access.CheckCommand(ctx, who(i.GuildID, i.ChannelID, asker, i.Member)); !ok {
			if _, err := b.s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: ptr(fitMessage(markdown.Discord(reply))),
				AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); err != nil {
				log.Warn("discord: cannot answer /memory", "error", err)
			}
			return
		}
	}
	ans := b.flow.Handle(cmd, b.askerFor(ctx, i.GuildID, i.ChannelID, asker))
	edit := &discordgo.WebhookEdit{Content: ptr(fitMessage(markdown.Discord(ans.Text))), AllowedMentions: noMentions()}
	if ans.Confirm != "" {
		edit.Components = ptr(forgetButtons(ans.Confirm))
	}
	if _, err := b.s.InteractionResponseEdit(i, edit, discordgo.WithContext(ctx)); err != nil {
		log.Warn("discord: cannot answer /memory", "error", err)
		return
	}
	log.Info("discord: /memory answered", "forget", cmd.Kind == memorycmd.Forget, "confirm", ans.Confirm != "",
		"visibility", cmd.Kind == memorycmd.Share || cmd.Kind == memorycmd.Private)
}

// button carries out Delete or Cancel: the original message is replaced
// by the outcome; someone else's press gets a private note instead.
func (b *Bot) button(i *discordgo.Interaction, asker string, log *slog.Logger) {
	ctx := context.Background()
	id := i.MessageComponentData().CustomID
	confirm := strings.HasPrefix(id, buttonConfirm)
	token := strings.TrimPrefix(strings.TrimPrefix(id, buttonConfirm), buttonCancel)
	err := b.s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate},
		discordgo.WithContext(ctx))
	if err != nil {
		log.Warn("discord: cannot acknowledge a /memory button", "error", err)
		return
	}
	text, wrongUser := b.flow.Button(token, asker, confirm)
	text = fitMessage(markdown.Discord(text))
	if wrongUser {
		_, err = b.s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{
			Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx))
	} else {
		_, err = b.s.InteractionResponseEdit(i, &discordgo.WebhookEdit{
			Content: &text, Components: &[]discordgo.MessageComponent{}, AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx))
	}
	if err != nil {
		log.Warn("discord: cannot answer a /memory button", "error", err)
		return
	}
	log.Info("discord: /memory button", "confirm", confirm, "wrong_user", wrongUser)
}

// fitMessage keeps an answer within one Discord message, saying so at the
// cut.
func fitMessage(s string) string {
	const note = "\n\n*(This list is cut here: it is too long for one Discord message. An admin can see all of it with `mnemo memory ls`.)*"
	if len([]rune(s)) <= maxMessageRunes {
		return s
	}
	parts := split.Text(s, maxMessageRunes-len([]rune(note)))
	return parts[0] + note
}

func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

func ptr[T any](v T) *T { return &v }
