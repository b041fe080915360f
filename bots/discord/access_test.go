package discord

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/access"
)

// A Discord allowlist by guild: a mention there is answered, a DM is not
// (it carries no guild), and a refused person's /memory shows nothing,
// while their /memory in the guild is answered.
func TestAccessAllowlist(t *testing.T) {
	policy := access.Policy{Mode: access.Allowlist, Allow: []access.Entry{{Kind: access.Guild, ID: guildID}, {Kind: access.Role, ID: "77"}}}
	hs := start(t, setup{config: func(c *Config) {
		c.Access = access.NewGate(access.GateOptions{Platform: access.Discord, Policy: policy, Log: c.Logger})
	}})
	hs.mention(alice, channelID, "hello")
	if p := hs.posts(t, 1); strings.Contains(p[0].Body.Content, "mnemo access") {
		t.Fatalf("member of the guild refused: %+v", p[0].Body)
	}
	hs.dm(bob, "hello")
	p := hs.posts(t, 2)
	if !strings.Contains(p[1].Body.Content, "mnemo access allow discord:user:"+bobID) {
		t.Fatalf("DM: %+v", p[1].Body)
	}
	if n := len(hs.h.Tasks()); n != 1 {
		t.Fatalf("%d tasks", n)
	}
	_, e := hs.answer(t, hs.slash(bob, false, "show", ""), 1)
	if !strings.Contains(*e.Edit.Content, "mnemo access allow") || len(hs.mem.Shown()) != 0 {
		t.Fatalf("/memory of a refused person: %q; shown %v", *e.Edit.Content, hs.mem.Shown())
	}
	_, e = hs.answer(t, hs.slash(bob, true, "show", ""), 2)
	if strings.Contains(*e.Edit.Content, "mnemo access") || len(hs.mem.Shown()) != 1 {
		t.Fatalf("/memory in the guild: %q", *e.Edit.Content)
	}
}

func TestWho(t *testing.T) {
	w := who("1", "2", "3", &discordgo.Member{Roles: []string{"4"}})
	if w.Platform != access.Discord || w.Team != "1" || w.Channel != "2" || w.User != "3" || w.Roles[0] != "4" {
		t.Fatalf("%+v", w)
	}
	if w := who("", "2", "3", &discordgo.Member{Roles: []string{"4"}}); w.Roles != nil {
		t.Fatalf("roles in a DM: %+v", w)
	}
}
