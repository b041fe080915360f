package access

import (
	"strings"
	"testing"
)

func TestParseEntry(t *testing.T) {
	for _, c := range []struct {
		platform, in string
		want         Entry
		err          string
	}{
		{Slack, "T01ABC", Entry{Kind: Team, ID: "T01ABC"}, ""},
		{Slack, "C01", Entry{Kind: Channel, ID: "C01"}, ""},
		{Slack, "G01", Entry{Kind: Channel, ID: "G01"}, ""},
		{Slack, "U01", Entry{Kind: User, ID: "U01"}, ""},
		{Slack, "W01", Entry{Kind: User, ID: "W01"}, ""},
		{Slack, "S01", Entry{Kind: Group, ID: "S01"}, ""},
		{Slack, "T01/U02", Entry{Kind: User, ID: "U02", Team: "T01"}, ""},
		{Slack, "u01", Entry{}, "upper case"},
		{Slack, "D01", Entry{}, "is not a Slack id"},
		{Slack, "T", Entry{}, "is not a Slack id"},
		{Slack, "U01/T02", Entry{}, `"T…/U…"`},
		{Slack, "T01/C02", Entry{}, `"T…/U…"`},
		{Slack, "U0-1", Entry{}, "is not a Slack id"},
		{Slack, "", Entry{}, "is not a Slack id"},
		{Slack, "U" + strings.Repeat("Z9", 11) + "A", Entry{Kind: User, ID: "U" + strings.Repeat("Z9", 11) + "A"}, ""}, // 24: the longest
		{Slack, "U" + strings.Repeat("Z9", 12), Entry{}, "is not a Slack id"},                                          // 25
		{Slack, "UZ", Entry{Kind: User, ID: "UZ"}, ""},
		{Slack, "U[", Entry{}, "is not a Slack id"},
		{Slack, "U@", Entry{}, "is not a Slack id"},
		{Discord, "guild:1", Entry{Kind: Guild, ID: "1"}, ""},
		{Discord, "channel:12", Entry{Kind: Channel, ID: "12"}, ""},
		{Discord, "user:80351110224678912", Entry{Kind: User, ID: "80351110224678912"}, ""},
		{Discord, "role:5", Entry{Kind: Role, ID: "5"}, ""},
		{Discord, "80351110224678912", Entry{}, "neither guild, channel, user nor role"},
		{Discord, "team:1", Entry{}, `"team" is not guild`},
		{Discord, "role:01", Entry{}, "is not a Discord id"},
		{Discord, "role:123456789012345678901", Entry{}, "is not a Discord id"},
		{Discord, "role:12345678901234567890", Entry{Kind: Role, ID: "12345678901234567890"}, ""}, // 20 digits: the longest
		{Discord, "user:", Entry{}, "is not a Discord id"},
		{"irc", "x", Entry{}, "not a platform"},
	} {
		got, err := ParseEntry(c.platform, c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseEntry(%s, %q) = %+v, %v; want %+v", c.platform, c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseEntry(%s, %q) error %v; want one containing %q", c.platform, c.in, err, c.err)
		case c.err == "" && got.String() != c.in:
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), c.in)
		}
	}
}

func TestParseList(t *testing.T) {
	if _, err := ParseList(Discord, []string{"user:1", "nope"}); err == nil || !strings.HasPrefix(err.Error(), "discord.allow[1]: ") {
		t.Errorf("ParseList error %v", err)
	}
	if es, err := ParseList(Slack, []string{"T1X", "U2"}); err != nil || len(es) != 2 {
		t.Errorf("ParseList = %v, %v", es, err)
	}
}

func TestParseID(t *testing.T) {
	for _, c := range []struct {
		in, platform string
		want         Entry
		err          bool
	}{
		{"slack:T01/U02", Slack, Entry{Kind: User, ID: "U02", Team: "T01"}, false},
		{"slack:U02", Slack, Entry{Kind: User, ID: "U02"}, false},
		{"slack:C03", Slack, Entry{Kind: Channel, ID: "C03"}, false},
		{"discord:123", Discord, Entry{Kind: User, ID: "123"}, false},
		{"discord:role:456", Discord, Entry{Kind: Role, ID: "456"}, false},
		{"discord:user:789", Discord, Entry{Kind: User, ID: "789"}, false},
		{"U02", "", Entry{}, true},
		{"slack:", "", Entry{}, true},
		{"irc:U02", "", Entry{}, true},
		{"slack:u02", "", Entry{}, true},
	} {
		p, e, err := ParseID(c.in)
		if (err != nil) != c.err || (!c.err && (p != c.platform || e != c.want)) {
			t.Errorf("ParseID(%q) = %s, %+v, %v", c.in, p, e, err)
		}
	}
}

// FuzzParseEntry: whatever the text, ParseEntry never panics, and what it
// takes is written back the same way (String) and parsed again the same.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{"T01", "C01", "G1", "U1", "W1", "S1", "T1/U2", "guild:1", "channel:2", "user:3", "role:4", "", "/", ":", "role:", "T1/", "x:y:z", "discord:1"} {
		f.Add(Slack, s)
		f.Add(Discord, s)
	}
	f.Fuzz(func(t *testing.T, platform, s string) {
		e, err := ParseEntry(platform, s)
		if err != nil {
			if e != (Entry{}) {
				t.Fatalf("ParseEntry(%q, %q) failed but returned %+v", platform, s, e)
			}
			return
		}
		if e.String() != s {
			t.Fatalf("ParseEntry(%q, %q) = %+v, written back %q", platform, s, e, e.String())
		}
		again, err := ParseEntry(platform, e.String())
		if err != nil || again != e {
			t.Fatalf("again: %+v, %v", again, err)
		}
		p, byID, err := ParseID(platform + ":" + s)
		if err != nil || p != platform || byID != e {
			t.Fatalf("ParseID(%q) = %s, %+v, %v", platform+":"+s, p, byID, err)
		}
	})
}
