package app

// The chat platforms, as they registered (bots/platform, listed in
// bots/registry): the app reads each one's configuration section, access
// rules and intake journal through its registration, and names none.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
)

// Adapter is a running platform's front end, by the platform's name.
type Adapter struct {
	Name string
	platform.Adapter
}

// Section is platform name's configuration section.
func Section(cfg *config.Config, name string) platform.Section {
	return platform.SectionOf(cfg.Section(name))
}

// Enabled are the platforms of ps whose section turns them on.
func Enabled(cfg *config.Config, ps []platform.Platform) []platform.Platform {
	var on []platform.Platform
	for _, p := range ps {
		if p.Enabled != nil && p.Enabled(Section(cfg, p.Name)) {
			on = append(on, p)
		}
	}
	return on
}

// NoPlatform is serve's answer when no platform of ps is turned on: what
// turns each on.
func NoPlatform(ps []platform.Platform) error {
	hints := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Hint != "" {
			hints = append(hints, p.Hint)
		}
	}
	return fmt.Errorf("serve: no chat platform has tokens: %s; to chat in the terminal, use mnemo chat", strings.Join(hints, ", and/or "))
}

// Journals are the platforms' intake journals as a forget finds them:
// live names the running adapters' Forget by platform (nil: none runs).
func Journals(ps []platform.Platform, live map[string]func(user string) int) []userdata.Journal {
	js := make([]userdata.Journal, 0, len(ps))
	for _, p := range ps {
		js = append(js, userdata.Journal{Platform: p.Name, Live: live[p.Name], File: p.ForgetQueued})
	}
	return js
}

// Adapters makes the adapters of the platforms that are turned on, and
// the terminal's (Platform.Terminal: always), in the platforms' order,
// each with its deps (adapter): they run in this process and share the
// agent, so linked identities share one memory. A platform that refuses
// its section is a *ConfigError.
func (a *App) Adapters() ([]Adapter, error) {
	intakeDir, err := a.intakeDir()
	if err != nil {
		return nil, err
	}
	var out []Adapter
	for _, p := range a.platforms {
		if !p.Terminal && !(p.Enabled != nil && p.Enabled(Section(a.cfg, p.Name))) {
			continue
		}
		ad, err := a.adapter(p, intakeDir)
		if err != nil {
			return nil, err
		}
		out = append(out, ad)
	}
	return out, nil
}

// Terminal makes the terminal platform's adapter (the platform registered
// as Terminal, bots/console) alone, for a chat: its own lines, and those
// of the chats talking through this process, go to it. Its name is the
// Adapter's.
func (a *App) Terminal() (Adapter, platform.Chats, error) {
	for _, p := range a.platforms {
		if !p.Terminal {
			continue
		}
		ad, err := a.adapter(p, "")
		if err != nil {
			return Adapter{}, nil, err
		}
		c, ok := ad.Adapter.(platform.Chats)
		if !ok {
			return Adapter{}, nil, fmt.Errorf("the terminal platform %q takes no chats (its adapter is a %T, not a platform.Chats)", p.Name, ad.Adapter)
		}
		return ad, c, nil
	}
	return Adapter{}, nil, errors.New("no terminal platform is registered (bots/registry lists none marked Terminal)")
}

// intakeDir is the intake journals' folder (<state>/intake), made 0700
// when missing; a link out of the state folder is refused.
func (a *App) intakeDir() (string, error) {
	r, err := a.state.Sub("intake")
	if err != nil {
		return "", fmt.Errorf("intake journal: %w", err)
	}
	r.Close()
	return filepath.Join(a.cfg.State.Dir, "intake"), nil
}

// adapter makes p's adapter. Every platform gets its section, the
// identities, its logger, its time to the first words shown, Remember
// this and the attachments' bound; a platform with tokens its access
// gate, the Thinker (measured), this app's /memory, the budgets and the
// intake journals' folder; the terminal the terminal's (TerminalDeps:
// its journal is kept in memory, so it is given no folder).
func (a *App) adapter(p platform.Platform, intakeDir string) (Adapter, error) {
	name := p.Name
	var d platform.Deps
	if p.Terminal {
		d = a.TerminalDeps()
	} else {
		gate, err := a.AccessGate(p)
		if err != nil {
			return Adapter{}, err
		}
		d = platform.Deps{Access: gate, Handler: a.PlatformHandler(), Memory: a.Memory.Platform(),
			Budget: a.budget, Refusals: a.metrics, IntakeDir: intakeDir}
	}
	d.Section, d.Identities, d.Logger = Section(a.cfg, name), a.cfg.IdentityIndex(), a.log.With("adapter", name)
	d.FirstVisible = func(dur time.Duration) { a.metrics.FirstVisible(name, dur) }
	d.Keeper, d.AttachmentMaxBytes = a.keeper, a.cfg.Attachments.MaxBytes
	ad, err := p.New(d)
	if err != nil {
		return Adapter{}, &ConfigError{err}
	}
	return Adapter{name, ad}, nil
}

// UseAdapters hands the running adapters to the app: the terminal
// platform (platform.Chats) for the second chats; their waiting messages
// their Forget for a forget (the registered platforms' journals first, in
// their order; an adapter no platform registered, a test's, after them),
// their queue length (when they have one) for /metrics.
func (a *App) UseAdapters(ads []Adapter) {
	live := map[string]func(user string) int{}
	for _, ad := range ads {
		if c, ok := ad.Adapter.(platform.Chats); ok {
			a.chats = c // the terminal: second chats talk to it
		}
		if q, ok := ad.Adapter.(platform.Queuer); ok {
			a.metrics.QueueSource(ad.Name, q.Queued)
		}
		live[ad.Name] = ad.Forget
	}
	a.changes.watchers.use(ads) // told whose memory changed (home.go)
	journals := Journals(a.platforms, live)
	for _, ad := range ads {
		if !registered(a.platforms, ad.Name) {
			journals = append(journals, userdata.Journal{Platform: ad.Name, Live: ad.Forget})
		}
	}
	a.UseJournals(journals)
}

func registered(ps []platform.Platform, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}
