package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
)

// defaultChatUser is the memory user of `mnemo chat` without --user when
// $USER is not a valid memory user name.
const defaultChatUser = "console"

// chatFlags defines chat's flags on fs and returns runChat bound to them.
func chatFlags(fs *flag.FlagSet) (runner, string) {
	user := fs.String("user", "", "memory user name")
	return func(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
		return runChat(ctx, env, cfg, *user, args)
	}, ""
}

// runChat is `mnemo chat [--user NAME]`: one line in, the reply out. At the
// end of input it waits for the reflections, then returns (exit 0). The
// first Ctrl-C (or SIGTERM) stops reading and gives the running answer and
// the reflections shutdown.grace; a second one stops at once (exit 130).
func runChat(ctx context.Context, env *cliEnv, cfg *config.Config, user string, args []string) error {
	if len(args) > 0 {
		return usageError("chat: unexpected argument %q; usage: mnemo chat [--user NAME]", args[0])
	}
	name := user
	if name == "" {
		name = env.getenv("USER")
		if memory.ValidateUser(name) != nil {
			name = defaultChatUser
		}
	}
	if err := memory.ValidateUser(name); err != nil {
		return usageError("chat: --user: %v", err)
	}
	interactive := isTerminal(env.stdin)
	if interactive && isTerminal(env.stderr) && cfg.Log.Level == "info" {
		// Info lines would interleave with the conversation on the same
		// screen: at a terminal, chat logs warnings only (debug still works).
		quiet := *cfg
		quiet.Log.Level = "warn"
		e := *env
		e.logger = slog.New(quiet.LogHandler(env.stderr))
		env = &e
	}
	// One owner per data folder, taken before the reflector replays the journal.
	lock, err := lockData(cfg, "mnemo chat")
	if err != nil {
		return err
	}
	defer lock.Close()
	a, err := openApp(ctx, env, cfg)
	if err != nil {
		return err
	}
	sd := newShutdown(signals{stop: ctx, abort: env.abort}, cfg.Shutdown.Grace, env.logger, a.calls.close)
	defer sd.release()
	ctl, err := a.listenControl()
	if err != nil {
		sd.begin()
		a.Close(sd.hard)
		return err
	}
	runErr := console.Run(ctx, console.Config{
		In: env.stdin, Out: env.stdout, Interactive: interactive, User: name,
		// The first Ctrl-C stops reading, not the answer being written.
		Handler: detachedHandler{a.agent},
		Color:   interactive && isTerminal(env.stdout) && env.getenv("NO_COLOR") == "" && env.getenv("TERM") != "dumb",
		Memory: func(user string) (string, error) {
			return wiring.Memory{Store: a.store, IndexBudget: 1 << 20}.Index(user)
		},
	})
	switch {
	case interactive && ctx.Err() != nil:
		fmt.Fprintf(env.stderr, "\nmnemo: saving what is worth remembering (up to %s; Ctrl-C again to quit now, and the rest is saved next time)…\n", cfg.Shutdown.Grace)
	case interactive:
		fmt.Fprintln(env.stderr, "mnemo: saving what is worth remembering…")
	}
	ctl.Close(sd.hard)
	closeErr := a.Close(sd.hard)
	saveErr := a.saveError()
	switch {
	case sd.aborted():
		return abortError()
	case closeErr != nil:
		return failure(closeErr)
	case saveErr != nil:
		return failure(fmt.Errorf("not everything was saved: %w", saveErr))
	case runErr != nil && ctx.Err() == nil:
		return failure(runErr)
	}
	return nil // EOF, /quit, or Ctrl-C: all normal ends of a chat
}

// isTerminal reports whether r is a character device (a person typing).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
