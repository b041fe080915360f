package slack

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// press sends the block_actions envelope Slack sends when user presses
// the button actionID carrying value.
func press(hs *harness, user, actionID, value string) slacktest.Envelope {
	return pressIn(hs, "T0TEAM", user, actionID, value)
}

// pressIn is press by user of team.
func pressIn(hs *harness, team, user, actionID, value string) slacktest.Envelope {
	payload, _ := json.Marshal(map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": user, "team_id": team, "username": "u"},
		"team":         map[string]any{"id": team, "domain": "mnemo-test"},
		"api_app_id":   "A0APP",
		"response_url": hs.srv.URL() + "/commands/T0TEAM/1/" + actionID,
		"container":    map[string]any{"type": "message", "is_ephemeral": true},
		"channel":      map[string]any{"id": "D0DM"},
		"actions": []map[string]any{{
			"action_id": actionID, "block_id": "mnemo_memory_forget", "value": value, "type": "button", "action_ts": "1700000000.1",
		}},
	})
	return hs.srv.Push(slacktest.Envelope{Type: "interactive", Payload: payload})
}

func TestMemoryShow(t *testing.T) {
	hs := start(t, setup{})
	hs.mem.ShowText = "# Facts\n- facts/food.md (12B): likes **ramen**\n- note: @here <!channel>"
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{}))
	if p.ResponseType != "ephemeral" || !strings.Contains(p.Text, "likes *ramen*") || !strings.HasPrefix(p.Text, "*Facts*\n• facts/food.md") {
		t.Errorf("ack %+v", p)
	}
	checkNoPing(t, p.Text, true)
	if hs.mem.Shown()[0] != "slack-T0TEAM-U0USER" {
		t.Errorf("shown %v", hs.mem.Shown())
	}
	for _, text := range []string{"show", "list", "  "} {
		if p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: text})); !strings.Contains(p.Text, "ramen") {
			t.Errorf("/memory %s: %+v", text, p)
		}
	}
	hs.mem.ShowText = "  \n"
	if p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{})); !strings.Contains(p.Text, "don't remember anything") {
		t.Errorf("empty: %+v", p)
	}
	hs.mem.ShowErr = errors.New("/secret/path: disk gone")
	if p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{})); !strings.Contains(p.Text, "couldn't read") ||
		strings.Contains(p.Text, "secret") {
		t.Errorf("error: %+v", p)
	}
	for _, text := range []string{"help", "bogus <@U1>", "forget"} {
		p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: text}))
		if !strings.Contains(p.Text, "/memory forget all") || p.ResponseType != "ephemeral" {
			t.Errorf("/memory %s: %+v", text, p)
		}
		checkNoPing(t, p.Text, true)
	}
	if p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{UserID: "../x"})); !strings.Contains(p.Text, "can't tell who you are") {
		t.Errorf("bad user: %+v", p)
	}
	if len(hs.mem.Forgotten()) != 0 || len(hs.srv.Posts()) != 0 {
		t.Error("something was deleted or posted")
	}
}

func TestMemoryShowLong(t *testing.T) {
	hs := start(t, setup{})
	var b strings.Builder
	b.WriteString("```\n")
	for range 2000 {
		b.WriteString("- facts/x.md (1KB): <summary> & more \"quoted\" text\n")
	}
	hs.mem.ShowText = b.String()
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{}))
	if len(p.raw) >= 20*1024 || len(p.raw) > maxAckBytes {
		t.Errorf("ack of %d bytes", len(p.raw))
	}
	if !strings.Contains(p.Text, "This list is cut here") || !strings.Contains(p.Text, "mnemo memory ls") ||
		!strings.HasPrefix(p.Text, "```\n- facts/x.md") || strings.Count(p.Text, fence)%2 != 0 {
		t.Errorf("cut listing: %.200q … %q", p.Text, p.Text[max(0, len(p.Text)-300):])
	}

	// Not a listing (an error text, say) is cut as well.
	msg := fitAck(ephemeral(strings.Repeat("<>", 20000)))
	if js, _ := json.Marshal(msg); len(js) >= maxAckBytes || !strings.Contains(msg.Text, "cut here") {
		t.Errorf("fitAck: %d bytes", len(js))
	}
	if got := cutLines("short", 10); got != "short" {
		t.Errorf("cutLines %q", got)
	}
}

