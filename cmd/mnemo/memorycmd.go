package main

// `mnemo memory ...`: the admin commands. They need no LLM, only the memory
// folder (MNEMO_DATA_DIR or memory.dataDir), and open it without the watcher
// and without removing temp files, so the read-only ones are safe beside a
// running server. forget changes the data folder: it takes the folder's
// lock (lock.go) and does the forget itself, or, while a chat or server owns
// the folder, asks that process to do it through its control socket
// (control.go) and reports success once the process says it is done.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/google/renameio/v2"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	discordbot "github.com/mnemo-agent/mnemo/bots/discord"
	slackbot "github.com/mnemo-agent/mnemo/bots/slack"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// memorySub describes one `mnemo memory` subcommand.
type memorySub struct {
	args     string // the arguments, as in the usage text
	min, max int    // how many arguments it takes
}

var memorySubs = map[string]memorySub{
	"users":   {"", 0, 0},
	"ls":      {"USER", 1, 1},
	"show":    {"USER PATH", 2, 2},
	"check":   {"[USER]", 0, 1},
	"forget":  {"USER [PATH] --yes [--keep-history]", 1, 2},
	"export":  {"USER [-o FILE]", 1, 1},
	"edit":    {"USER PATH", 2, 2},
	"history": {"USER [PATH]", 1, 2},
	"restore": {"USER PATH --at ID|TIME", 2, 2},
}

const memorySubNames = "users, ls, show, check, forget, export, edit, history, restore"

// memoryOptions are the memory subcommands' flags.
type memoryOptions struct {
	yes, keepHistory bool   // forget --yes, --keep-history
	at               string // restore --at
	output           string // export -o
}

// memoryFlags defines the flags of fs's memory subcommand ("memory forget")
// and returns runMemory bound to them, and the subcommand's usage.
func memoryFlags(fs *flag.FlagSet) (runner, string) {
	name := strings.TrimPrefix(fs.Name(), "memory ")
	var o memoryOptions
	switch name {
	case "forget":
		fs.BoolVar(&o.yes, "yes", false, "really delete")
		fs.BoolVar(&o.keepHistory, "keep-history", false, "keep the earlier versions")
	case "restore":
		fs.StringVar(&o.at, "at", "", "version id or time")
	case "export":
		fs.StringVar(&o.output, "o", "", "write the archive to this file")
	}
	usage := ""
	if sub, ok := memorySubs[name]; ok {
		usage = strings.TrimSpace("mnemo memory " + name + " " + sub.args)
	}
	return func(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
		return runMemory(ctx, env, cfg, args, o)
	}, usage
}

// runMemory is `mnemo memory SUBCOMMAND ...`; args are without the flags.
func runMemory(ctx context.Context, env *cliEnv, cfg *config.Config, args []string, o memoryOptions) error {
	if len(args) == 0 {
		return usageError("memory needs a subcommand: %s (run mnemo help)", memorySubNames)
	}
	name, args := args[0], args[1:]
	sub, ok := memorySubs[name]
	if !ok {
		return unknownCommand("memory " + name)
	}
	usage := strings.TrimSpace("mnemo memory " + name + " " + sub.args)
	pos := args
	if len(pos) < sub.min || len(pos) > sub.max {
		return usageError("memory %s takes %s; usage: %s", name, argCount(sub), usage)
	}
	// Check the names before touching the disk: mistakes here are usage errors.
	if len(pos) > 0 {
		if err := memory.ValidateUser(pos[0]); err != nil {
			return usageError("%v", err)
		}
	}
	if len(pos) > 1 {
		if _, err := memory.ParsePath(pos[1]); err != nil {
			return usageError("%v", err)
		}
	}
	store, err := openAdminStore(cfg, env.logger)
	if err != nil {
		return err
	}
	defer store.Close()
	m := &memoryCmd{env: env, cfg: cfg, store: store}
	switch name {
	case "users":
		return m.users()
	case "ls":
		return m.ls(pos[0])
	case "show":
		return m.show(pos[0], pos[1])
	case "check":
		return m.check(append(pos, "")[0])
	case "forget":
		return m.forget(ctx, pos[0], append(pos, "")[1], o.yes, o.keepHistory)
	case "edit":
		return m.edit(ctx, pos[0], pos[1])
	case "history":
		return m.history(pos[0], append(pos, "")[1])
	case "restore":
		return m.restore(pos[0], pos[1], o.at)
	}
	return m.export(pos[0], o.output)
}

