package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

func gated(policy access.Policy) setup {
	return setup{config: func(c *Config) {
		c.Access = access.NewGate(access.GateOptions{Platform: access.Slack, Policy: policy, Log: c.Logger})
	}}
}

// A user group of slack.allow lets its members in, read with
// usergroups.users.list once a while; others get the refusal in the
// mention's thread, and their /memory shows nothing.
func TestAccessUserGroup(t *testing.T) {
	s := gated(access.Policy{Mode: access.Allowlist, HomeOnly: true, Allow: []access.Entry{{Kind: access.Group, ID: "S0OPS"}}})
	s.prepare = func(srv *slacktest.Server) {
		srv.HandleMethod("usergroups.users.list", func(c slacktest.Call) any {
			if c.Params.Get("usergroup") != "S0OPS" {
				return map[string]any{"ok": false, "error": "no_such_subteam"}
			}
			return map[string]any{"ok": true, "users": []string{"U0OPS"}}
		})
	}
	hs := start(t, s)
	hs.srv.AppMention(slacktest.AppMentionEvent{User: "U0OPS", Channel: "C0GEN", Text: "<@U0BOT> hi"})
	hs.srv.AppMention(slacktest.AppMentionEvent{User: "U0OPS", Channel: "C0GEN", Text: "<@U0BOT> again"})
	hs.srv.AppMention(slacktest.AppMentionEvent{User: "U0OUT", Channel: "C0GEN", Text: "<@U0BOT> me too"})
	posts := hs.posts(t, 3)
	refusals := 0
	for _, p := range posts {
		if strings.Contains(p.Text, "mnemo access allow slack:T0TEAM/U0OUT") {
			refusals++
			if p.ThreadTS == "" {
				t.Errorf("the refusal of a mention is not in its thread: %+v", p)
			}
		}
	}
	if refusals != 1 || len(hs.h.Tasks()) != 2 {
		t.Fatalf("posts %+v; tasks %d", posts, len(hs.h.Tasks()))
	}
	if n := len(hs.srv.Calls("usergroups.users.list")); n != 1 {
		t.Errorf("usergroups.users.list called %d times; the members are kept a while", n)
	}
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{UserID: "U0OUT"}))
	if !strings.Contains(p.Text, "mnemo access allow") || len(hs.mem.Shown()) != 0 {
		t.Fatalf("/memory of a refused person: %+v, shown %v", p, hs.mem.Shown())
	}
	hs.quiet(t, 3)
}

// A group that cannot be read (no usergroups:read) lets nobody in and
// says why in the log.
func TestAccessUserGroupRefused(t *testing.T) {
	s := gated(access.Policy{Mode: access.Allowlist, Allow: []access.Entry{{Kind: access.Group, ID: "S0OPS"}}})
	s.prepare = func(srv *slacktest.Server) {
		srv.HandleMethod("usergroups.users.list", func(slacktest.Call) any { return map[string]any{"ok": false, "error": "missing_scope"} })
	}
	hs := start(t, s)
	hs.srv.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0OPS", Text: "hi"})
	if p := hs.posts(t, 1); !strings.Contains(p[0].Text, "mnemo access allow") {
		t.Fatalf("post %+v", p[0])
	}
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "usergroups:read") })
	hs.quiet(t, 1)
	if len(hs.h.Tasks()) != 0 {
		t.Fatal("answered")
	}
}

func TestGroupCache(t *testing.T) {
	c := newGroupCache(2, time.Minute)
	t0 := time.Now()
	c.put("S1", []string{"U1"}, t0)
	if m, ok := c.get("S1", t0.Add(time.Second)); !ok || m[0] != "U1" {
		t.Fatal("not kept")
	}
	if _, ok := c.get("S1", t0.Add(time.Minute)); ok {
		t.Fatal("kept past its time")
	}
	c.put("S2", nil, t0)
	c.put("S3", nil, t0)
	if _, ok := c.get("S1", t0); ok || len(c.m) != 1 {
		t.Fatalf("bound: %v", c.m)
	}
}

// A Slack Connect guest whose event names the home team in one field and
// their own in another is not of the home team.
func TestWhoHome(t *testing.T) {
	b := &Bot{teamID: "T0HOME"}
	for _, c := range []struct {
		team  string
		teams []string
		home  bool
	}{
		{"T0HOME", nil, true},
		{"T0HOME", []string{"T0HOME", ""}, true},
		{"T0HOME", []string{"T0HOME", "T0GUEST"}, false},
		{"T0GUEST", []string{"", ""}, false},
	} {
		if w := b.who(c.team, "D1", "U1", c.teams...); w.Home != c.home || w.Team != c.team {
			t.Errorf("who(%s, %v) = %+v", c.team, c.teams, w)
		}
	}
}
