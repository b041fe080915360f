package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/memory"
)

// defaultChatUser is the memory user of `mnemo chat` without --user when
// $USER is not a valid memory user name.
const defaultChatUser = "console"

// chatFlags defines chat's flags on fs and returns runChat bound to them.
func chatFlags(fs *flag.FlagSet) (runner, string) {
	user := fs.String("user", "", "memory user name")
	verbose := fs.Bool("verbose", false, "log info lines too")
	return func(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
		return runChat(ctx, env, cfg, chatOptions{user: *user, verbose: *verbose}, args)
	}, ""
}

// chatOptions are chat's flags.
type chatOptions struct {
	user    string // --user
	verbose bool   // --verbose
}

// runChat is `mnemo chat [--user NAME] [--verbose]`: one message in, the
// reply out. At the end of input it waits for the reflections, then
// returns (exit 0). The first SIGINT (or SIGTERM) stops reading and gives
// the running answer and the reflections shutdown.grace; a second one
// stops at once (exit 130). At a terminal Ctrl-C is a key the console
// handles (it cancels a reply; twice, it ends the chat like Ctrl-D).
func runChat(ctx context.Context, env *cliEnv, cfg *config.Config, opts chatOptions, args []string) error {
	if len(args) > 0 {
		return usageError("chat: unexpected argument %q; usage: mnemo chat [--user NAME] [--verbose]", args[0])
	}
	name, err := chatUser(env, opts.user)
	if err != nil {
		return err
	}
	// A person at a terminal: keys in, the conversation out. With either
	// redirected, chat is piped: replies only on stdout.
	interactive := isTerminal(env.stdin) && isTerminal(env.stdout)
	if !opts.verbose {
		env = quietLogs(env, cfg)
	}
	// The model server settled before anything is created; then one owner
	// per data folder, taken before the reflector replays the journal.
	cfg, err = settleLLM(ctx, env, cfg)
	if err != nil {
		return err
	}
	lock, err := lockData(env, cfg, "mnemo chat")
	if err != nil {
		return err
	}
	defer lock.Close()
	a, err := openApp(ctx, env, cfg)
	if err != nil {
		return err
	}
	a.startBaseline(name)
	sd := newShutdown(signals{stop: ctx, abort: env.abort}, cfg.Shutdown.Grace, env.logger, a.calls.close)
	defer sd.release()
	ctl, err := a.listenControl()
	if err != nil {
		sd.begin()
		a.Close(sd.hard)
		return err
	}
	var unanswered atomic.Int64 // messages the model could not answer
	runErr := console.Run(ctx, console.Config{
		In: env.stdin, Out: env.stdout, Interactive: interactive, User: name,
		// A signal stops reading, not the answer being written (the
		// console detaches it); at a terminal Ctrl-C is a key that
		// cancels the answer, and Withdraw keeps that turn from the reflector.
		Handler: explainingHandler{measuredHandler{a.core.Agent, a.metrics},
			explainer{baseURL: a.baseURL, model: cfg.LLM.Model, models: a.llm}, &unanswered},
		Withdraw:   a.withdraw,
		History:    chatHistory(cfg, name, interactive),
		Color:      interactive && wantsColor(env),
		Memory:     a.showInChat,
		Visibility: a,
		Forget:     a.forgetInChat,
	})
	if interactive {
		tellSaving(ctx, env, cfg)
	}
	ctl.Close(sd.hard)
	closeErr := a.Close(sd.hard)
	saveErr := a.saveError()
	switch {
	case sd.aborted():
		return abortError()
	case closeErr != nil:
		return failure(closeErr)
	case runErr != nil && ctx.Err() == nil:
		return failure(runErr)
	}
	return chatShortfall(interactive, unanswered.Load(), saveErr)
}

// wantsColor reports whether the terminal takes colors: not with $NO_COLOR
// set, nor on a dumb terminal.
func wantsColor(env *cliEnv) bool {
	return env.getenv("NO_COLOR") == "" && env.getenv("TERM") != "dumb"
}

// chatUser is the memory user of a chat: --user, else $USER when it is a
// valid memory user name, else defaultChatUser.
func chatUser(env *cliEnv, flag string) (string, error) {
	name := flag
	if name == "" {
		name = env.getenv("USER")
		if memory.ValidateUser(name) != nil {
			name = defaultChatUser
		}
	}
	if err := memory.ValidateUser(name); err != nil {
		return "", usageError("chat: --user: %v", err)
	}
	return name, nil
}

// quietLogs is env logging warnings and errors only when the level is
// info: info lines would interleave with the conversation on the same
// screen, or bury a script's answer (--verbose keeps them; log.level:
// debug still works).
func quietLogs(env *cliEnv, cfg *config.Config) *cliEnv {
	if cfg.Log.Level != "info" {
		return env
	}
	quiet := *cfg
	quiet.Log.Level = "warn"
	e := *env
	e.logger = slog.New(quiet.LogHandler(env.stderr))
	return &e
}

// tellSaving tells the person at the terminal why the chat does not end
// at once: the reflections run first, within the grace after a signal.
func tellSaving(ctx context.Context, env *cliEnv, cfg *config.Config) {
	if ctx.Err() != nil {
		fmt.Fprintf(env.stderr, "\nmnemo: saving what is worth remembering (up to %s; Ctrl-C again to quit now, and the rest is saved next time)…\n", cfg.Shutdown.Grace)
		return
	}
	fmt.Fprintln(env.stderr, "mnemo: saving what is worth remembering…")
}

// chatShortfall is the failure of a chat that ended normally but left
// messages unanswered (when piped: a script sees the exit code, a person
// the replies that say why) or reflections unsaved; nil for EOF, /quit or
// Ctrl-C with everything done: all normal ends of a chat.
func chatShortfall(interactive bool, unanswered int64, saveErr error) error {
	var errs []error
	if !interactive && unanswered > 0 {
		errs = append(errs, fmt.Errorf("%d message(s) could not be answered; the replies say why", unanswered))
	}
	if saveErr != nil {
		errs = append(errs, fmt.Errorf("not everything was saved: %w", saveErr))
	}
	if len(errs) > 0 {
		return failure(errors.Join(errs...))
	}
	return nil
}

// chatHistory is the file of what name typed in interactive chats, for
// the up arrow: in the state folder, one per memory user.
func chatHistory(cfg *config.Config, name string, interactive bool) string {
	if !interactive {
		return ""
	}
	return userdata.ChatHistoryFile(stateDir(cfg), name) // a forget deletes it (userdata)
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
