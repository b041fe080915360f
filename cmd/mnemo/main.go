// Command mnemo is a chat agent with long-term memory per user, kept as
// Markdown files: `mnemo chat` in a terminal, `mnemo serve` for Slack and
// Discord, `mnemo memory ...` for admins. Run `mnemo help` for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

const usageText = `Usage: mnemo [global flags] COMMAND [flags] [arguments]

mnemo is a chat agent with long-term memory per user, kept as Markdown files.

Commands:
  chat [--user NAME] [--verbose]   talk in the terminal: one message in, the reply
                                   out; at end of input, waits for reflections and
                                   exits (--verbose: info log lines too)
  serve                            run the Slack and/or Discord adapters that have
                                   tokens, with /healthz, /readyz and /metrics
  memory users                     list the users that have memory, one per line
  memory ls USER                   list a user's files: path, size, summary
  memory show USER PATH            print one memory file
  memory check [USER] [--fix]      report files without a summary, bad names, non-
                                   regular files, torn entries, loose modes, foreign
                                   owners (--fix repairs those); exit 1 if any
  memory search USER QUERY...      the entries that match, best first (--json,
                                   --limit N); runs beside a chat or serve
  memory why USER TEXT...          the matching lines, where each was learned and
                                   who changed it
  memory forget USER [PATH] --yes  delete a user's memory, or one file, and its
                                   history (--keep-history keeps the history)
  memory export USER               write a tar.gz of a user's memory to stdout
  memory edit USER PATH            edit one memory file in $EDITOR, checked before
                                   it is saved; never overwrites a change made meanwhile
  memory history USER [PATH]       the kept versions of a file (or of all): id, time,
                                   who, size, what changed
  memory restore USER PATH --at ID|TIME
                                   bring a version back (kept as a change itself)
  memory pending [USER] [--retry|--drop]
                                   the turns waiting to be reflected, and those
                                   given up on: list, journal again, or delete
  memory rollup [--dry-run] USER   roll up USER's old episode months now (one
                                   model call per quarter or year due)
  access ls|allow|revoke|approve   who may talk to mnemo in Slack and Discord: list,
                                   let in PLATFORM:ID, take back, approve a pairing CODE
  init                             first setup: the model server, key and model,
                                   checked with one request; writes mnemo.yaml and
                                   the key to mnemo.env (mode 0600)
  healthcheck                      exit 0 when /healthz of the local serve answers
                                   (server.listen or --listen; for containers)
  version                          print the version
  help [COMMAND]                   print this help, or one command's (also
                                   mnemo COMMAND --help)

Global flags (before or after the command):
  --config FILE        YAML configuration (default: ./mnemo.yaml when present)
  --log-format FORMAT  log format: text or json (log.format)
  --listen ADDR        address of /healthz, /readyz and /metrics for serve
                       (server.listen, default 127.0.0.1:9090)
  -h, --help           print this help

Memory paths are facts/<name>.md or episodes/YYYY-MM.md. The memory folder is
MNEMO_DATA_DIR or memory.dataDir (default data/memory); the memory commands
need no LLM. chat, serve and memory forget own the data folder while they run
(a lock in the state folder): a second chat or serve exits 1 naming the
process that holds it; memory forget asks that process to do the forget (a
control socket in the state folder) and prints "deleted" once it is done; the
other memory commands only read and work meanwhile. Every setting, its YAML
key and its environment variable are in deploy/mnemo.yaml.

SIGTERM or SIGINT (Ctrl-C) stops chat and serve: no new messages, running
work gets shutdown.grace (default 20s) to finish, unfinished reflections stay
journaled for the next start, exit 0. A second signal stops at once (exit 130).

Exit status: 0 success; 1 failure, or problems found by memory check;
2 usage or configuration error; 130 stopped by a second signal.
`