func argCount(sub memorySub) string {
	switch {
	case sub.max == 0:
		return "no arguments"
	case sub.min == sub.max:
		return fmt.Sprintf("%d argument%s", sub.min, plural(sub.min))
	}
	return fmt.Sprintf("%d or %d arguments", sub.min, sub.max)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// openAdminStore opens the memory folder for the admin commands: no watcher,
// no clean-up of a running server's temp files, and no folder created when
// it is missing (that is most likely a wrong MNEMO_DATA_DIR).
func openAdminStore(cfg *config.Config, logger *slog.Logger) (*memory.Store, error) {
	dir := cfg.Memory.DataDir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, failure(fmt.Errorf("memory folder %s does not exist: nobody has talked to mnemo yet, or it is elsewhere (set MNEMO_DATA_DIR or memory.dataDir)", dir))
	case err != nil:
		return nil, failure(fmt.Errorf("memory folder: %w", err))
	case !fi.IsDir():
		return nil, failure(fmt.Errorf("memory folder %s is not a folder; set MNEMO_DATA_DIR or memory.dataDir to the memory folder", dir))
	}
	return memory.Open(memory.Options{
		Dir:      dir,
		ReadCap:  cfg.Memory.ReadCap,
		WriteCap: cfg.Memory.WriteCap,
		Watch:    false,
		Clean:    false,
		Logger:   logger,
		// Read to list faster; removed with a forget (it holds summaries).
		IndexCache: filepath.Join(stateDir(cfg), "index"),
	})
}

// memoryCmd is one run of a memory subcommand.
type memoryCmd struct {
	env   *cliEnv
	cfg   *config.Config
	store *memory.Store
}

// user returns a user's memory, or an error naming the fix when the user has
// no folder.
func (m *memoryCmd) user(name string) (*memory.User, error) {
	if _, err := os.Lstat(filepath.Join(m.cfg.Memory.DataDir, name)); errors.Is(err, fs.ErrNotExist) {
		return nil, noUser(name)
	}
	return m.store.User(name)
}

func noUser(name string) error {
	return failure(fmt.Errorf("no memory for user %q; mnemo memory users lists them", name))
}

func (m *memoryCmd) users() error {
	names, err := m.store.Users()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintf(m.env.stderr, "no users have memory in %s yet\n", m.store.Dir())
	}
	for _, n := range names {
		if _, err := fmt.Fprintln(m.env.stdout, n); err != nil {
			return err
		}
	}
	return nil
}

// ls prints path, size and summary in aligned columns, sizes right-aligned.
func (m *memoryCmd) ls(name string) error {
	u, err := m.user(name)
	if err != nil {
		return err
	}
	files, err := u.List()
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fmt.Fprintf(m.env.stderr, "%s has no memory files\n", name)
		return nil
	}
	pw, sw := 0, 0
	for _, f := range files {
		pw = max(pw, len(f.Path))
		sw = max(sw, len(memory.FormatSize(f.Size)))
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%-*s  %*s  %s\n", pw, f.Path, sw, memory.FormatSize(f.Size), f.Summary)
	}
	_, err = fmt.Fprint(m.env.stdout, b.String())
	return err
}

