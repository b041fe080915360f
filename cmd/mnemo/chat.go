package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/state"
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
// Its lines go to the terminal platform (bots/console), on the pipeline
// Slack and Discord are on. When another chat or serve owns the data
// folder, the chat talks to that one's terminal platform (remoteclient.go)
// instead; this process then serves the chats through it on its control
// socket (app's chatsession.go) for as long as it runs.
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
	if interactive {
		var screen *console.Screen
		env, screen = sharedScreen(env, cfg)
		defer screen.Release()
	}
	var said *saidAtEnd
	if !opts.verbose {
		env, said = quietChatLogs(env, cfg)
	}
	// The model server settled before anything is created; then one owner
	// per data folder, taken before the reflector replays the journal.
	settled, err := settleLLM(ctx, env, cfg)
	if err != nil {
		// A chat through a running owner needs no model of its own (the
		// owner's environment may hold the key): try that first.
		if fi, serr := os.Lstat(app.ControlSocket(cfg)); serr == nil && fi.Mode().Type() == os.ModeSocket {
			if lock, lerr := lockData(env, cfg, "mnemo chat"); lerr == nil {
				lock.Close() // nobody owns the folder: the socket is a dead one's
			} else if held := (*lockHeldError)(nil); errors.As(lerr, &held) {
				return remoteChat(ctx, env, cfg, held, name, interactive)
			}
		}
		return err
	}
	cfg = settled
	lock, err := lockData(env, cfg, "mnemo chat")
	if held := (*lockHeldError)(nil); errors.As(err, &held) {
		// Another chat or serve owns the folder: talk through it.
		return remoteChat(ctx, env, cfg, held, name, interactive)
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	a, err := openApp(ctx, env, cfg)
	if err != nil {
		return err
	}
	a.StartBaseline(name)
	sd := newShutdown(signals{stop: ctx, abort: env.abort}, cfg.Shutdown.Grace, env.logger, a.CancelCalls)
	defer sd.release()
	stop := func(err error) error { // ends what was opened so far
		sd.begin()
		a.Close(sd.hard)
		return failure(err)
	}
	// The terminal platform (registered: bots/registry): this chat's
	// lines, and those of the chats talking through this process (the
	// control socket), on the pipeline.
	termAd, term, err := a.Terminal()
	if err != nil {
		return stop(err)
	}
	a.UseAdapters([]app.Adapter{termAd})
	ctl, err := a.ListenControl()
	if err != nil {
		return stop(err)
	}
	termCtx, stopTerm := context.WithCancel(context.WithoutCancel(ctx))
	termDone := make(chan error, 1)
	go func() { termDone <- term.Run(termCtx) }()
	var unanswered atomic.Int64 // messages the model could not answer
	var history string
	var historyRoot *os.Root
	if interactive {
		history, historyRoot = historyIn(env, a.State(), cfg, name)
	}
	if historyRoot != nil {
		defer historyRoot.Close()
	}
	// A signal stops reading, not the answer being written (the console
	// detaches it); at a terminal Ctrl-C is a key that cancels the answer,
	// and the platform withdraws that turn from the reflector.
	runErr := console.Run(ctx, console.Config{
		In: env.stdin, Out: env.stdout, Interactive: interactive, User: name,
		Chat: term.Conversation(name), Unanswered: &unanswered,
		FirstVisible: func(d time.Duration) { a.Metrics().FirstVisible(termAd.Name, d) },
		History:      history, HistoryRoot: historyRoot,
		Color: interactive && wantsColor(env),
	})
	if interactive {
		tellSaving(ctx, env, cfg)
	}
	// The chats through this one end now: a reply one of them waits for
	// has shutdown.grace, as running work has at a signal.
	ctlCtx, ctlDone := context.WithTimeout(sd.hard, cfg.Shutdown.Grace)
	ctl.Close(ctlCtx)
	ctlDone()
	stopTerm() // every line taken is answered first
	<-termDone
	closeErr := a.Close(sd.hard)
	saveErr := a.SaveError()
	switch {
	case sd.aborted():
		return abortError()
	case closeErr != nil:
		return failure(closeErr)
	case runErr != nil && ctx.Err() == nil:
		return failure(runErr)
	}
	if saveErr != nil && said != nil {
		if cause := said.cause(); cause != "" { // the logged errors were left out: said here
			saveErr = fmt.Errorf("%s; the reflection failed: %s (mnemo memory pending lists what waits)",
				strings.Replace(saveErr.Error(), " (see the errors logged)", "", 1), cause)
		}
	}
	return chatShortfall(interactive, unanswered.Load(), saveErr)
}

