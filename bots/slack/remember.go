package slack

// "Remember this": a message shortcut (manifest: features.shortcuts, type
// message, callback_id remember_this). Slack sends a message_action over
// the socket; it is acked at once (Slack wants it within 3 s) and the
// message kept in the background (bots/internal/remember), in the private
// memory of the person who chose it, wherever they chose it. The
// confirmation goes to the shortcut's response_url (ephemeral: only they
// see it) with an Undo button, which only they may press.

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo"

	"github.com/mnemo-agent/mnemo/bots/internal/remember"
)

// Ids of the shortcut (as the manifest names it) and of the Undo button.
const (
	callbackRemember   = "remember_this"
	actionRememberUndo = "mnemo_remember_undo"
)

// rememberInteraction handles the shortcut and its Undo button (already
// acked); it reports whether cb was one of them.
func (b *Bot) rememberInteraction(ctx, taskCtx context.Context, cb slackgo.InteractionCallback) bool {
	switch cb.Type {
	case slackgo.InteractionTypeMessageAction:
		if cb.CallbackID != callbackRemember {
			return false
		}
		b.spawn(ctx, func() { b.rememberThis(taskCtx, cb) })
		return true
	case slackgo.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			if a != nil && a.ActionID == actionRememberUndo {
				token := a.Value
				b.spawn(ctx, func() { b.rememberUndo(taskCtx, cb, token) })
				return true
			}
		}
	}
	return false
}

// keepFlow is "Remember this" with the bot's access rules and budgets.
func (b *Bot) keepFlow() *remember.Flow {
	return &remember.Flow{Service: b.cfg.Keeper, Access: b.cfg.Access, Budget: b.cfg.Budget, Refusals: b.cfg.Refusals,
		Platform: "slack", Log: b.log}
}

// rememberThis keeps the message cb points at for the person who chose
// it, and tells them (ephemerally, at the response_url) what was written.
func (b *Bot) rememberThis(ctx context.Context, cb slackgo.InteractionCallback) {
	workspace, user, channel := cb.Team.ID, cb.User.ID, cb.Channel.ID
	team := cmp.Or(cb.User.TeamID, workspace)
	if !validID(workspace) || !validID(team) || !validID(user) || !validID(channel) {
		b.respond(ctx, cb.ResponseURL, ephemeral("Sorry, I can't tell who you are from this shortcut."))
		return
	}
	if b.cfg.Keeper == nil {
		b.respond(ctx, cb.ResponseURL, ephemeral("Sorry, Remember this is not available here."))
		return
	}
	msg := cb.Message
	text := textUnescaper.Replace(msg.Text)
	author := msg.User
	m := remember.Message{User: b.memoryUser(team, user), Speaker: b.userName(ctx, user), Platform: "slack",
		Own: author == user, Text: text, Time: slackTime(msg.Timestamp, b.now()),
		Origin: b.messageOrigin(channel, msg.Timestamp, msg.ThreadTimestamp)}
	switch {
	case m.Own:
	case author != "":
		m.Author = cmp.Or(b.userName(ctx, author), author)
	default:
		m.Author = cmp.Or(msg.Username, "a bot") // a bot's or an app's message
	}
	ans := b.keepFlow().Keep(ctx, m, b.who(workspace, channel, user, cb.User.TeamID))
	b.respond(ctx, cb.ResponseURL, keptMessage(ans))
}

// messageOrigin is where the message ts of channel was written (origin).
func (b *Bot) messageOrigin(channel, ts, threadTS string) mnemo.Origin {
	in := &incoming{channel: channel, ts: ts, threadTS: threadTS}
	in.DM = strings.HasPrefix(channel, "D") // a DM; a group DM (G…/C…) counts as a channel
	return b.origin(in)
}

// keptMessage is the confirmation: the text, and an Undo button when there
// is something to undo.
func keptMessage(ans remember.Answer) responseMessage {
	text := toMrkdwn(ans.Text)
	msg := ephemeral(text)
	if ans.Undo == "" {
		return msg
	}
	section := slackgo.NewSectionBlock(slackgo.NewTextBlockObject(slackgo.MarkdownType, text, false, false), nil, nil)
	undo := slackgo.NewButtonBlockElement(actionRememberUndo, ans.Undo,
		slackgo.NewTextBlockObject(slackgo.PlainTextType, "Undo", false, false))
	msg.Blocks = []slackgo.Block{section, slackgo.NewActionBlock("mnemo_remember", undo)}
	return msg
}

// rememberUndo carries out a pressed Undo: the confirmation is replaced by
// the outcome; someone else's press is answered to them alone.
func (b *Bot) rememberUndo(ctx context.Context, cb slackgo.InteractionCallback, token string) {
	team := cmp.Or(cb.User.TeamID, cb.Team.ID)
	if !validID(team) || !validID(cb.User.ID) || b.cfg.Keeper == nil {
		b.respond(ctx, cb.ResponseURL, ephemeral("Sorry, I can't tell who you are from this button."))
		return
	}
	text, done := b.keepFlow().Undo(b.memoryUser(team, cb.User.ID), token)
	b.respond(ctx, cb.ResponseURL, responseMessage{ResponseType: slackgo.ResponseTypeEphemeral, ReplaceOriginal: done, Text: toMrkdwn(text)})
}

// slackTime is the time of a message ts ("1763636400.000100"), or now
// when it is not one.
func slackTime(ts string, now time.Time) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s <= 0 {
		return now
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000).UTC()
}