// cliEnv is the process as a subcommand sees it. run builds it once and
// passes the same one to runChat, runServe and runMemory; no field is nil
// then. Subcommands read and write only through it (never os.Getenv,
// os.Stdin, os.Stdout, os.Stderr or slog.Default), so that tests drive the
// real code path with a map, buffers and a temp folder.
type cliEnv struct {
	// getenv reads the environment (os.Getenv in the binary, a map in tests).
	// The configuration has already applied the variables it knows.
	getenv func(string) string
	// stdin is the input: chat reads the user's lines from it.
	stdin io.Reader
	// stdout is the output for the person or the script running mnemo:
	// chat replies, listings, archives. Never logs.
	stdout io.Writer
	// stderr is for diagnostics; logger writes here.
	stderr io.Writer
	// logger is built from the configuration (log.format, log.level,
	// --log-format) and writes to stderr.
	logger *slog.Logger
	// configFile is the configuration file that was read, or "" when mnemo
	// runs on defaults and the environment only.
	configFile string
	// faults, when set, is called before each change the memory store and
	// the reflection journal make on disk (see memory.Options.Faults): the
	// crash and disk-fault tests kill or fail the process there. nil in the
	// binary.
	faults durable.Hook
	// commands are the subcommands that load the configuration; nil means
	// commandTable (tests stand in for chat and serve here).
	commands map[string]command
	// flock, when set, stands in for syscall.Flock: tests make the lock
	// call fail. nil in the binary.
	flock func(fd, how int) error
	// self is how the person ran this binary (os.Args[0]: "bin/mnemo",
	// "mnemo"), so that a printed next step runs as written; "" is "mnemo".
	self string
	// abort is closed at a second SIGTERM or SIGINT (the command's ctx is
	// done at the first): chat and serve then stop waiting for running
	// work. nil: never.
	abort <-chan struct{}
	// now, when set, is the clock of the access checks, `mnemo access`
	// and the budgets (limits.*): tests move it past a pairing code's hour
	// or to the next day. nil: time.Now.
	now func() time.Time
	// uid, when set, is who runs this command (os.Getuid), and owner who
	// owns a file (its stat; see memory.Options.Owner): tests play root or
	// a file left by another user. nil in the binary.
	uid   func() int
	owner memory.Owner
	// platforms, when set, stand in for the registered chat platforms
	// (bots/registry) that chat and serve open the app with: tests give
	// serve a fake terminal. nil in the binary.
	platforms []platform.Platform
}

// registered are the chat platforms chat and serve run (bots/registry,
// or env.platforms).
func (env *cliEnv) registered() []platform.Platform {
	if env.platforms != nil {
		return env.platforms
	}
	return registry.Platforms()
}

// runner runs a subcommand once its flags are parsed and the configuration
// is loaded; args are its arguments without the flags. ctx is cancelled at
// the first SIGINT or SIGTERM; env.abort is closed at the second.
type runner func(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error

// command is a subcommand that needs the configuration. Its flags function
// defines the subcommand's own flags on fs, whose name is the subcommand as
// typed ("chat", "memory ls"), and returns the runner and the usage that
// follows a flag mistake ("" for none). A group's first argument names a
// subcommand ("memory ls"); before it only global flags are accepted.
type command struct {
	flags func(fs *flag.FlagSet) (runner, string)
	group bool
	// noConfig: the command runs without loading the configuration (init
	// writes it); its runner gets a nil cfg and the --config file in
	// env.configFile.
	noConfig bool
}

// commandTable returns the subcommands that load the configuration.
func commandTable() map[string]command {
	return map[string]command{
		"chat":        {flags: chatFlags},
		"serve":       {flags: serveFlags},
		"memory":      {flags: memoryFlags, group: true},
		"access":      {flags: accessFlags, group: true},
		"healthcheck": {flags: healthcheckFlags},
		"init":        {flags: initFlags, noConfig: true},
	}
}

func main() { os.Exit(runProcess()) }

// runProcess is main but for the exit: run on the process's arguments,
// environment, standard streams and signals. It returns the exit status.
func runProcess() int {
	c := make(chan os.Signal, 2)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	sig, release := watchSignals(c)
	code := runToExit(sig, abortWait, os.Stderr, func() error {
		return runWith(sig, os.Args[1:], cliEnv{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, self: os.Args[0]})
	})
	signal.Stop(c)
	release()
	return code
}

// exitError is an error with the exit status it calls for.
type exitError struct {
	code  int
	err   error
	usage bool // also print the usage text on stderr
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake on the command line: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// configError is a configuration that cannot be used: exit 2.
func configError(err error) error { return &exitError{code: 2, err: err} }

// failure is an error with exit status 1 (any error without a code is one).
func failure(err error) error { return &exitError{code: 1, err: err} }

// exitCode prints err on stderr as "mnemo: message" and returns the exit
// status: 0 for nil; the code of an exitError; 2 for config.ErrNoLLM (no LLM
// configured, a configuration error); 1 for anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.Is(err, config.ErrNoLLM):
		code = 2
	}
	fmt.Fprintf(stderr, "mnemo: %v\n", err)
	if ee != nil && ee.usage {
		fmt.Fprint(stderr, "\n"+usageText)
	}
	return code
}

