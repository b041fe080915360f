package app

// Who may talk to mnemo (bots/access), as `mnemo access` changes it:
// under the data folder's lock when no chat or serve runs (the CLI calls
// ChangeAccess), else by asking the running process through its control
// socket (accessControl), so that a running serve lets the person in (or
// out) at their next message, without a restart.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

// CheckAccessArg checks allow's and revoke's PLATFORM:ID and approve's
// CODE (name is the subcommand) before anything is touched.
func CheckAccessArg(name, arg string) error {
	if name == "approve" {
		if c := access.NormalCode(arg); c == "" || strings.Trim(c, "ABCDEFGHJKMNPQRSTUVWXYZ23456789") != "" || len(c) > 16 {
			return fmt.Errorf("access approve: %q is not a pairing code; give the code the bot told the person, e.g. mnemo access approve K7QM2XPA", arg)
		}
		return nil
	}
	if _, _, err := access.ParseID(arg); err != nil {
		return fmt.Errorf("access %s: %q: %w", name, arg, err)
	}
	return nil
}

// accessControl is the control socket's access operation, in the process
// that owns the data folder: the change is made in its store, which its
// gates read at each message.
func (a *App) accessControl(req control.Request) (string, error) {
	if !slices.Contains([]string{"allow", "revoke", "approve"}, req.Path) {
		return "", fmt.Errorf("unknown access operation %q; this mnemo knows allow, revoke, approve", req.Path)
	}
	if err := CheckAccessArg(req.Path, req.Arg); err != nil {
		return "", err
	}
	store, err := a.AccessStore()
	if err != nil {
		return "", err
	}
	msg, err := ChangeAccess(a.cfg, store, req.Path, req.Arg, a.now())
	if err == nil {
		a.log.Info("access: changed by mnemo access", "op", req.Path, "result", msg)
	}
	return msg, err
}

// AccessStore is the access list of this process (opened once).
func (a *App) AccessStore() (*access.Store, error) {
	a.accessMu.Lock()
	defer a.accessMu.Unlock()
	if a.access == nil {
		s, err := access.OpenStore(a.cfg.State.Dir)
		if err != nil {
			return nil, err
		}
		a.access = s
	}
	return a.access, nil
}

// ChangeAccess makes one change (allow, revoke, approve; the argument
// checked by CheckAccessArg) and says what it did.
func ChangeAccess(cfg *config.Config, store *access.Store, name, arg string, now time.Time) (string, error) {
	if name == "approve" {
		a, err := store.Approve(arg, now)
		switch {
		case errors.Is(err, access.ErrNoCode):
			return "", fmt.Errorf("no pairing code %s is waiting (mnemo access ls lists them); a code is valid for an hour: ask the person to write to the bot again for a new one", access.NormalCode(arg))
		case errors.Is(err, access.ErrExpired):
			return "", fmt.Errorf("pairing code %s: %w; ask the person to write to the bot again for a new one", access.NormalCode(arg), err)
		case err != nil:
			return "", err
		}
		return fmt.Sprintf("approved %s: %s may talk to mnemo now", access.NormalCode(arg), a.Key()), nil
	}
	platform, e, _ := access.ParseID(arg) // checked by CheckAccessArg
	key := platform + ":" + e.String()
	if name == "allow" {
		added, err := store.Allow(platform, e, "mnemo access allow", now)
		switch {
		case err != nil:
			return "", err
		case !added:
			return key + " was allowed already", nil
		}
		return "allowed " + key, nil
	}
	removed, err := store.Revoke(platform, e)
	switch {
	case err != nil:
		return "", err
	case removed:
		return "revoked " + key, nil
	case listedInConfig(cfg, platform, e):
		return "", fmt.Errorf("%s is listed in %s.allow in the configuration, not added by mnemo access; remove it there and restart mnemo serve", key, platform)
	}
	return "", fmt.Errorf("%s is not in the access list (mnemo access ls lists it)", key)
}

// ConfigAllow is platform's configured mode and list (<platform>.access,
// <platform>.allow); "" and none for a platform without that section.
func ConfigAllow(cfg *config.Config, platform string) (mode string, allow []string) {
	var s struct {
		Access string
		Allow  []string
	}
	_ = Section(cfg, platform)(&s) // a section of the configuration: its values encode
	return s.Access, s.Allow
}

func listedInConfig(cfg *config.Config, platform string, e access.Entry) bool {
	_, allow := ConfigAllow(cfg, platform)
	list, _ := access.ParseList(platform, allow) // validated at load
	return slices.Contains(list, e)
}

// AccessGate is platform p's access check (<name>.access and .allow):
// the configured list and the one `mnemo access` keeps in the state
// folder, which the control socket changes while serve runs. Refusals are
// counted in mnemo_refused_total{reason="access"}.
func (a *App) AccessGate(p platform.Platform) (*access.Gate, error) {
	store, err := a.AccessStore()
	if err != nil {
		return nil, err
	}
	mode, allow := ConfigAllow(a.cfg, p.Name)
	list, err := access.ParseList(p.Name, allow)
	if err != nil { // Validate checked it: a caller's hand-built config
		return nil, &ConfigError{err}
	}
	log := a.log.With("adapter", p.Name)
	if mode == string(access.Open) && p.Access.OpenNote != "" {
		log.Info(p.Access.OpenNote)
	}
	return access.NewGate(access.GateOptions{
		Platform: p.Name, Store: store, Refused: a.metrics.Refused, Log: log, Now: a.now,
		Policy: access.Policy{Mode: access.Mode(mode), HomeOnly: p.Access.HomeOnly, Allow: list},
	}), nil
}
