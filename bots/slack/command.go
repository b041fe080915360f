package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
)

// Block Kit action ids of the /memory forget confirmation.
const (
	actionForgetConfirm = "mnemo_memory_forget_confirm"
	actionForgetCancel  = "mnemo_memory_forget_cancel"
)

// maxAckBytes bounds an acknowledgement with a payload; Slack drops those
// of 20 KB or more.
const maxAckBytes = 15000

// responseMessage is a slash command or response_url answer.
type responseMessage struct {
	ResponseType    string          `json:"response_type,omitempty"`
	Text            string          `json:"text"`
	Blocks          []slackgo.Block `json:"blocks,omitempty"`
	ReplaceOriginal bool            `json:"replace_original,omitempty"`
}

func ephemeral(text string) responseMessage {
	return responseMessage{ResponseType: slackgo.ResponseTypeEphemeral, Text: text}
}

// onSlashCommand answers /memory: the answer goes in the acknowledgement
// when it is ready within ackBudget, else the envelope is acked empty and
// the answer POSTed to the command's response_url.
func (b *Bot) onSlashCommand(ctx, taskCtx context.Context, evt socketmode.Event) {
	cmd, _ := evt.Data.(slackgo.SlashCommand)
	envelope := evt.Request.EnvelopeID // socketmode sets Request on every slash command
	started := b.spawn(ctx, func() {
		done := make(chan responseMessage, 1)
		go func() {
			done <- b.memoryCommand(cmd.TeamID, cmd.TeamID, cmd.UserID, cmd.ChannelID, textUnescaper.Replace(cmd.Text),
				b.who(cmd.TeamID, cmd.ChannelID, cmd.UserID))
		}()
		timer := time.NewTimer(b.ackBudget)
		defer timer.Stop()
		select {
		case msg := <-done:
			if err := b.ack(ctx, envelope, fitAck(msg)); err != nil {
				b.respond(taskCtx, cmd.ResponseURL, fitAck(msg))
			}
		case <-timer.C:
			b.ack(ctx, envelope, nil)
			b.respond(taskCtx, cmd.ResponseURL, fitAck(<-done))
		}
	})
	if !started {
		b.ack(ctx, envelope, nil)
	}
}

// memoryCommand works out the answer to a /memory command, or to an
// "@mnemo memory …" mention (memorycmd.Flow, its Markdown converted to
// mrkdwn; a confirmation gets Delete and Cancel buttons). Whose memory,
// and which channel's, come from the workspace, the user's team, the user
// and the channel ids, never from the text (plain, unescaped); who is
// checked against the access policy.
func (b *Bot) memoryCommand(workspace, team, user, channel, text string, who access.Who) responseMessage {
	cmd := slackgo.SlashCommand{TeamID: workspace, UserID: user, ChannelID: channel}
	if !validID(cmd.TeamID) || !validID(team) || !validID(cmd.UserID) {
		return ephemeral("Sorry, I can't tell who you are from this command.")
	}
	// Someone not let in gets no memory, not even an empty folder.
	if b.cfg.Access != nil {
		if ok, reply := b.cfg.Access.CheckCommand(context.Background(), who); !ok {
			return ephemeral(toMrkdwn(reply))
		}
	}
	// The asker is the user in this workspace: a press must come from the
	// same user id and the same team (a user id says nothing of the team).
	asker := memorycmd.Asker{ID: cmd.TeamID + "/" + cmd.UserID, User: b.memoryUser(team, cmd.UserID), Own: "slack-" + team + "-" + cmd.UserID}
	if !strings.HasPrefix(cmd.ChannelID, "D") {
		// A channel (a group DM too), as its messages name its memory.
		asker.Channel = mnemo.ChannelKey("slack", cmd.TeamID, cmd.ChannelID)
	}
	ans := b.flow.Handle(memorycmd.Parse(text), asker)
	text = toMrkdwn(ans.Text)
	msg := ephemeral(text)
	if ans.Confirm == "" {
		return msg
	}
	section := slackgo.NewSectionBlock(slackgo.NewTextBlockObject(slackgo.MarkdownType, text, false, false), nil, nil)
	del := slackgo.NewButtonBlockElement(actionForgetConfirm, ans.Confirm,
		slackgo.NewTextBlockObject(slackgo.PlainTextType, "Delete", false, false)).WithStyle(slackgo.StyleDanger)
	cancel := slackgo.NewButtonBlockElement(actionForgetCancel, ans.Confirm,
		slackgo.NewTextBlockObject(slackgo.PlainTextType, "Cancel", false, false))
	msg.Blocks = []slackgo.Block{section, slackgo.NewActionBlock("mnemo_memory_forget", del, cancel)}
	return msg
}