// globalFlags are the flags accepted before the subcommand and among its
// own flags. nil: not given.
type globalFlags struct {
	config    *string
	logFormat *string
	listen    *string
	help      bool
}

// globalNames are the global flags, as the usage text lists them.
const globalNames = "--config, --log-format, --listen and --help"

// define defines the global flags on fs, bound to g.
func (g *globalFlags) define(fs *flag.FlagSet) {
	for name, p := range map[string]**string{"config": &g.config, "log-format": &g.logFormat, "listen": &g.listen} {
		fs.Func(name, "", func(v string) error { *p = &v; return nil })
	}
	for _, name := range []string{"h", "help"} {
		fs.BoolFunc(name, "", func(v string) (err error) { g.help, err = strconv.ParseBool(v); return err })
	}
}

// isGlobal reports whether name (without dashes) is a global flag.
func isGlobal(name string) bool {
	return slices.Contains([]string{"config", "log-format", "listen", "h", "help"}, name)
}

// parseCommandLine parses the global flags, the subcommand and its flags.
// It returns the subcommand's name ("" for none), its runner (nil for one
// that needs no configuration: help, version, or an unknown name) and its
// arguments without the flags.
func parseCommandLine(args []string, commands map[string]command) (g globalFlags, name string, run runner, pos []string, err error) {
	top := newFlagSet("mnemo")
	g.define(top)
	if err := top.Parse(args); err != nil {
		msg, name := flagMessage(err)
		if strings.HasPrefix(msg, "unknown flag") {
			msg += nearFlag(top, err, name) + "; the global flags are " + globalNames + " (run mnemo help)"
		}
		return g, "", nil, nil, usageError("%s", msg)
	}
	rest := top.Args()
	if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
		return g, "", nil, nil, usageError("unknown flag --; the global flags are %s (run mnemo help)", globalNames)
	}
	if len(rest) == 0 {
		return g, "", nil, nil, nil
	}
	name, rest = rest[0], rest[1:]
	cmd, ok := commands[name]
	fsName, usage := name, ""
	if ok && cmd.group {
		lead := newFlagSet(name)
		g.define(lead)
		if err := lead.Parse(rest); err == nil {
			rest = lead.Args()
		} else if msg, named := flagMessage(err); isGlobal(named) {
			return g, name, nil, nil, usageError("%s", msg)
		} // else the flag is taken for the subcommand's name, which is unknown

		if len(rest) > 0 {
			fsName += " " + rest[0]
			pos, rest = rest[:1], rest[1:]
		}
	}
	fs := newFlagSet(fsName)
	g.define(fs)
	if ok {
		run, usage = cmd.flags(fs)
	}
	more, err := parseArgs(fs, rest, usage)
	if err != nil && (ok || name == "version") { // an unknown command is reported as such
		return g, name, nil, nil, err
	}
	return g, name, run, append(pos, more...), nil
}

