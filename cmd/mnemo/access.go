package main

// `mnemo access ...`: who may talk to mnemo (bots/access). ls reads
// <state>/access.json and the configuration; allow, revoke and approve
// change the file: under the data folder's lock when no chat or serve runs,
// else by asking the running process through its control socket
// (control.go), so that a running serve lets the person in (or out) at
// their next message, without a restart.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

// opAccess is the control operation behind allow, revoke and approve: the
// subcommand in Request.Path, its argument in Request.Arg.
const opAccess = "access"

// accessSubs are the `mnemo access` subcommands.
var accessSubs = map[string]memorySub{
	"ls":      {"", 0, 0},
	"allow":   {"PLATFORM:ID", 1, 1},
	"revoke":  {"PLATFORM:ID", 1, 1},
	"approve": {"CODE", 1, 1},
}

const accessSubNames = "ls, allow, revoke, approve"

// accessFlags returns runAccess and the subcommand's usage; access has no
// flags of its own.
func accessFlags(fs *flag.FlagSet) (runner, string) {
	usage := ""
	name := strings.TrimPrefix(fs.Name(), "access ")
	if sub, ok := accessSubs[name]; ok {
		usage = strings.TrimSpace("mnemo access " + name + " " + sub.args)
	}
	return runAccess, usage
}

// now is the command's clock: env.now in tests, else time.Now.
func (env *cliEnv) clock() time.Time {
	if env.now != nil {
		return env.now()
	}
	return time.Now()
}

// runAccess is `mnemo access SUBCOMMAND ...`.
func runAccess(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
	if len(args) == 0 {
		return usageError("access needs a subcommand: %s (run mnemo help access)", accessSubNames)
	}
	name, pos := args[0], args[1:]
	sub, ok := accessSubs[name]
	if !ok {
		return unknownCommand("access " + name)
	}
	if len(pos) != sub.max {
		return usageError("access %s takes %s; usage: %s", name, argCount(sub), strings.TrimSpace("mnemo access "+name+" "+sub.args))
	}
	if name == "ls" {
		return accessList(env, cfg)
	}
	if err := checkAccessArg(name, pos[0]); err != nil {
		return err
	}
	lock, err := lockData(env, cfg, "mnemo access")
	if held := (*lockHeldError)(nil); errors.As(err, &held) {
		return accessRemote(ctx, env, cfg, held, name, pos[0])
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	store, err := access.OpenStore(stateDir(cfg))
	if err != nil {
		return failure(err)
	}
	msg, err := accessDo(cfg, store, name, pos[0], env.clock())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.stdout, msg)
	return err
}

// checkAccessArg checks allow's and revoke's PLATFORM:ID and approve's
// CODE before anything is touched.
func checkAccessArg(name, arg string) error {
	if name == "approve" {
		if c := access.NormalCode(arg); c == "" || strings.Trim(c, "ABCDEFGHJKMNPQRSTUVWXYZ23456789") != "" || len(c) > 16 {
			return usageError("access approve: %q is not a pairing code; give the code the bot told the person, e.g. mnemo access approve K7QM2XPA", arg)
		}
		return nil
	}
	if _, _, err := access.ParseID(arg); err != nil {
		return usageError("access %s: %q: %v", name, arg, err)
	}
	return nil
}

// accessRemote asks the process that holds the lock to make the change.
func accessRemote(ctx context.Context, env *cliEnv, cfg *config.Config, held *lockHeldError, name, arg string) error {
	sock := controlSocket(cfg)
	ctx, cancel := context.WithTimeout(ctx, forgetCallMargin)
	defer cancel()
	msg, err := control.Call(ctx, sock, control.Request{Op: opAccess, Path: name, Arg: arg})
	if ns := (*control.NoServerError)(nil); errors.As(err, &ns) {
		return failure(fmt.Errorf("data folder %s is in use by %s, which does not answer on the control socket %s (%w); "+
			"if it is starting or stopping, run this again in a moment", cfg.Memory.DataDir, held.holder, sock, ns.Err))
	}
	if err != nil {
		return failure(err)
	}
	_, err = fmt.Fprintln(env.stdout, msg+" (done by "+held.holder+")")
	return err
}

// accessControl is the control socket's access operation, in the process
// that owns the data folder: the change is made in its store, which its
// gates read at each message.
func (a *app) accessControl(req control.Request) (string, error) {
	if _, ok := accessSubs[req.Path]; !ok || req.Path == "ls" {
		return "", fmt.Errorf("unknown access operation %q; this mnemo knows allow, revoke, approve", req.Path)
	}
	if err := checkAccessArg(req.Path, req.Arg); err != nil {
		return "", err
	}
	store, err := a.accessStore()
	if err != nil {
		return "", err
	}
	msg, err := accessDo(a.cfg, store, req.Path, req.Arg, a.env.clock())
	if err == nil {
		a.env.logger.Info("access: changed by mnemo access", "op", req.Path, "result", msg)
	}
	return msg, err
}

