package registry

import (
	"testing"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// The registry is the one list of the platforms, the terminal included:
// names are unique, every platform can be made, a platform with tokens
// says whether its section turns it on, and exactly one is the terminal
// (the console, last, as serve always ran it) — no token, no section, no
// journal file, and an adapter the second chats can talk to.
func TestPlatforms(t *testing.T) {
	ps := Platforms()
	seen := map[string]bool{}
	var terminals []platform.Platform
	for _, p := range ps {
		switch {
		case p.Name == "" || seen[p.Name]:
			t.Errorf("platform name %q empty or listed twice", p.Name)
		case p.New == nil:
			t.Errorf("%s: no New", p.Name)
		case p.Terminal:
			terminals = append(terminals, p)
		case p.Enabled == nil:
			t.Errorf("%s: a platform with tokens has no Enabled", p.Name)
		}
		seen[p.Name] = true
	}
	if len(terminals) != 1 || terminals[0].Name != console.Name || ps[len(ps)-1].Name != console.Name {
		t.Fatalf("terminals %v in %d platforms; want the console, last", terminals, len(ps))
	}
	term := terminals[0]
	if term.Enabled != nil || term.Hint != "" || term.Settings != nil || term.ForgetQueued != nil {
		t.Errorf("the terminal registers a token, a section or a journal file: %+v", term)
	}
	ad, err := term.New(platform.Deps{})
	if _, ok := ad.(platform.Chats); !ok || err != nil {
		t.Errorf("the terminal's adapter %T, %v; want a platform.Chats", ad, err)
	}
}