// newFlagSet returns a flag set for a subcommand that reports mistakes as
// errors instead of printing and exiting. name is the subcommand as typed
// ("chat", "memory forget").
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses a subcommand's flags, which may come before, between or
// after its arguments, and returns the arguments. "--" ends the flags. A
// mistake is a usage error naming the flag and the subcommand (but for a
// global flag), then usage if any.
func parseArgs(fs *flag.FlagSet, args []string, usage string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			msg, name := flagMessage(err)
			if isGlobal(name) {
				return nil, usageError("%s", msg)
			}
			msg += nearFlag(fs, err, name)
			if usage != "" {
				msg += "; usage: " + usage
			}
			return nil, usageError("%s: %s", fs.Name(), msg)
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// nearFlag is "; did you mean --NAME?" when err is an unknown flag that
// looks like a typo of one of fs's flags (--usr for --user), else "".
func nearFlag(fs *flag.FlagSet, err error, name string) string {
	if !strings.HasPrefix(err.Error(), "flag provided but not defined") {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if near, ok := text.Nearest(name, names); ok {
		return "; did you mean --" + near + "?"
	}
	return ""
}

// flagMessage rewords the flag package's errors, and returns the flag
// named when there is one.
func flagMessage(err error) (msg, name string) {
	msg = err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name, name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value", name
	}
	return msg, ""
}

// runWith is run on a process whose getenv, stdin, stdout, stderr (and,
// in tests, faults) are set; it fills in the rest.
func runWith(sig signals, args []string, proc cliEnv) error {
	getenv, stdout, stderr := proc.getenv, proc.stdout, proc.stderr
	if proc.commands == nil {
		proc.commands = commandTable()
	}
	g, name, run, pos, err := parseCommandLine(args, proc.commands)
	switch {
	case err != nil:
		return err
	case name == "help" && len(pos) > 0:
		return printHelp(stdout, pos)
	case g.help && name != "" && name != "help":
		words := []string{name}
		if proc.commands[name].group && len(pos) > 0 {
			words = append(words, pos[0])
		}
		return printHelp(stdout, words)
	case g.help || name == "help":
		_, err := fmt.Fprint(stdout, usageText)
		return err
	case name == "":
		return &exitError{code: 2, err: errors.New("no command given"), usage: true}
	case name == "version":
		if len(pos) > 0 {
			return usageError("version takes no arguments")
		}
		info, _ := debug.ReadBuildInfo()
		_, err = fmt.Fprintln(stdout, versionString(version, buildDate, info))
		return err
	case run == nil:
		return unknownCommand(name)
	case proc.commands[name].noConfig:
		env := proc
		env.logger = slog.New(slog.DiscardHandler)
		if g.config != nil {
			env.configFile = *g.config
		}
		return run(sig.stop, &env, nil, pos)
	}
	cfg, file, err := loadConfig(g, getenv)
	if err != nil {
		return err
	}
	env := proc
	env.logger = slog.New(cfg.LogHandler(stderr))
	env.configFile = file
	// Said once, at the start of what runs on (not by every admin command
	// or health check); names only, never values.
	if keys := cfg.Overridden(); len(keys) > 0 && (name == "serve" || name == "chat") {
		env.logger.Info("environment variables override keys of the config file", "file", file, "keys", strings.Join(keys, ", "))
	}
	env.abort = sig.abort
	if name == "chat" || name == "serve" {
		if msg := looseSecrets(file); msg != "" {
			env.logger.Warn("config: " + msg)
		}
	}
	return run(sig.stop, &env, cfg, pos)
}

// loadConfig reads --config (or ./mnemo.yaml when present) and the
// environment, then applies --log-format and --listen. It returns the file
// read ("" for none).
func loadConfig(g globalFlags, getenv func(string) string) (*config.Config, string, error) {
	path, explicit := "", g.config != nil
	if explicit {
		path = *g.config
	}
	cfg, err := config.Load(path, explicit, getenv, registry.Platforms()...)
	if err != nil {
		return nil, "", configError(err)
	}
	if !explicit {
		if _, err := os.Stat(config.DefaultFile); err == nil {
			path = config.DefaultFile
		}
	}
	if g.logFormat == nil && g.listen == nil {
		return cfg, path, nil
	}
	if g.logFormat != nil {
		cfg.Log.Format = *g.logFormat
	}
	if g.listen != nil {
		cfg.Server.Listen = *g.listen
	}
	if err := cfg.Validate(); err != nil {
		msg := strings.NewReplacer("log.format", "--log-format", "server.listen", "--listen").Replace(err.Error())
		return nil, "", usageError("%s", msg)
	}
	return cfg, path, nil
}

// version and buildDate are stamped at build time (make build, the
// Dockerfile): go build -ldflags "-X main.version=v1.2.3 -X main.buildDate=2026-11-25".
var version, buildDate string

// versionString is the line `mnemo version` prints: the version (stamped,
// else the module version, else devel), the VCS revision when the build
// knows it (and whether the tree was modified), the build date when
// stamped, the Go version and the platform.
func versionString(stamped, built string, info *debug.BuildInfo) string {
	v := stamped
	var facts []string
	if info != nil {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision":
				facts = append([]string{s.Value[:min(12, len(s.Value))]}, facts...)
			case s.Key == "vcs.modified" && s.Value == "true":
				facts = append(facts, "modified")
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if built != "" {
		facts = append(facts, "built "+built)
	}
	if len(facts) > 0 {
		v += " (" + strings.Join(facts, ", ") + ")"
	}
	return fmt.Sprintf("mnemo %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