func (m *memoryCmd) show(name, p string) error {
	u, err := m.user(name)
	if err != nil {
		return err
	}
	doc, err := u.Read(p)
	if errors.Is(err, memory.ErrNotFound) {
		return failure(fmt.Errorf("%s has no file %s; mnemo memory ls %s lists them", name, p, name))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(m.env.stdout, doc.Text)
	return err
}

func (m *memoryCmd) check(name string) error {
	rep, err := m.store.Check(name)
	if errors.Is(err, memory.ErrNotFound) {
		return noUser(name)
	}
	if err != nil {
		return err
	}
	counts := fmt.Sprintf("%d user%s, %d file%s checked", rep.Users, plural(rep.Users), rep.Files, plural(rep.Files))
	var b strings.Builder
	for _, p := range rep.Problems {
		b.WriteString(p.String() + "\n")
	}
	failed, err := reflector.FailedTurns(stateDir(m.cfg))
	if err != nil {
		return failure(fmt.Errorf("memory check: read the failed reflections: %w", err))
	}
	problems := len(rep.Problems)
	for _, f := range failed {
		if name != "" && f.User != name {
			continue
		}
		problems++
		fmt.Fprintf(&b, "%s: reflection of %s's turns failed %d times and was given up (its last line says why); "+
			"to try again, stop mnemo and move the file to %s (when no file of that name exists), or delete it\n",
			f.Path, f.User, reflector.MaxAttempts, filepath.Join(stateDir(m.cfg), "reflector", f.User+".jsonl"))
	}
	if problems == 0 {
		b.WriteString("ok: " + counts + "\n")
	}
	if _, err := fmt.Fprint(m.env.stdout, b.String()); err != nil {
		return err
	}
	if n := problems; n > 0 {
		return failure(fmt.Errorf("memory check: %d problem%s (%s)", n, plural(n), counts))
	}
	return nil
}

// lock takes the data folder's lock before a change, as chat and serve do.
// While one of them holds it, the change is theirs to make (forgetRemote):
// their short-term history and pending turns would write back what is
// deleted under them.
func (m *memoryCmd) lock() (*dataLock, error) {
	return lockData(m.env, m.cfg, "mnemo memory forget")
}

// forgetCallMargin is how much longer than forgetWait the CLI waits for
// the running process's answer.
const forgetCallMargin = 15 * time.Second

// offlineForgetters are what a forget drops besides the files when this
// command holds the lock (no chat or serve runs): the turns journaled and
// not yet reflected, which the next start would otherwise write back. A
// front end with its own journal (queued intake) adds its own here, as it
// adds one to the app for the running case (app.addForgetter).
func offlineForgetters(cfg *config.Config) []forgetter {
	intakeDir := filepath.Join(stateDir(cfg), "intake")
	return []forgetter{
		{"message", " queued for an answer on slack", func(_ context.Context, user string) (int, error) {
			return slackbot.ForgetQueued(intakeDir, user)
		}},
		{"message", " queued for an answer on discord", func(_ context.Context, user string) (int, error) {
			return discordbot.ForgetQueued(intakeDir, user)
		}},
		{"turn", " waiting to be reflected", func(_ context.Context, user string) (int, error) {
			return reflector.ForgetJournaled(stateDir(cfg), user)
		}},
	}
}

// forget deletes one file of a user's memory, or all of it, together with
// the user's pending work (forgetters). It prints "deleted …" only once all
// of that is done, by this process or by the running one.
func (m *memoryCmd) forget(ctx context.Context, name, p string, yes, keepHistory bool) error {
	what, err := m.forgetTarget(name, p)
	if err != nil {
		return err
	}
	if !yes {
		if what == "" {
			return noUser(name)
		}
		return usageError("this would delete %s; add --yes to delete it", what)
	}
	lock, err := m.lock()
	if held := (*lockHeldError)(nil); errors.As(err, &held) {
		return m.forgetRemote(ctx, held, name, p, what, keepHistory)
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	d, err := runForgetters(ctx, offlineForgetters(m.cfg), name)
	if err != nil {
		return failure(err)
	}
	if what != "" {
		u, err := m.store.User(name)
		if err == nil && p == "" {
			err = u.RemoveAll()
		} else if err == nil {
			err = u.Remove(p)
		}
		if err != nil {
			return err
		}
	}
	if !keepHistory {
		h, err := openHistory(m.cfg, time.Now)
		if err != nil {
			return err
		}
		err = forgetHistory(h, name, p)
		h.Close()
		if err != nil {
			return failure(err)
		}
	}
	if p == "" {
		if err := forgetChatHistory(m.cfg, name); err != nil {
			return failure(err)
		}
	}
	return m.reportForget(name, what, d.String(), "")
}

// forgetTarget says what a forget deletes: "alice/facts/pets.md (1.2 KB)"
// or "all memory of alice: …". It is "" for all of a user who has no
// memory folder (there may still be pending turns to drop); a missing file
// is an error naming the fix.
func (m *memoryCmd) forgetTarget(name, p string) (string, error) {
	if p == "" {
		if _, err := os.Lstat(filepath.Join(m.cfg.Memory.DataDir, name)); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		u, files, err := wiring.Files(m.store, name)
		if err != nil {
			return "", err
		}
		dir := filepath.Join(m.store.Dir(), u.Name())
		return fmt.Sprintf("all memory of %s: the folder %s and its %d memory file%s", u.Name(), dir, len(files), plural(len(files))), nil
	}
	u, err := m.user(name)
	if err != nil {
		return "", err
	}
	fi, err := u.Stat(p)
	if errors.Is(err, memory.ErrNotFound) {
		return "", failure(fmt.Errorf("%s has no file %s; mnemo memory ls %s lists them", name, p, name))
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%s (%s)", name, p, memory.FormatSize(fi.Size())), nil
}

// forgetRemote asks the process that holds the lock to do the forget and
// waits for its answer: that process has done it when it answers.
func (m *memoryCmd) forgetRemote(ctx context.Context, held *lockHeldError, name, p, what string, keepHistory bool) error {
	sock := controlSocket(m.cfg)
	target := name
	if p != "" {
		target += "/" + p
	}
	fmt.Fprintf(m.env.stderr, "mnemo: %s owns the data folder; asking it to forget %s…\n", held.holder, target)
	ctx, cancel := context.WithTimeout(ctx, forgetWait+forgetCallMargin)
	defer cancel()
	msg, err := control.Call(ctx, sock, control.Request{Op: opForget, User: name, Path: p, KeepHistory: keepHistory})
	if ns := (*control.NoServerError)(nil); errors.As(err, &ns) {
		return failure(fmt.Errorf("data folder %s is in use by %s, which does not answer on the control socket %s (%w); "+
			"if it is starting or stopping, run this again in a moment; if it is a mnemo without a control socket, stop it and run this again "+
			"(meanwhile /memory forget works in Slack and Discord)", m.cfg.Memory.DataDir, held.holder, sock, ns.Err))
	}
	if err != nil {
		return failure(fmt.Errorf("%s could not forget %s: %w", held.holder, target, err))
	}
	return m.reportForget(name, what, msg, " (done by "+held.holder+")")
}

// reportForget prints what a finished forget did.
func (m *memoryCmd) reportForget(name, what, dropped, by string) error {
	var line string
	switch {
	case what != "":
		line = "deleted " + what
	case dropped != "":
		line = name + " has no memory files"
	default:
		return noUser(name)
	}
	if dropped != "" {
		line += "; also dropped " + dropped
	}
	_, err := fmt.Fprintln(m.env.stdout, line+by)
	return err
}

// export writes the archive to stdout and notes on stderr what was left out.
func (m *memoryCmd) export(name, output string) error {
	if output == "" && isTerminal(m.env.stdout) {
		return usageError("memory export writes a tar.gz archive, not text for a terminal: redirect it (mnemo memory export %s > %s.tar.gz) or use -o FILE", name, name)
	}
	u, err := m.user(name)
	if err != nil {
		return err
	}
	out := m.env.stdout
	var file *renameio.PendingFile
	if output != "" {
		// Whole or not at all, and private: it is a person's memory.
		if file, err = renameio.NewPendingFile(output, renameio.WithPermissions(0o600), renameio.WithStaticPermissions(0o600)); err != nil {
			return failure(fmt.Errorf("export: %w", err))
		}
		defer file.Cleanup()
		out = file
	}
	rep, err := u.Export(out)
	for _, p := range rep.Skipped {
		fmt.Fprintf(m.env.stderr, "mnemo: export: skipped %s\n", p)
	}
	if err != nil {
		return fmt.Errorf("export of %s failed, the archive is incomplete: %w", name, err)
	}
	if file != nil {
		if err := file.CloseAtomicallyReplace(); err != nil {
			return failure(fmt.Errorf("export: %w", err))
		}
	}
	m.env.logger.Debug("memory: exported", "user", name, "files", rep.Files, "bytes", rep.Bytes)
	return nil
}