func TestMemorySlowAnswer(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.ackBudget = 50 * time.Millisecond }})
	hs.mem.ShowText = "facts/a.md: slow"
	// The store answers only once the ack is in: the ack did not wait
	// for it (an ack's wall-clock latency, bounded before, is no proof on
	// a loaded machine).
	gate := make(chan struct{})
	hs.mem.Gate = gate
	env := hs.srv.SlashCommand(slacktest.SlashCommand{})
	ack, err := hs.srv.WaitAck(env.ID, wait)
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	if len(ack.Payload) != 0 {
		t.Errorf("ack %+v", ack)
	}
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].ResponseType != "ephemeral" || !strings.Contains(rs[0].Text, "slow") || rs[0].Path != strings.TrimPrefix(env.ResponseURL, hs.srv.URL()) {
		t.Errorf("response %+v", rs[0])
	}
}

func TestMemoryForget(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.Identities = map[string]string{"slack:T0TEAM/U0USER": "zhangsan"} }})
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget facts/food.md"}))
	token := p.button(actionForgetConfirm)
	if p.ResponseType != "ephemeral" || token == "" || p.button(actionForgetCancel) != token || !strings.Contains(p.Text, "facts/food.md") ||
		!strings.Contains(p.Text, "linked") || !strings.Contains(string(p.raw), `"style":"danger"`) ||
		!strings.Contains(p.Text, "within 10 minutes") {
		t.Fatalf("confirmation %s", p.raw)
	}
	// Someone else's click does nothing (and leaves the token usable).
	other := press(hs, "U0OTHER", actionForgetConfirm, token)
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[0].Text, "someone else") || rs[0].ReplaceOriginal {
		t.Errorf("response %+v", rs[0])
	}
	if _, err := hs.srv.WaitAck(other.ID, wait); err != nil {
		t.Error(err)
	}
	// Handled after the command: nothing was deleted before a confirmation.
	if got := hs.mem.Forgotten(); len(got) != 0 {
		t.Fatalf("deleted before confirmation: %v", got)
	}
	// The owner confirms: deleted once.
	press(hs, "U0USER", actionForgetConfirm, token)
	rs, _ = hs.srv.WaitResponses(2, wait)
	if got := hs.mem.Forgotten(); len(got) != 1 || got[0] != "zhangsan:facts/food.md" {
		t.Errorf("forgotten %v", got)
	}
	if !strings.Contains(rs[1].Text, "Done") || !rs[1].ReplaceOriginal || rs[1].ResponseType != "ephemeral" {
		t.Errorf("response %+v", rs[1])
	}
	// A second click (or a replayed envelope) deletes nothing more.
	press(hs, "U0USER", actionForgetConfirm, token)
	rs, _ = hs.srv.WaitResponses(3, wait)
	if !strings.Contains(rs[2].Text, "expired or was already used") || len(hs.mem.Forgotten()) != 1 {
		t.Errorf("response %+v; forgotten %v", rs[2], hs.mem.Forgotten())
	}
	// forget all, then Cancel.
	p = hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget all"}))
	if !strings.Contains(p.Text, "everything") {
		t.Errorf("confirmation %q", p.Text)
	}
	press(hs, "U0USER", actionForgetCancel, p.button(actionForgetCancel))
	rs, _ = hs.srv.WaitResponses(4, wait)
	if !strings.Contains(rs[3].Text, "Cancelled") || len(hs.mem.Forgotten()) != 1 {
		t.Errorf("response %+v", rs[3])
	}
	// forget ALL, confirmed.
	p = hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget `ALL`"}))
	press(hs, "U0USER", actionForgetConfirm, p.button(actionForgetConfirm))
	rs, _ = hs.srv.WaitResponses(5, wait)
	if got := hs.mem.Forgotten(); len(got) != 2 || got[1] != "zhangsan:" || !strings.Contains(rs[4].Text, "everything") {
		t.Errorf("forgotten %v; response %+v", got, rs[4])
	}
	// Forget fails.
	hs.mem.ForgetErr = errors.New("facts/food.md: no such file")
	p = hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget episodes/2026-02.md"}))
	press(hs, "U0USER", actionForgetConfirm, p.button(actionForgetConfirm))
	rs, _ = hs.srv.WaitResponses(6, wait)
	if !strings.Contains(rs[5].Text, "couldn't delete") || !strings.Contains(rs[5].Text, "no such file") {
		t.Errorf("response %+v", rs[5])
	}
	// An unknown token.
	press(hs, "U0USER", actionForgetConfirm, "0123")
	rs, _ = hs.srv.WaitResponses(7, wait)
	if !strings.Contains(rs[6].Text, "expired") {
		t.Errorf("response %+v", rs[6])
	}
}

