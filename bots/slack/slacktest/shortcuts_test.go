package slacktest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// A message shortcut arrives as slack-go decodes Slack's own payload:
// defaults filled in, a bot's message as a bot's, and its response_url
// answered on this server.
func TestMessageAction(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, _ := connected(t, api)
	env := srv.MessageAction(MessageAction{MessageText: "keep me", MessageUser: "U0ANA", ThreadTS: "1700000000.000001"})
	ev := c.next(t, socketmode.EventTypeInteractive)
	cb := ev.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeMessageAction || cb.CallbackID != "remember_this" || cb.User.ID != DefaultUserID ||
		cb.User.TeamID != DefaultTeamID || cb.Team.ID != DefaultTeamID || cb.Channel.ID != DefaultDMChannel ||
		cb.Message.Text != "keep me" || cb.Message.User != "U0ANA" || cb.Message.Timestamp == "" ||
		cb.Message.ThreadTimestamp != "1700000000.000001" || cb.TriggerID == "" || cb.ResponseURL != env.ResponseURL {
		t.Fatalf("message_action = %+v", cb)
	}
	srv.MessageAction(MessageAction{CallbackID: "other", ChannelID: "C1", MessageText: "build green", BotID: "B0CI", Username: "ci"})
	cb = c.next(t, socketmode.EventTypeInteractive).Data.(slack.InteractionCallback)
	if cb.CallbackID != "other" || cb.Message.BotID != "B0CI" || cb.Message.Username != "ci" || cb.Message.User != "" {
		t.Fatalf("a bot's message = %+v", cb.Message)
	}
	resp, err := http.Post(env.ResponseURL, "application/json", strings.NewReader(`{"text":"Kept.","response_type":"ephemeral"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if rs, err := srv.WaitResponses(1, wait); err != nil || rs[0].Text != "Kept." || !strings.HasPrefix(rs[0].Path, "/actions/") {
		t.Fatalf("responses %+v, %v", rs, err)
	}
}
