package main

// `mnemo access ...`: who may talk to mnemo (bots/access). ls reads
// <state>/access.json and the configuration; allow, revoke and approve
// change the file: under the data folder's lock when no chat or serve runs,
// else by asking the running process through its control socket
// (cmd/internal/app), so that a running serve lets the person in (or out) at
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
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

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
	if err := app.CheckAccessArg(name, pos[0]); err != nil {
		return usageError("%v", err)
	}
	lock, err := lockData(env, cfg, "mnemo access")
	if held := (*lockHeldError)(nil); errors.As(err, &held) {
		return accessRemote(ctx, env, cfg, held, name, pos[0])
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	store, err := access.OpenStore(cfg.State.Dir)
	if err != nil {
		return failure(err)
	}
	msg, err := app.ChangeAccess(cfg, store, name, pos[0], env.clock())
	if err != nil {
		return failure(err)
	}
	_, err = fmt.Fprintln(env.stdout, msg)
	return err
}

// accessRemote asks the process that holds the lock to make the change.
func accessRemote(ctx context.Context, env *cliEnv, cfg *config.Config, held *lockHeldError, name, arg string) error {
	sock := app.ControlSocket(cfg)
	ctx, cancel := context.WithTimeout(ctx, forgetCallMargin)
	defer cancel()
	msg, err := control.Call(ctx, sock, control.Request{Op: app.OpAccess, Path: name, Arg: arg})
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

// accessList is `mnemo access ls`: each platform's mode, what is let in
// (configuration and added), and the codes waiting for approval.
func accessList(env *cliEnv, cfg *config.Config) error {
	store, err := access.OpenStore(cfg.State.Dir)
	if err != nil {
		return failure(err)
	}
	now := env.clock()
	added, codes := store.List(now)
	w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	for _, p := range registry.Platforms() {
		platform := p.Name
		if cfg.Section(platform) == nil {
			continue // a platform the configuration has no section for: nobody is let in there
		}
		mode, allow := app.ConfigAllow(cfg, platform)
		fmt.Fprintf(w, "%s.access: %s (%s)\n", platform, mode, p.Access.Modes[mode])
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
			from := ""
			if c.Source != "" {
				from = "\tfrom " + c.Source
			}
			fmt.Fprintf(w, "  %s\t%s\tuntil %s%s\n", c.Code, c.Key(), c.Expires.UTC().Format("2006-01-02 15:04 UTC"), from)
		}
	}
	for _, line := range access.Crowded(codes) {
		fmt.Fprintln(w, line)
	}
	return w.Flush()
}
