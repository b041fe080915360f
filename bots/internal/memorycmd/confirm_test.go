package memorycmd

import (
	"regexp"
	"testing"
	"time"
)

func TestConfirms(t *testing.T) {
	now := time.Now()
	c := NewConfirms(3, time.Minute)
	if c.TTL() != time.Minute {
		t.Errorf("TTL %v", c.TTL())
	}
	var toks []string
	for i := range 4 {
		toks = append(toks, c.Add(Pending{User: "u", Asker: "U", Path: string(rune('a' + i))}, now.Add(time.Duration(i)*time.Second)))
	}
	seen := map[string]bool{}
	for _, tok := range toks {
		if !regexp.MustCompile(`^[A-Z2-7]{26}$`).MatchString(tok) || seen[tok] {
			t.Errorf("token %q", tok)
		}
		seen[tok] = true
	}
	if c.Len() != 3 {
		t.Errorf("%d pending", c.Len())
	}
	for i, s := range []struct {
		token, asker string
		at           time.Duration
		want         ConfirmResult
		path         string
	}{
		{toks[0], "U", 0, ConfirmUnknown, ""},                           // the one closest to expiry was dropped
		{toks[3], "V", 0, ConfirmWrongUser, ""},                         // someone else's: left in place
		{toks[3], "U", 0, ConfirmOK, "d"},                               // the asker's own
		{toks[3], "U", 0, ConfirmUnknown, ""},                           // single use
		{toks[1], "U", time.Minute + 2*time.Second, ConfirmUnknown, ""}, // expired
		{"nonsense", "U", 0, ConfirmUnknown, ""},
		{toks[2], "U", time.Minute, ConfirmOK, "c"}, // at the last moment
	} {
		p, res := c.Take(s.token, s.asker, now.Add(s.at))
		if res != s.want || p.Path != s.path || res == ConfirmOK && (p.User != "u" || p.Asker != "U") {
			t.Errorf("step %d: Take = %+v, %v; want %v %q", i, p, res, s.want, s.path)
		}
	}
	c.Add(Pending{}, now)
	c.Add(Pending{}, now.Add(2*time.Minute)) // expires the rest
	if c.Len() != 1 {
		t.Errorf("%d pending after expiry", c.Len())
	}
	if NewConfirms(0, time.Minute).max != 1 {
		t.Error("max below one")
	}
}
