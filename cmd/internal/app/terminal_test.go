package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// The terminal is a registered platform like the others: Adapters makes
// it with the platforms that have tokens (none here), in the registry's
// order, and Terminal alone for a chat — each time with the terminal's
// deps (its handler, /memory and withdraw; no access gate, no budget, no
// journal folder) and what every platform gets (its section, its logger).
// A registry without a terminal, a terminal whose adapter takes no chats
// and one that fails to be made are errors that say so.
func TestTerminalPlatform(t *testing.T) {
	a := newWorld(t).open(t, "")
	var got []platform.Deps
	term := console.Platform()
	term.New = func(d platform.Deps) (platform.Adapter, error) {
		got = append(got, d)
		return console.Platform().New(d)
	}
	off := platform.Platform{Name: "slack", Enabled: func(platform.Section) bool { return false }}
	a.platforms = []platform.Platform{off, term}
	ads, err := a.Adapters()
	if err != nil || len(ads) != 1 || ads[0].Name != console.Name {
		t.Fatalf("adapters %+v, %v; want the terminal alone", ads, err)
	}
	ad, chats, err := a.Terminal()
	if err != nil || ad.Name != console.Name || chats == nil || ad.Adapter != platform.Adapter(chats) {
		t.Fatalf("terminal %+v, %v, %v", ad, chats, err)
	}
	for i, d := range got {
		if d.Handler == nil || d.Memory == nil || d.Withdraw == nil || d.Keeper == nil || d.Logger == nil || d.Section == nil || d.FirstVisible == nil {
			t.Errorf("deps %d lack the terminal's: %+v", i, d)
		}
		if d.Access != nil || d.Budget != nil || d.Refusals != nil || d.IntakeDir != "" {
			t.Errorf("deps %d give the terminal a platform's gate, budget or journal folder: %+v", i, d)
		}
	}
	if len(got) != 2 {
		t.Errorf("the terminal was made %d times; want 2", len(got))
	}

	for _, tc := range []struct {
		name string
		ps   []platform.Platform
		want string
	}{
		{"none", []platform.Platform{off}, "no terminal platform is registered"},
		{"no chats", []platform.Platform{{Name: "tty", Terminal: true,
			New: func(platform.Deps) (platform.Adapter, error) { return &testAdapter{}, nil }}}, `the terminal platform "tty" takes no chats`},
		{"refused", []platform.Platform{{Name: "tty", Terminal: true,
			New: func(platform.Deps) (platform.Adapter, error) { return nil, errors.New("tty: refused") }}}, "tty: refused"},
	} {
		a.platforms = tc.ps
		if _, _, err := a.Terminal(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
	a.platforms = []platform.Platform{{Name: "tty", Terminal: true,
		New: func(platform.Deps) (platform.Adapter, error) { return nil, errors.New("tty: refused") }}}
	if _, err := a.Adapters(); !errors.As(err, new(*ConfigError)) {
		t.Errorf("a terminal refused: %v; want a *ConfigError", err)
	}

	// The terminal does not count as a platform with tokens.
	on := platform.Platform{Name: "discord", Enabled: func(platform.Section) bool { return true }}
	if got := Enabled(a.cfg, []platform.Platform{on, term}); len(got) != 1 || got[0].Name != "discord" {
		t.Errorf("enabled %+v; want discord alone", got)
	}
	// A journal folder that cannot be made is said before any adapter.
	intake := filepath.Join(a.cfg.State.Dir, "intake") // made, empty, by the Adapters above
	if err := os.Remove(intake); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(intake, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.platforms = []platform.Platform{term}
	if _, err := a.Adapters(); err == nil || !strings.Contains(err.Error(), "intake journal") {
		t.Errorf("intake folder in the way: %v", err)
	}
}