// accessStore is the access list of this process (opened once).
func (a *app) accessStore() (*access.Store, error) {
	a.accessMu.Lock()
	defer a.accessMu.Unlock()
	if a.access == nil {
		s, err := access.OpenStore(stateDir(a.cfg))
		if err != nil {
			return nil, err
		}
		a.access = s
	}
	return a.access, nil
}

// accessDo makes one change (allow, revoke, approve; the argument checked)
// and says what it did.
func accessDo(cfg *config.Config, store *access.Store, name, arg string, now time.Time) (string, error) {
	if name == "approve" {
		a, err := store.Approve(arg, now)
		switch {
		case errors.Is(err, access.ErrNoCode):
			return "", failure(fmt.Errorf("no pairing code %s is waiting (mnemo access ls lists them); a code is valid for an hour: ask the person to write to the bot again for a new one", access.NormalCode(arg)))
		case errors.Is(err, access.ErrExpired):
			return "", failure(fmt.Errorf("pairing code %s: %w; ask the person to write to the bot again for a new one", access.NormalCode(arg), err))
		case err != nil:
			return "", failure(err)
		}
		return fmt.Sprintf("approved %s: %s may talk to mnemo now", access.NormalCode(arg), a.Key()), nil
	}
	platform, e, _ := access.ParseID(arg) // checked by checkAccessArg
	key := platform + ":" + e.String()
	if name == "allow" {
		added, err := store.Allow(platform, e, "mnemo access allow", now)
		switch {
		case err != nil:
			return "", failure(err)
		case !added:
			return key + " was allowed already", nil
		}
		return "allowed " + key, nil
	}
	removed, err := store.Revoke(platform, e)
	switch {
	case err != nil:
		return "", failure(err)
	case removed:
		return "revoked " + key, nil
	case listedInConfig(cfg, platform, e):
		return "", failure(fmt.Errorf("%s is listed in %s.allow in the configuration, not added by mnemo access; remove it there and restart mnemo serve", key, platform))
	}
	return "", failure(fmt.Errorf("%s is not in the access list (mnemo access ls lists it)", key))
}

// configAllow is platform's configured mode and list.
func configAllow(cfg *config.Config, platform string) (mode string, allow []string) {
	if platform == access.Slack {
		return cfg.Slack.Access, cfg.Slack.Allow
	}
	return cfg.Discord.Access, cfg.Discord.Allow
}

func listedInConfig(cfg *config.Config, platform string, e access.Entry) bool {
	_, allow := configAllow(cfg, platform)
	list, _ := access.ParseList(platform, allow) // validated at load
	for _, c := range list {
		if c == e {
			return true
		}
	}
	return false
}

// modeNote says what a mode lets in, for ls.
var modeNote = map[string]map[string]string{
	access.Slack: {
		"open":      "the members of the bot's own workspace, and what is listed",
		"allowlist": "only what is listed",
		"pairing":   "what is listed, and people who were given a code and approved",
	},
	access.Discord: {
		"open":      "everyone who can reach the bot",
		"allowlist": "only what is listed",
		"pairing":   "what is listed, and people who were given a code and approved",
	},
}

// accessList is `mnemo access ls`: each platform's mode, what is let in
// (configuration and added), and the codes waiting for approval.
func accessList(env *cliEnv, cfg *config.Config) error {
	store, err := access.OpenStore(stateDir(cfg))
	if err != nil {
		return failure(err)
	}
	now := env.clock()
	added, codes := store.List(now)
	w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	for _, platform := range []string{access.Slack, access.Discord} {
		mode, allow := configAllow(cfg, platform)
		fmt.Fprintf(w, "%s.access: %s (%s)\n", platform, mode, modeNote[platform][mode])
		for _, id := range allow {
			fmt.Fprintf(w, "  %s:%s\t%s.allow in the configuration\n", platform, id, platform)
		}
		for _, a := range added {
			if a.Platform == platform {
				fmt.Fprintf(w, "  %s\tadded %s by %s\n", a.Key(), a.Added.UTC().Format("2006-01-02 15:04 UTC"), a.By)
			}
		}
	}
	if len(codes) > 0 {
		fmt.Fprintln(w, "waiting for approval (mnemo access approve CODE):")
		for _, c := range codes {
			fmt.Fprintf(w, "  %s\t%s\tuntil %s\n", c.Code, c.Key(), c.Expires.UTC().Format("2006-01-02 15:04 UTC"))
		}
	}
	return w.Flush()
}