// The same user id pressing in another team is someone else: the
// confirmation belongs to a user of one workspace.
func TestMemoryForgetButtonChecksTheTeam(t *testing.T) {
	hs := start(t, setup{})
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget facts/food.md"}))
	token := p.button(actionForgetConfirm)
	pressIn(hs, "T0OTHER", "U0USER", actionForgetConfirm, token)
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[0].Text, "someone else") || rs[0].ReplaceOriginal || len(hs.mem.Forgotten()) != 0 {
		t.Errorf("another team's press: response %+v, forgotten %v", rs[0], hs.mem.Forgotten())
	}
	press(hs, "U0USER", actionForgetConfirm, token)
	if rs, err := hs.srv.WaitResponses(2, wait); err != nil || !strings.Contains(rs[1].Text, "Done") {
		t.Errorf("the asker's own press after it: %v, %v", rs, err)
	}
}

func TestMemoryForgetBadNames(t *testing.T) {
	hs := start(t, setup{})
	for _, name := range []string{"../bob/facts/x.md", "facts/x", "facts/a b.md", "/etc/passwd", "facts/x.md.bak",
		"episodes/2026-13.md", "episodes/26-01.md", "facts/" + strings.Repeat("a", 65) + ".md", "facts/@here.md", "facts/%2e%2e.md"} {
		p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget " + name}))
		if !strings.Contains(p.Text, "is not a memory file") || !strings.Contains(p.Text, "facts/&lt;name&gt;.md") ||
			!strings.Contains(p.Text, "Nothing was deleted") || len(p.Blocks) != 0 {
			t.Errorf("forget %q: %+v", name, p)
		}
		checkNoPing(t, p.Text, true)
	}
	if got := hs.mem.Forgotten(); len(got) != 0 {
		t.Errorf("forgotten %v", got)
	}
}

func TestMemoryExpiryAndNoMemory(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	hs := start(t, setup{config: func(c *Config) { c.Now = clock }})
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget facts/a.md"}))
	mu.Lock()
	now = now.Add(memorycmd.ConfirmTTL + time.Second)
	mu.Unlock()
	press(hs, "U0USER", actionForgetConfirm, p.button(actionForgetConfirm))
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[0].Text, "expired") || len(hs.mem.Forgotten()) != 0 {
		t.Errorf("response %+v", rs[0])
	}

	hs2 := start(t, setup{config: func(c *Config) { c.Memory = nil }})
	p = hs2.ackPayload(t, hs2.srv.SlashCommand(slacktest.SlashCommand{}))
	if !strings.Contains(p.Text, "not available") {
		t.Errorf("no memory: %+v", p)
	}
}

func TestResponseURLs(t *testing.T) {
	hs := start(t, setup{})
	for u, ok := range map[string]bool{
		"https://hooks.slack.com/commands/T/1/x": true,
		"https://slack.com/x":                    true,
		"http://hooks.slack.com/x":               false,
		"https://evil.example/x":                 false,
		"https://slack.com.evil.example/x":       false,
		hs.srv.URL() + "/commands/x":             true,
		"":                                       false,
		"::":                                     false,
	} {
		if got := hs.bot.allowedResponseURL(u); got != ok {
			t.Errorf("allowedResponseURL(%q) = %v", u, got)
		}
	}
	hs.bot.respond(t.Context(), "https://evil.example/x", ephemeral("x"))
	hs.bot.respond(t.Context(), hs.srv.URL()+"/commands/\x7f", ephemeral("x"))
	hs.bot.respond(t.Context(), hs.srv.URL()+"/nowhere", ephemeral("x"))
	if got := hostOf("::"); got != "" {
		t.Errorf("hostOf = %q", got)
	}
	if !strings.Contains(hs.logs.String(), "unexpected response_url") || !strings.Contains(hs.logs.String(), "refused the answer") {
		t.Error("refusals not logged")
	}
}

