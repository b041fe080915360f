package main

// `mnemo memory ...`: the admin commands. They need no LLM, only the memory
// folder (MNEMO_DATA_DIR or memory.dataDir), and open it without the watcher
// and without removing temp files, so the read-only ones are safe beside a
// running server. forget changes the data folder: it takes the folder's
// lock (lock.go) and does the forget itself, or, while a chat or server owns
// the folder, asks that process to do it through its control socket
// (cmd/internal/app) and reports success once the process says it is done.
// USER is a person's name or a channel's memory (mnemo.ChannelKey,
// "#slack-T01-C02"): every subcommand works on both, kept apart.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
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
	"pending": {"[USER] [--retry | --drop]", 0, 1},
	"rollup":  {"[--dry-run] USER", 1, 1},
	"search":  {"[--json] [--limit N] USER QUERY...", 2, manyArgs},
	"why":     {"USER TEXT...", 2, manyArgs},
}

// manyArgs is the most arguments of a subcommand that takes words.
const manyArgs = 1 << 20

const memorySubNames = "users, ls, show, check, search, why, forget, export, edit, history, restore, pending, rollup"

// memoryOptions are the memory subcommands' flags.
type memoryOptions struct {
	yes, keepHistory bool   // forget --yes, --keep-history
	retry, drop      bool   // pending --retry, --drop
	dryRun           bool   // rollup --dry-run
	at               string // restore --at
	output           string // export -o
	verbose          bool   // --verbose: info log lines too
	json             bool   // search --json
	limit            int    // search --limit
	fix              bool   // check --fix
	anyUser          bool   // --as-any-user: run as someone else than the data folder's owner
}

