package slack

import (
	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// Remember uses the Remember this shortcut as the test's user, on their
// own message or Ana's, in the channel C1 or their DM D1.
func (b *slackBot) Remember(text string, own, inChannel bool) conformance.Kept {
	author, channel := slacktest.DefaultUserID, "D1"
	if !own {
		author = "U0ANA"
		b.hs.srv.SetUser(slacktest.User{ID: author, DisplayName: "Ana"})
	}
	if inChannel {
		channel = "C1"
	}
	n := len(b.hs.srv.Responses()) + 1
	b.hs.srv.MessageAction(slacktest.MessageAction{ChannelID: channel, MessageText: text, MessageUser: author})
	rs, err := b.hs.srv.WaitResponses(n, wait)
	if err != nil {
		b.t.Fatal(err)
	}
	r := rs[n-1]
	token := undoValue(b.t, r)
	undo := func(user string) func() string {
		return func() string {
			m := len(b.hs.srv.Responses()) + 1
			press(b.hs, user, actionRememberUndo, token)
			rs, err := b.hs.srv.WaitResponses(m, wait)
			if err != nil {
				b.t.Fatal(err)
			}
			return rs[m-1].Text
		}
	}
	return conformance.Kept{Text: r.Text, Undo: undo(slacktest.DefaultUserID), UndoOther: undo("U0BOB")}
}

var _ conformance.Keeping = (*slackBot)(nil)