// TestMemoryTextsUnchanged: memorycmd's Markdown texts read on Slack exactly as
// the adapter's own mrkdwn texts did.
func TestMemoryTextsUnchanged(t *testing.T) {
	for _, c := range []struct{ md, want string }{
		{memorycmd.Usage, "*/memory* shows what I remember about you, each file marked private or shared (only you can see the answer); in a channel, also what I remember about the channel.\n" +
			"*/memory share facts/&lt;name&gt;.md* lets me use that file in channels too, e.g. `/memory share facts/food.md`; */memory private facts/&lt;name&gt;.md* keeps it to our private conversations again. Every file is private until you share it.\n" +
			"*/memory forget facts/&lt;name&gt;.md* or *episodes/YYYY-MM.md* deletes one file, e.g. `/memory forget facts/food.md`.\n" +
			"*/memory why &lt;words&gt;* shows what I remember that matches the words, where and when I learned it, and who changed it, e.g. `/memory why Berlin`.\n" +
			"*/memory forget all* deletes everything I remember about you.\n" +
			"Nothing is deleted until you confirm with a button."},
		{memorycmd.PathGrammar, "Memory files are `facts/&lt;name&gt;.md` (the name made of letters, digits, `-` and `_`, up to 64) " +
			"or `episodes/YYYY-MM.md` (e.g. `episodes/2026-02.md`), either with `.shared` before `.md` for a file made in a channel; `/memory` lists yours. Nothing was deleted."},
		{memorycmd.ShareGrammar, "Memory files are `facts/&lt;name&gt;.md` (the name made of letters, digits, `-` and `_`, up to 64) " +
			"or `episodes/YYYY-MM.md` (e.g. `episodes/2026-02.md`), either with `.shared` before `.md` for a file made in a channel; `/memory` lists yours. Nothing was changed."},
		{memorycmd.FullNote, "_This server trusts its channels with all of your memory (`channelMemory: full`): there I use your private files too._"},
		{memorycmd.OffNote, "_This server uses no memory in channels (`channelMemory: off`)._"},
		{memorycmd.ExpiredText, "This confirmation has expired or was already used; nothing was deleted. Run `/memory forget …` again if you still want to."},
		{memorycmd.WrongUserText, "This confirmation belongs to someone else; nothing was deleted."},
		{memorycmd.CancelledText, "Cancelled: nothing was deleted."},
		{memorycmd.ForgetWhichText, "Say which file to forget, or `all`."},
		{memorycmd.WhyWhatText, "Say what to look for, e.g. `/memory why Berlin`."},
		{memorycmd.WhyErrorText, "Sorry, I couldn't look through what I remember just now. Please try again later."},
		{"This deletes **everything** I remember about you (every fact and episode file). It cannot be undone.\n" +
			"Your Slack account is linked to the memory user `zhangsan`, so this also deletes what was learned through your other linked accounts.\n" +
			"Press **Delete** to confirm (within 10 minutes), or **Cancel**.",
			"This deletes *everything* I remember about you (every fact and episode file). It cannot be undone.\n" +
				"Your Slack account is linked to the memory user `zhangsan`, so this also deletes what was learned through your other linked accounts.\n" +
				"Press *Delete* to confirm (within 10 minutes), or *Cancel*."},
		{"Done: I deleted `facts/food.md`.", "Done: I deleted `facts/food.md`."},
		{"I don't know `/memory bogus &lt;@U1&gt;`.", "I don't know `/memory bogus &amp;lt;@U1&amp;gt;`."},
		{"I don't know `/memory bogus <@U1>`.", "I don't know `/memory bogus &lt;@U1&gt;`."},
	} {
		if got := toMrkdwn(c.md); got != c.want {
			t.Errorf("toMrkdwn(%q)\n got %q\nwant %q", c.md, got, c.want)
		}
	}
	// The whole confirmation as Slack shows it.
	hs := start(t, setup{config: func(c *Config) { c.Identities = map[string]string{"slack:T0TEAM/U0USER": "zhangsan"} }})
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget all"}))
	want := "This deletes *everything* I remember about you (every fact and episode file). It cannot be undone.\n" +
		"Your Slack account is linked to the memory user `zhangsan`, so this also deletes what was learned through your other linked accounts.\n" +
		"Press *Delete* to confirm (within 10 minutes), or *Cancel*."
	if p.Text != want {
		t.Errorf("confirmation\n got %q\nwant %q", p.Text, want)
	}
}