// memoryFlags defines the flags of fs's memory subcommand ("memory forget")
// and returns runMemory bound to them, and the subcommand's usage.
func memoryFlags(fs *flag.FlagSet) (runner, string) {
	name := strings.TrimPrefix(fs.Name(), "memory ")
	var o memoryOptions
	// An admin command prints its answer and one line per problem; the
	// store's info lines ("memory: wrote …") only when asked for.
	fs.BoolVar(&o.verbose, "verbose", false, "log info lines too")
	fs.BoolVar(&o.anyUser, "as-any-user", false, "run even as another user than the one who owns the data folder")
	switch name {
	case "check":
		fs.BoolVar(&o.fix, "fix", false, "repair loose modes, and as root foreign owners")
	case "forget":
		fs.BoolVar(&o.yes, "yes", false, "really delete")
		fs.BoolVar(&o.keepHistory, "keep-history", false, "keep the earlier versions")
	case "restore":
		fs.StringVar(&o.at, "at", "", "version id or time")
	case "export":
		fs.StringVar(&o.output, "o", "", "write the archive to this file")
	case "search":
		fs.BoolVar(&o.json, "json", false, "print a JSON array of {path, heading, line, date, text, score}")
		fs.IntVar(&o.limit, "limit", memory.DefaultSearchLimit, fmt.Sprintf("how many entries, 1 to %d", memory.MaxSearchLimit))
	case "pending":
		fs.BoolVar(&o.retry, "retry", false, "journal the turns given up on again")
		fs.BoolVar(&o.drop, "drop", false, "delete the user's waiting and given-up turns")
	case "rollup":
		fs.BoolVar(&o.dryRun, "dry-run", false, "only list the periods and what is due")
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
	if !o.verbose {
		env = quietLogs(env, cfg)
	}
	name, args := args[0], args[1:]
	sub, ok := memorySubs[name]
	if !ok {
		return unknownCommand("memory " + name)
	}
	usage := strings.TrimSpace("mnemo memory " + name + " " + sub.args)
	pos := args
	if len(pos) < sub.min {
		// An unquoted '#' starts a shell comment: the channel's name is gone.
		return usageError("memory %s takes %s; usage: %s; a channel's name starts with '#': quote it ('#slack-T01-C02'), or the shell drops it as a comment", name, argCount(sub), usage)
	}
	if len(pos) > sub.max {
		return usageError("memory %s takes %s; usage: %s", name, argCount(sub), usage)
	}
	// Check the names before touching the disk: mistakes here are usage errors.
	if len(pos) > 0 {
		if err := checkOwner(pos[0]); err != nil {
			return err
		}
	}
	switch {
	case name == "search":
		if err := checkSearch(pos[1:], o.limit); err != nil {
			return err
		}
	case name == "why":
		if strings.TrimSpace(strings.Join(pos[1:], " ")) == "" {
			return usageError("memory why needs words to look for; usage: %s", usage)
		}
	case len(pos) > 1:
		if _, err := memory.ParsePath(pos[1]); err != nil {
			return usageError("%v", err)
		}
	}
	if name != "forget" { // a forget asks a running mnemo first (memoryCmd.forget)
		if err := ownerGuard(env, cfg, name, o); err != nil {
			return err
		}
	}
	store, err := openAdminStore(cfg, env.logger, env.owner)
	if err != nil {
		return err
	}
	defer store.Close()
	m := &memoryCmd{env: env, cfg: cfg, store: store, opts: o}
	switch name {
	case "users":
		return m.users()
	case "ls":
		return m.ls(pos[0])
	case "show":
		return m.show(pos[0], pos[1])
	case "check":
		if o.fix {
			return m.checkFix(append(pos, "")[0])
		}
		return m.check(append(pos, "")[0])
	case "forget":
		return m.forget(ctx, pos[0], append(pos, "")[1], o.yes, o.keepHistory)
	case "edit":
		return m.edit(ctx, pos[0], pos[1])
	case "history":
		return m.history(pos[0], append(pos, "")[1])
	case "restore":
		return m.restore(pos[0], pos[1], o.at)
	case "pending":
		return m.pending(append(pos, "")[0], o.retry, o.drop, time.Now())
	case "rollup":
		return m.rollup(ctx, pos[0], o.dryRun)
	case "search":
		return m.search(pos[0], strings.Join(pos[1:], " "), o.limit, o.json)
	case "why":
		return m.why(pos[0], strings.Join(pos[1:], " "))
	}
	return m.export(pos[0], o.output)
}

func argCount(sub memorySub) string {
	switch {
	case sub.max == 0:
		return "no arguments"
	case sub.min == sub.max:
		return fmt.Sprintf("%d argument%s", sub.min, plural(sub.min))
	case sub.max >= manyArgs:
		return fmt.Sprintf("%d or more arguments", sub.min)
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
func openAdminStore(cfg *config.Config, logger *slog.Logger, owner memory.Owner) (*memory.Store, error) {
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
		Owner:    owner,
		// Read to list faster; removed with a forget (it holds summaries).
		IndexCache: filepath.Join(cfg.State.Dir, "index"),
	})
}

// memoryCmd is one run of a memory subcommand.
type memoryCmd struct {
	env   *cliEnv
	cfg   *config.Config
	store *memory.Store
	opts  memoryOptions
}

// checkOwner checks the USER argument of a memory subcommand: a user's
// name, or a channel's (mnemo.ChannelKey: "#slack-T01-C02").
func checkOwner(name string) error {
	err := memory.ValidateOwner(name)
	if err != nil && !mnemo.IsChannel(name) {
		return usageError("%v; a channel's memory is named '#' and such a name, quoted in a shell ('#slack-T01-C02'); mnemo memory users lists both", err)
	}
	if err != nil {
		return usageError("%v", err)
	}
	return nil
}

// shellName is name as typed in a shell: a channel's name is quoted ('#'
// starts a comment there).
func shellName(name string) string {
	if mnemo.IsChannel(name) {
		return "'" + name + "'"
	}
	return name
}

// ownerKind is "user" or "channel", for messages.
func ownerKind(name string) string {
	if mnemo.IsChannel(name) {
		return "channel"
	}
	return "user"
}

// user returns a user's (or a channel's) memory, or an error naming the
// fix when it has no folder.
func (m *memoryCmd) user(name string) (*memory.User, error) {
	if !m.hasFolder(name) {
		return nil, m.noUser(name)
	}
	return m.store.User(name)
}

// hasFolder reports whether name has an entry in the memory folder.
func (m *memoryCmd) hasFolder(name string) bool {
	_, err := os.Lstat(filepath.Join(m.cfg.Memory.DataDir, name))
	return !errors.Is(err, fs.ErrNotExist)
}

// noUser is the error for a name without memory. A channel's name typed
// without its '#' (or a user's with one) is a likely slip: the message
// names the one that exists.
func (m *memoryCmd) noUser(name string) error {
	other := mnemo.ChannelPrefix + name
	if mnemo.IsChannel(name) {
		other = strings.TrimPrefix(name, mnemo.ChannelPrefix)
	}
	if memory.ValidateOwner(other) == nil && m.hasFolder(other) {
		return failure(fmt.Errorf("no memory for %s %q; did you mean the %s %s? (mnemo memory users lists them)", ownerKind(name), name, ownerKind(other), shellName(other)))
	}
	return failure(fmt.Errorf("no memory for %s %q; mnemo memory users lists them", ownerKind(name), name))
}

// users lists the people, one per line, then, when there are any, the
// channels' memories after a blank line and a "channels:" line (each
// channel's name starts with '#', so a script can tell them apart too).
func (m *memoryCmd) users() error {
	// One listing (Store.Owners: Users and Channels together), split.
	owners, err := m.store.Owners()
	if err != nil {
		return err
	}
	var names, channels []string
	for _, o := range owners {
		if mnemo.IsChannel(o) {
			channels = append(channels, o)
		} else {
			names = append(names, o)
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(m.env.stderr, "no users have memory in %s yet\n", m.store.Dir())
	}
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	if len(channels) > 0 {
		if len(names) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("channels:\n")
		for _, c := range channels {
			b.WriteString(c + "\n")
		}
	}
	if b.Len() == 0 {
		return nil
	}
	_, err = fmt.Fprint(m.env.stdout, b.String())
	return err
}

// visibility is the word `memory ls` shows for f of owner: a channel's
// files are seen by everyone in the channel, a user's are private or
// shared (seen in channels) by their header.
func visibility(owner string, f memory.FileInfo) string {
	switch {
	case mnemo.IsChannel(owner):
		return "channel"
	case f.Shared:
		return "shared"
	}
	return "private"
}

// ls prints path, size, visibility and summary in aligned columns, sizes
// right-aligned; the summary, free text, comes last.
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
	pw, sw, vw := 0, 0, 0
	for _, f := range files {
		pw = max(pw, len(f.Path))
		sw = max(sw, len(memory.FormatSize(f.Size)))
		vw = max(vw, len(visibility(name, f)))
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%-*s  %*s  %-*s  %s\n", pw, f.Path, sw, memory.FormatSize(f.Size), vw, visibility(name, f), f.Summary)
	}
	_, err = fmt.Fprint(m.env.stdout, b.String())
	return err
}

func (m *memoryCmd) show(name, p string) error {
	if _, err := m.user(name); err != nil {
		return err
	}
	mem, done, _ := m.data(false) // without the history: cannot fail
	defer done()
	text, err := mem.Read(name, p)
	if errors.Is(err, memory.ErrNotFound) {
		return failure(fmt.Errorf("%s has no file %s; mnemo memory ls %s lists them", name, p, shellName(name)))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(m.env.stdout, showable(text))
	return err
}

func (m *memoryCmd) check(name string) error {
	rep, err := m.store.Check(name)
	if errors.Is(err, memory.ErrNotFound) {
		return m.noUser(name)
	}
	if err != nil {
		return err
	}
	counts := m.checkCounts(name, rep)
	var b strings.Builder
	for _, p := range rep.Problems {
		b.WriteString(p.String() + "\n")
	}
	failed, err := reflector.FailedTurns(m.cfg.State.Dir)
	if err != nil {
		return failure(fmt.Errorf("memory check: read the failed reflections: %w", err))
	}
	problems := len(rep.Problems)
	for _, f := range failed {
		if name != "" && f.User != name {
			continue
		}
		problems++
		fmt.Fprintf(&b, "%s: reflection of %s's turns failed %d times and was given up; "+
			"mnemo memory pending %s says why; to try again: mnemo memory pending %s --retry; to delete them: mnemo memory pending %s --drop\n",
			f.Path, f.User, reflector.MaxAttempts, f.User, f.User, f.User)
	}
	if msg := looseSecrets(m.env.configFile); msg != "" {
		b.WriteString("warning: " + msg + "\n") // a warning: the memory itself is sound
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

// checkCounts is what a check covered: "2 users, 1 channel, 5 files".
// The report counts every folder it checked as a user; the channels'
// among them are those of the channel grammar (a folder or not, as the
// check counts them).
func (m *memoryCmd) checkCounts(name string, rep memory.CheckReport) string {
	channels := 0
	switch {
	case name != "":
		if mnemo.IsChannel(name) {
			channels = rep.Users
		}
	default:
		entries, _ := os.ReadDir(m.store.Dir()) // the check has just read it
		for _, e := range entries {
			if mnemo.ValidateChannel(e.Name()) == nil {
				channels++
			}
		}
	}
	channels = min(channels, rep.Users)
	var parts []string
	if users := rep.Users - channels; users > 0 || channels == 0 {
		parts = append(parts, fmt.Sprintf("%d user%s", users, plural(users)))
	}
	if channels > 0 {
		parts = append(parts, fmt.Sprintf("%d channel%s", channels, plural(channels)))
	}
	parts = append(parts, fmt.Sprintf("%d file%s checked", rep.Files, plural(rep.Files)))
	return strings.Join(parts, ", ")
}

// lock takes the data folder's lock before a change, as chat and serve do.
// While one of them holds it, the change is theirs to make (forgetRemote):
// their short-term history and pending turns would write back what is
// deleted under them.
func (m *memoryCmd) lock() (*dataLock, error) {
	return lockData(m.env, m.cfg, "mnemo memory forget")
}

// data is the memory's use cases over the folder while this command holds
// its lock, or only reads (no chat or serve runs on it meanwhile): each
// holder finds the person's data in its files (the same holders a running
// process has). With history, the memory files' history is opened too;
// done closes it.
func (m *memoryCmd) data(history bool) (mem *app.Memory, done func(), err error) {
	var hist *memhistory.Store
	done = func() {}
	if history {
		if hist, err = openHistory(m.cfg, time.Now); err != nil {
			return nil, nil, err
		}
		done = func() { hist.Close() }
	}
	return app.Offline(m.cfg.State.Dir, m.store, hist, app.Journals(registry.Platforms(), nil), nil), done, nil
}

// export writes the archive to stdout and notes on stderr what was left out.
func (m *memoryCmd) export(name, output string) error {
	if output == "" && isTerminal(m.env.stdout) {
		return usageError("memory export writes a tar.gz archive, not text for a terminal: redirect it (mnemo memory export %s > %s.tar.gz) or use -o FILE",
			shellName(name), strings.TrimPrefix(name, mnemo.ChannelPrefix))
	}
	u, err := m.user(name)
	if err != nil {
		return err
	}
	out := m.env.stdout
	var file *durable.Pending
	if output != "" {
		// Whole or not at all, and private: it is a person's memory.
		dir, base := filepath.Split(output)
		if file, err = durable.NewPending(durable.Dir(dir), base, durable.WriteOptions{Perm: 0o600}); err != nil {
			return failure(fmt.Errorf("export: %w", err))
		}
		defer file.Cleanup()
		out = file
	}
	mem, done, _ := m.data(false) // without the history: cannot fail
	defer done()
	rep, err := mem.Export(u.Name(), out)
	for _, p := range rep.Skipped {
		fmt.Fprintf(m.env.stderr, "mnemo: export: skipped %s\n", p)
	}
	if err != nil {
		return fmt.Errorf("export of %s failed, the archive is incomplete: %w", name, err)
	}
	if file != nil {
		if err := file.Commit(); err != nil {
			return failure(fmt.Errorf("export: %w", err))
		}
	}
	m.env.logger.Debug("memory: exported", "user", name, "files", rep.Files, "bytes", rep.Bytes)
	return nil
}

// showable is text for an admin's terminal: a control character (what
// the model or anyone may have written into a file: ESC, BEL, CR, ...)
// is shown in caret notation (^[, ^G, ^M; ^? for DEL, \u0085 and so on
// for C1) instead of reaching the terminal, which would obey it. Tabs and
// line breaks stay. memory export gives the bytes as they are.
func showable(text string) string {
	if !strings.ContainsFunc(text, isTerminalControl) {
		return text
	}
	var b strings.Builder
	for _, r := range text {
		switch {
		case !isTerminalControl(r):
			b.WriteRune(r)
		case r == 0x7f:
			b.WriteString("^?")
		case r < 0x20:
			b.WriteString("^" + string(r+'@'))
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// isTerminalControl reports whether a terminal acts on r: a control
// character (C0, DEL, C1) but tab and line feed.
func isTerminalControl(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n'
}