// sharedScreen is env with the chat's output and its log on one
// console.Screen: at a terminal they share the screen, and a log line never
// lands inside a line the chat is writing.
func sharedScreen(env *cliEnv, cfg *config.Config) (*cliEnv, *console.Screen) {
	screen := console.NewScreen(env.stdout, env.stderr)
	e := *env
	e.stdout, e.stderr = screen, screen.Log()
	e.logger = slog.New(cfg.LogHandler(e.stderr))
	return &e, screen
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
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return failure(errs[0])
	}
	return failure(fmt.Errorf("%w\nmnemo: %w", errs[0], errs[1])) // each line said as mnemo's
}

// quietChatLogs is quietLogs for a chat, whose end says what went wrong
// in one line per problem: the log lines that say the same are left out
// (a failed task: its reply says why; a failed reflection and an
// incomplete shutdown: the end says how many turns wait), and the last
// reflection failure's cause is kept for that line.
func quietChatLogs(env *cliEnv, cfg *config.Config) (*cliEnv, *saidAtEnd) {
	e := quietLogs(env, cfg)
	if e == env { // log.level asked for more: every line stays
		return env, nil
	}
	said := &saidAtEnd{}
	q := *e
	q.logger = slog.New(said.wrap(e.logger.Handler()))
	return &q, said
}

// saidAtEnd drops the log records a quiet chat reports at its end and
// keeps the cause of the last failed reflection.
type saidAtEnd struct {
	mu   sync.Mutex
	last string
}

func (s *saidAtEnd) cause() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *saidAtEnd) wrap(h slog.Handler) slog.Handler { return saidHandler{h, s} }

type saidHandler struct {
	slog.Handler
	said *saidAtEnd
}

func (h saidHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Message == "agent: task failed", r.Message == "reflector: shutdown incomplete",
		r.Message == "console: answering with an apology", r.Message == "answering with the agent's apology",
		r.Message == "the task did not run":
		return nil
	case strings.HasPrefix(r.Message, "reflection: failed"):
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				h.said.mu.Lock()
				h.said.last = a.Value.String()
				h.said.mu.Unlock()
			}
			return true
		})
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h saidHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return saidHandler{h.Handler.WithAttrs(as), h.said}
}

func (h saidHandler) WithGroup(name string) slog.Handler {
	return saidHandler{h.Handler.WithGroup(name), h.said}
}

// chatHistory is the file of what name typed in interactive chats, for
// the up arrow, for a chat through the owner (it has no app of its own):
// the state folder is opened for it. "" when that folder cannot be opened
// (said on stderr; the up arrow then recalls this chat only).
func chatHistory(env *cliEnv, cfg *config.Config, name string) (string, *os.Root) {
	st, err := openState(env, cfg.State.Dir)
	if err != nil {
		fmt.Fprintf(env.stderr, "mnemo: chat history: %v; ↑ recalls only this chat's messages\n", err)
		return "", nil
	}
	defer st.Close() // the chat folder's root stays open
	return historyIn(env, st, cfg, name)
}

// historyIn is the chat history of name in the state folder st: in its
// chat folder, one per memory user, opened through the state folder's
// root (a link there that leads out is not followed).
func historyIn(env *cliEnv, st *state.State, cfg *config.Config, name string) (string, *os.Root) {
	root, err := st.Sub("chat")
	if err != nil {
		fmt.Fprintf(env.stderr, "mnemo: chat history: %v; ↑ recalls only this chat's messages\n", err)
		return "", nil
	}
	return userdata.ChatHistoryFile(cfg.State.Dir, name), root // a forget deletes it (userdata)
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