// /memory share and /memory private flip one of the asker's own files
// (the memory user from the command's team and user ids, never its text)
// and answer privately what changed; a bad name or a missing file changes
// nothing.
func TestMemoryShare(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.Identities = map[string]string{"slack:T0TEAM/U0LINKED": "zhangsan"} }})
	hs.mem.Files = map[string]bool{"slack-T0TEAM-U0USER:facts/food.md": false, "slack-T0TEAM-U0OTHER:facts/food.md": false,
		"zhangsan:episodes/2026-02.md": true}
	for i, s := range []struct {
		cmd  slacktest.SlashCommand
		want string
		sets int
	}{
		{slacktest.SlashCommand{Text: "share `facts/food.md`"}, "`facts/food.md` is now shared with channels: I may use it in any channel you talk to me in.", 1},
		{slacktest.SlashCommand{Text: "share facts/food.md", ChannelID: "C0CHAN", ChannelName: "general"}, "`facts/food.md` was already shared with channels", 2},
		{slacktest.SlashCommand{Text: "private facts/food.md", ChannelID: "G0MPIM", ChannelName: "mpdm-a--b-1"}, "`facts/food.md` is now private: I use it only when we talk in private, never in a channel.", 3},
		{slacktest.SlashCommand{Text: "private episodes/2026-02.md", UserID: "U0LINKED"}, "`episodes/2026-02.md` is now private", 4},
		{slacktest.SlashCommand{Text: "share ../slack-T0TEAM-U0OTHER/facts/food.md"}, "is not a memory file", 4},
		{slacktest.SlashCommand{Text: "share slack-T0TEAM-U0OTHER:facts/food.md"}, "is not a memory file", 4},
		{slacktest.SlashCommand{Text: "share facts/nope.md"}, "You have no memory file `facts/nope.md`; `/memory` lists yours. Nothing was changed.", 4},
		{slacktest.SlashCommand{Text: "private"}, "Say which file to make private", 4},
	} {
		p := hs.ackPayload(t, hs.srv.SlashCommand(s.cmd))
		if p.ResponseType != "ephemeral" || !strings.Contains(p.Text, s.want) || len(p.Blocks) != 0 {
			t.Errorf("step %d, /memory %s: %+v; want %q", i, s.cmd.Text, p, s.want)
		}
		checkNoPing(t, p.Text, true)
		if n := len(hs.mem.Sets()); n != s.sets {
			t.Errorf("step %d, /memory %s: %d changes, want %d: %v", i, s.cmd.Text, n, s.sets, hs.mem.Sets())
		}
	}
	want := []string{"slack-T0TEAM-U0USER:facts/food.md:shared", "slack-T0TEAM-U0USER:facts/food.md:shared",
		"slack-T0TEAM-U0USER:facts/food.md:private", "zhangsan:episodes/2026-02.md:private"}
	if got := hs.mem.Sets(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("changes %v; want %v", got, want)
	}
	if hs.mem.IsShared("slack-T0TEAM-U0OTHER:facts/food.md") || len(hs.srv.Posts()) != 0 || len(hs.mem.Forgotten()) != 0 {
		t.Error("someone else's file changed, or something was posted or deleted")
	}
}

// /memory in a channel shows the channel's memory too, by the key its
// messages use (a group DM is a channel; a DM has none), and the answer is
// only ever the asker's (ephemeral, nothing posted in the channel); with
// channelMemory off no channel memory is asked for and the answer says
// channels use none.
func TestMemoryShowChannel(t *testing.T) {
	for _, c := range []struct {
		setting string
		channel string
		want    string
		note    string
	}{
		{"", "D0DM", "", ""},
		{"", "C0CHAN", "#slack-T0TEAM-C0CHAN", ""},
		{"read", "G0MPIM", "#slack-T0TEAM-G0MPIM", ""},
		{"full", "C0CHAN", "#slack-T0TEAM-C0CHAN", "channelMemory: full"},
		{"off", "C0CHAN", "", "channelMemory: off"},
	} {
		hs := start(t, setup{config: func(cfg *Config) { cfg.ChannelMemory = c.setting }})
		hs.mem.ShowText = "- [private] facts/food.md (12B): likes ramen"
		p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{ChannelID: c.channel, ChannelName: "general"}))
		if p.ResponseType != "ephemeral" || !strings.Contains(p.Text, "[private] facts/food.md") || !strings.Contains(p.Text, c.note) {
			t.Errorf("%s in %s: %+v", c.setting, c.channel, p)
		}
		if got := hs.mem.ShownChannels(); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s in %s: shown with channel %q; want %q", c.setting, c.channel, got, c.want)
		}
		if len(hs.srv.Posts()) != 0 {
			t.Errorf("%s in %s: posted %+v", c.setting, c.channel, hs.srv.Posts())
		}
	}
}
