package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// mentionAnswer sends "@mnemo <text>" in C0CHAN (in thread threadTS when
// set) and returns the n-th chat.postEphemeral it brought, after checking
// the envelope was acked.
func mentionAnswer(t *testing.T, hs *harness, text, threadTS string, n int) slacktest.Post {
	t.Helper()
	env := hs.srv.AppMention(slacktest.AppMentionEvent{Text: "<@" + hs.srv.Options().BotUserID + "> " + text, ThreadTS: threadTS})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.srv.WaitCalls("chat.postEphemeral", n, wait); err != nil {
		t.Fatalf("@mnemo %s: %v", text, err)
	}
	return hs.srv.Chat("chat.postEphemeral")[n-1]
}

// buttonValue is the value of the button actionID in Block Kit blocks.
func buttonValue(t *testing.T, raw json.RawMessage, actionID string) string {
	t.Helper()
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("blocks %s: %v", raw, err)
	}
	for _, b := range blocks {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}

// TestMemoryMention: "@mnemo memory …" in a thread or a channel, where
// Slack runs no slash command, is /memory answered to the person alone —
// never posted, never handed to the model.
func TestMemoryMention(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.Identities = map[string]string{"slack:T0TEAM/U0USER": "zhangsan"} }})
	hs.mem.ShowText = "facts/food.md: ramen"
	root := hs.srv.NextTS()

	tests := []struct {
		text, threadTS, want string
	}{
		{"memory", root, "ramen"},
		{"Memory   show", "", "ramen"},
		{"memory\nls", root, "ramen"},
		{"memory help", root, "/memory forget all"},
		{"memory bogus <@U1>", root, "I don't know"},
	}
	for i, tt := range tests {
		p := mentionAnswer(t, hs, tt.text, tt.threadTS, i+1)
		if p.Channel != slacktest.DefaultChannel || p.User != slacktest.DefaultUserID || p.ThreadTS != tt.threadTS ||
			!strings.Contains(p.Text, tt.want) {
			t.Errorf("@mnemo %q: %+v", tt.text, p)
		}
		checkNoPing(t, p.Text, true)
	}
	// The channel's memory, as /memory in the channel shows: never a DM's.
	for _, ch := range hs.mem.ShownChannels() {
		if ch != mnemo.ChannelKey("slack", "T0TEAM", slacktest.DefaultChannel) {
			t.Errorf("shown with channel %q", ch)
		}
	}
	if got := hs.mem.Shown(); len(got) == 0 || got[0] != "zhangsan" {
		t.Errorf("shown for %v", got)
	}

	// forget: the same Delete and Cancel buttons, pressed by the owner.
	p := mentionAnswer(t, hs, "memory forget facts/food.md", root, len(tests)+1)
	token := buttonValue(t, p.Blocks, actionForgetConfirm)
	if token == "" || buttonValue(t, p.Blocks, actionForgetCancel) != token || !strings.Contains(p.Text, "facts/food.md") {
		t.Fatalf("confirmation %+v", p)
	}
	if len(hs.mem.Forgotten()) != 0 {
		t.Fatal("deleted before confirmation")
	}
	press(hs, "U0OTHER", actionForgetConfirm, token)
	if _, err := hs.srv.WaitResponses(1, wait); err != nil {
		t.Fatal(err)
	}
	press(hs, "U0USER", actionForgetConfirm, token)
	rs, err := hs.srv.WaitResponses(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	if got := hs.mem.Forgotten(); len(got) != 1 || got[0] != "zhangsan:facts/food.md" ||
		!strings.Contains(rs[0].Text, "someone else") || !strings.Contains(rs[1].Text, "Done") {
		t.Errorf("forgotten %v; responses %+v", got, rs)
	}

	if len(hs.srv.Posts()) != 0 || len(hs.h.Tasks()) != 0 {
		t.Fatalf("posted %+v; handed to the model %+v", hs.srv.Posts(), hs.h.Tasks())
	}
	// Other words starting with "memory" are a message like any other.
	hs.srv.AppMention(slacktest.AppMentionEvent{Text: "<@" + hs.srv.Options().BotUserID + "> memorize this", ThreadTS: root})
	if tasks := hs.h.WaitTasks(t, 1, wait); !strings.Contains(tasks[0].Text, "memorize this") {
		t.Errorf("task %+v", tasks[0])
	}
}

// TestMemoryMentionRefused: someone not let in gets the refusal, to them
// alone, and no memory.
func TestMemoryMentionRefused(t *testing.T) {
	hs := start(t, gated(access.Policy{Mode: access.Allowlist}))
	hs.mem.ShowText = "facts/food.md: ramen"
	p := mentionAnswer(t, hs, "memory", "", 1)
	if strings.Contains(p.Text, "ramen") || p.User != slacktest.DefaultUserID || len(hs.mem.Shown()) != 0 {
		t.Errorf("refused: %+v; shown %v", p, hs.mem.Shown())
	}
}

// TestMemoryMentionFails: an answer Slack refuses is logged, and nothing
// is posted for the channel instead.
func TestMemoryMentionFails(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("chat.postEphemeral", slacktest.APIError("user_not_in_channel"))
	env := hs.srv.AppMention(slacktest.AppMentionEvent{Text: "<@U0BOT> memory", ThreadTS: hs.srv.NextTS()})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot answer a memory mention") })
	if len(hs.srv.Posts()) != 0 || len(hs.h.Tasks()) != 0 {
		t.Fatalf("posted %+v; tasks %+v", hs.srv.Posts(), hs.h.Tasks())
	}
}