// onInteractive handles the Delete and Cancel buttons (already acked).
func (b *Bot) onInteractive(ctx, taskCtx context.Context, evt socketmode.Event) {
	cb, ok := evt.Data.(slackgo.InteractionCallback)
	if ok && b.rememberInteraction(ctx, taskCtx, cb) {
		return // Remember this, or its Undo (remember.go)
	}
	if !ok || cb.Type != slackgo.InteractionTypeBlockActions || b.homeAction(ctx, taskCtx, cb) {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a != nil && (a.ActionID == actionForgetConfirm || a.ActionID == actionForgetCancel) {
			action, token := a.ActionID, a.Value
			b.spawn(ctx, func() { b.forgetButton(taskCtx, cb, action, token) })
			return
		}
	}
}

// forgetButton carries out a pressed Delete or Cancel button.
func (b *Bot) forgetButton(ctx context.Context, cb slackgo.InteractionCallback, action, token string) {
	text, wrongUser := b.flow.Button(token, cb.Team.ID+"/"+cb.User.ID, action == actionForgetConfirm)
	// Someone else's press is answered to them alone, leaving the
	// original confirmation in place.
	msg := responseMessage{ResponseType: slackgo.ResponseTypeEphemeral, ReplaceOriginal: !wrongUser, Text: toMrkdwn(text)}
	b.respond(ctx, cb.ResponseURL, msg)
}

// fitAck cuts a long answer (a listing) so the acknowledgement stays well
// under Slack's 20 KB limit, saying so at the cut.
func fitAck(msg responseMessage) responseMessage {
	size := func(m responseMessage) int {
		js, _ := json.Marshal(socketmode.Response{EnvelopeID: strings.Repeat("0", 36), Payload: m})
		return len(js)
	}
	n := size(msg)
	if n < maxAckBytes {
		return msg
	}
	body := msg.Text
	msg.Blocks = nil
	const note = "\n\n_(This list is cut here: it is too long for one Slack message. An admin can see all of it with `mnemo memory ls`.)_"
	keep := utf8.RuneCountInString(body)
	for {
		keep = keep * maxAckBytes / n * 9 / 10
		msg.Text = cutLines(body, keep) + note
		if n = size(msg); n < maxAckBytes || keep == 0 {
			return msg
		}
	}
}

// cutLines keeps at most max characters of mrkdwn text, cut at a line
// break when there is one, with an open code block closed.
func cutLines(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	s = string(r[:max])
	if i := strings.LastIndexByte(s, '\n'); i > 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, "\n")
	if strings.Count(s+"\n", fence+"\n")%2 == 1 {
		s += "\n" + fence
	}
	return s
}

// respond POSTs msg to a response_url (a slash command's or a button's).
func (b *Bot) respond(ctx context.Context, responseURL string, msg responseMessage) {
	if !b.allowedResponseURL(responseURL) {
		b.log.Warn("slack: not answering at an unexpected response_url", "host", hostOf(responseURL))
		return
	}
	body, _ := json.Marshal(msg)
	// The URL parsed above, so the request can be made.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := b.http.Do(req)
	if err != nil {
		b.log.Warn("slack: cannot answer at the response_url", "error", err)
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		b.log.Warn("slack: the response_url refused the answer", "status", resp.StatusCode)
	}
}

// allowedResponseURL: only Slack's own addresses (or the configured API
// host, for tests and proxies) receive answers.
func (b *Bot) allowedResponseURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == b.apiURL.Scheme && u.Host == b.apiURL.Host {
		return true
	}
	h := strings.ToLower(u.Hostname())
	return u.Scheme == "https" && (h == "slack.com" || strings.HasSuffix(h, ".slack.com"))
}

func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Host
	}
	return ""
}

// memoryMention answers "@mnemo memory …" in a channel or a thread, where
// Slack runs no slash command: the /memory flow with the same words,
// answered to the person alone (chat.postEphemeral, in the thread when
// written in one), never posted for all and never given to the model.
// It reports whether m was such a mention (its envelope is then acked).
func (b *Bot) memoryMention(ctx, taskCtx context.Context, req *socketmode.Request, m *incoming) bool {
	text := strings.TrimSpace(m.Text)
	end := strings.IndexFunc(text, unicode.IsSpace)
	if end < 0 {
		end = len(text)
	}
	if m.DM || !strings.EqualFold(text[:end], "memory") {
		return false
	}
	rest := text[end:]
	b.ackRequest(ctx, req)
	b.spawn(ctx, func() {
		msg := fitAck(b.memoryCommand(m.workspace, m.team, m.author, m.channel, rest, m.Who))
		opts := []slackgo.MsgOption{slackgo.MsgOptionText(msg.Text, false), slackgo.MsgOptionDisableLinkUnfurl()}
		if len(msg.Blocks) > 0 {
			opts = append(opts, slackgo.MsgOptionBlocks(msg.Blocks...))
		}
		if m.threadTS != "" {
			opts = append(opts, slackgo.MsgOptionTS(m.threadTS))
		}
		err := b.patiently(taskCtx, "chat.postEphemeral", m.channel, func() error {
			_, err := b.api.PostEphemeralContext(taskCtx, m.channel, m.author, opts...)
			return err
		})
		if err != nil {
			m.Log.Warn("slack: cannot answer a memory mention", "error", err)
		}
	})
	return true
}
