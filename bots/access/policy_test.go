package access

import (
	"context"
	"errors"
	"testing"
)

func mustList(t *testing.T, platform string, list ...string) []Entry {
	t.Helper()
	es, err := ParseList(platform, list)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestDecide(t *testing.T) {
	groups := func(member ...string) func(context.Context, string) (bool, error) {
		return func(_ context.Context, g string) (bool, error) {
			for _, m := range member {
				if m == g {
					return true, nil
				}
			}
			return false, nil
		}
	}
	home := Who{Platform: Slack, Home: true, Team: "T0HOME", Channel: "D01", User: "U01"}
	guest := Who{Platform: Slack, Team: "T0GUEST", Channel: "D02", User: "U02"}
	inGroup := guest
	inGroup.InGroup = groups("S0OPS")
	member := Who{Platform: Discord, Team: "111", Channel: "222", User: "333", Roles: []string{"444"}}
	dm := Who{Platform: Discord, Channel: "555", User: "666"}
	for _, c := range []struct {
		name   string
		policy Policy
		extra  []Entry
		who    Who
		admit  bool
	}{
		{"slack open: home team", Policy{Mode: Open, HomeOnly: true}, nil, home, true},
		{"slack open: another team", Policy{Mode: Open, HomeOnly: true}, nil, guest, false},
		{"slack open: another team listed", Policy{Mode: Open, HomeOnly: true, Allow: mustList(t, Slack, "T0GUEST")}, nil, guest, true},
		{"slack open: guest user listed by the operator", Policy{Mode: Open, HomeOnly: true}, mustList(t, Slack, "T0GUEST/U02"), guest, true},
		{"slack open: same user id of another team", Policy{Mode: Open, HomeOnly: true}, mustList(t, Slack, "T0OTHER/U02"), guest, false},
		{"slack allowlist: home team not listed", Policy{Mode: Allowlist, HomeOnly: true}, nil, home, false},
		{"slack allowlist: user", Policy{Mode: Allowlist, Allow: mustList(t, Slack, "U01")}, nil, home, true},
		{"slack allowlist: W user", Policy{Mode: Allowlist, Allow: mustList(t, Slack, "W01")}, nil, Who{User: "W01"}, true},
		{"slack allowlist: channel", Policy{Mode: Allowlist, Allow: mustList(t, Slack, "C09")}, nil, Who{Channel: "C09", User: "U9"}, true},
		{"slack allowlist: group member", Policy{Mode: Allowlist, Allow: mustList(t, Slack, "S0DEV", "S0OPS")}, nil, inGroup, true},
		{"slack allowlist: not a group member", Policy{Mode: Allowlist, Allow: mustList(t, Slack, "S0DEV")}, nil, inGroup, false},
		{"slack allowlist: group, nobody asks", Policy{Mode: Allowlist, Allow: mustList(t, Slack, "S0OPS")}, nil, guest, false},
		{"slack pairing: stranger", Policy{Mode: Pairing, HomeOnly: true}, nil, guest, false},
		{"slack pairing: approved", Policy{Mode: Pairing, HomeOnly: true}, []Entry{guest.Person()}, guest, true},
		{"discord open: anyone", Policy{Mode: Open}, nil, dm, true},
		{"discord allowlist: role", Policy{Mode: Allowlist, Allow: mustList(t, Discord, "role:444")}, nil, member, true},
		{"discord allowlist: other role", Policy{Mode: Allowlist, Allow: mustList(t, Discord, "role:999")}, nil, member, false},
		{"discord allowlist: guild", Policy{Mode: Allowlist, Allow: mustList(t, Discord, "guild:111")}, nil, member, true},
		{"discord allowlist: guild does not cover a DM", Policy{Mode: Allowlist, Allow: mustList(t, Discord, "guild:111")}, nil, dm, false},
		{"discord allowlist: channel", Policy{Mode: Allowlist, Allow: mustList(t, Discord, "channel:222")}, nil, member, true},
		{"discord allowlist: user in a DM", Policy{Mode: Allowlist, Allow: mustList(t, Discord, "user:666")}, nil, dm, true},
		{"discord pairing: approved", Policy{Mode: Pairing}, []Entry{dm.Person()}, dm, true},
		{"discord pairing: stranger", Policy{Mode: Pairing}, nil, dm, false},
		{"empty id matches nothing", Policy{Mode: Allowlist, Allow: []Entry{{Kind: User}}}, nil, Who{}, false},
		{"unknown kind matches nothing", Policy{Mode: Allowlist, Allow: []Entry{{Kind: "x", ID: "1"}}}, nil, Who{User: "1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.policy.Decide(context.Background(), c.who, c.extra)
			if err != nil || d.Admit != c.admit || d.Why == "" {
				t.Fatalf("Decide = %+v, %v; want admit %v", d, err, c.admit)
			}
			// A refusal says why: open lets in only the home team.
			if want := map[bool]string{true: "not of the home team, and not listed", false: "not listed"}[c.policy.Mode == Open]; !d.Admit && d.Why != want {
				t.Fatalf("Decide refused %q, want %q", d.Why, want)
			}
		})
	}
}

// A user group that cannot be read lets nobody in, says why, and the
// next group is still asked.
func TestDecideGroupError(t *testing.T) {
	boom := errors.New("missing_scope")
	who := Who{Platform: Slack, User: "U1", InGroup: func(_ context.Context, g string) (bool, error) {
		if g == "S1" {
			return false, boom
		}
		return g == "S2", nil
	}}
	p := Policy{Mode: Allowlist, Allow: mustList(t, Slack, "S1")}
	d, err := p.Decide(context.Background(), who, nil)
	if d.Admit || !errors.Is(err, boom) {
		t.Fatalf("Decide = %+v, %v", d, err)
	}
	d, err = p.Decide(context.Background(), who, mustList(t, Slack, "S2"))
	if !d.Admit || err != nil {
		t.Fatalf("Decide with S2 = %+v, %v", d, err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(m); err != nil || string(got) != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("Open"); err == nil {
		t.Error("ParseMode(Open) took it")
	}
}
