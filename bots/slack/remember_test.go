package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/remember/remembertest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// withKeeper is s with k as the bot's Keeper.
func withKeeper(s setup, k *remembertest.Keeper) setup {
	inner := s.config
	s.config = func(c *Config) {
		if inner != nil {
			inner(c)
		}
		c.Keeper = k
	}
	return s
}

// undoValue is the value of the Undo button of a response.
func undoValue(t *testing.T, r slacktest.Response) string {
	t.Helper()
	var p responsePayload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p.button(actionRememberUndo)
}

// Someone else's message, chosen in a channel: acked at once, kept in the
// chooser's own (private) memory as what its author said, with its place
// and permalink; the confirmation is ephemeral, names the file, and has
// an Undo that only the chooser may press.
func TestRememberThisSomeoneElses(t *testing.T) {
	k := &remembertest.Keeper{}
	hs := start(t, withKeeper(setup{}, k))
	hs.srv.SetUser(slacktest.User{ID: "U0ANA", DisplayName: "Ana"})
	env := hs.srv.MessageAction(slacktest.MessageAction{ChannelID: "C0CHAN", ChannelName: "general",
		MessageTS: "1763636400.000100", MessageText: "The release moves to Friday &amp; not <!here>", MessageUser: "U0ANA"})
	ack, err := hs.srv.WaitAck(env.ID, wait)
	if err != nil {
		t.Fatal(err)
	}
	if len(ack.Payload) != 0 {
		t.Errorf("the shortcut's ack carries %s; Slack wants it empty", ack.Payload)
	}
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].ResponseType != "ephemeral" || !strings.Contains(rs[0].Text, "Kept in your private memory: `episodes/2026-11.md`") {
		t.Errorf("confirmation %+v", rs[0])
	}
	kept := k.Kept()
	if len(kept) != 1 {
		t.Fatalf("kept %+v", kept)
	}
	m := kept[0]
	if m.User != "slack-T0TEAM-U0USER" || m.Own || m.Author != "Ana" || m.Platform != "slack" ||
		m.Text != "The release moves to Friday & not <!here>" || !m.Time.Equal(time.Unix(1763636400, 100000).UTC()) {
		t.Errorf("kept %+v", m)
	}
	if m.Origin.Place != "#C0CHAN" || !strings.HasSuffix(m.Origin.Link, "/archives/C0CHAN/p1763636400000100") {
		t.Errorf("origin %+v", m.Origin)
	}
	if len(hs.srv.Posts()) != 0 {
		t.Error("the confirmation was posted for the channel")
	}
	token := undoValue(t, rs[0])
	if token == "" {
		t.Fatalf("no Undo button: %s", rs[0].Body)
	}
	// Another person's press is refused, to them alone; the confirmation stays.
	press(hs, "U0BOB", actionRememberUndo, token)
	rs, err = hs.srv.WaitResponses(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[1].Text, "Only the person who kept this message can undo it") || rs[1].ReplaceOriginal {
		t.Errorf("someone else's Undo: %+v", rs[1])
	}
	press(hs, "U0USER", actionRememberUndo, token)
	rs, err = hs.srv.WaitResponses(3, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[2].Text, "Undone: episodes/2026-11.md") || !rs[2].ReplaceOriginal {
		t.Errorf("Undo: %+v", rs[2])
	}
	if got := k.Undone(); len(got) != 1 || got[0] != token {
		t.Errorf("undone %v", got)
	}
	press(hs, "U0USER", actionRememberUndo, token)
	rs, err = hs.srv.WaitResponses(4, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[3].Text, "expired") {
		t.Errorf("a second Undo: %+v", rs[3])
	}
	hs.quiet(t, 0)
}

// The person's own message in a DM thread, a bot's message, an Undo after
// a later keeping, and a shortcut of another app.
func TestRememberThisKinds(t *testing.T) {
	k := &remembertest.Keeper{}
	hs := start(t, withKeeper(setup{}, k))
	hs.srv.MessageAction(slacktest.MessageAction{MessageTS: "1763636500.000200", ThreadTS: "1763636400.000100", MessageText: "my badge is 42", MessageUser: "U0USER"})
	first, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	hs.srv.MessageAction(slacktest.MessageAction{ChannelID: "C0CHAN", MessageText: "build green", BotID: "B0CI", Username: "ci-bot"})
	if _, err := hs.srv.WaitResponses(2, wait); err != nil {
		t.Fatal(err)
	}
	kept := k.Kept()
	if !kept[0].Own || kept[0].Author != "" || kept[0].Origin.Place != "dm" || !strings.Contains(kept[0].Origin.Link, "thread_ts=1763636400.000100") {
		t.Errorf("own message %+v", kept[0])
	}
	if kept[1].Own || kept[1].Author != "ci-bot" {
		t.Errorf("bot message %+v", kept[1])
	}
	press(hs, "U0USER", actionRememberUndo, undoValue(t, first[0]))
	rs, err := hs.srv.WaitResponses(3, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[2].Text, "Nothing was undone") || rs[2].ReplaceOriginal {
		t.Errorf("Undo after a later keeping: %+v", rs[2])
	}
	env := hs.srv.MessageAction(slacktest.MessageAction{CallbackID: "other_shortcut", MessageText: "x"})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	hs.quiet(t, 0)
	if len(k.Kept()) != 2 || len(hs.srv.Responses()) != 3 {
		t.Errorf("another shortcut was taken for Remember this")
	}
}

// A person not let in gets the access answer, and nothing is kept (the
// budgets: bots/internal/remember's tests); without a Keeper the shortcut
// says so.
func TestRememberThisRefused(t *testing.T) {
	k := &remembertest.Keeper{}
	s := withKeeper(gated(access.Policy{Mode: access.Allowlist, HomeOnly: true, Allow: []access.Entry{{Kind: access.User, ID: "U0USER"}}}), k)
	hs := start(t, s)
	hs.srv.MessageAction(slacktest.MessageAction{UserID: "U0OUT", MessageText: "keep me", MessageUser: "U0OUT"})
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[0].Text, "mnemo access allow slack:T0TEAM/U0OUT") || rs[0].ResponseType != "ephemeral" {
		t.Errorf("refusal %+v", rs[0])
	}
	if len(k.Kept()) != 0 {
		t.Errorf("a refused person's message was kept: %+v", k.Kept())
	}
	hs.srv.MessageAction(slacktest.MessageAction{UserID: "../x", MessageText: "x"})
	if rs, err = hs.srv.WaitResponses(2, wait); err != nil || !strings.Contains(rs[1].Text, "can't tell who you are") {
		t.Errorf("a bad user id: %+v, %v", rs, err)
	}
	hs.quiet(t, 0)

	bare := start(t, setup{})
	bare.srv.MessageAction(slacktest.MessageAction{MessageText: "x"})
	if rs, err := bare.srv.WaitResponses(1, wait); err != nil || !strings.Contains(rs[0].Text, "not available") {
		t.Errorf("without a Keeper: %+v, %v", rs, err)
	}
}

func TestSlackTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ts, want := range map[string]time.Time{
		"1763636400.000100": time.Unix(1763636400, 100000).UTC(),
		"1763636400":        time.Unix(1763636400, 0).UTC(),
		"":                  now,
		"x.1":               now,
		"-5.1":              now,
	} {
		if got := slackTime(ts, now); !got.Equal(want) {
			t.Errorf("slackTime(%q) = %v, want %v", ts, got, want)
		}
	}
}
