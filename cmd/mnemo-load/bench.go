package main

// -bench: `make bench`. One table for the machine it runs on, measured on
// the real binary (bin/mnemo) run as a child process against fakes in this
// process (the model, Slack, Discord; all on 127.0.0.1), so that the child's
// CPU time and RSS are mnemo's alone. See benchUsage.

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
)

// benchConfig is the -bench mode's flags.
type benchConfig struct {
	bin, readme, goCmd, goPkgs, benchtime string
	messages, concMessages, edits, starts int
	streamReplies, streamWords            int
	streamEvery                           time.Duration
	sizes, users                          []int
	toolSizes                             []int         // text files of the memory_read and memory_search chats
	distinct                              []int         // people in all at each step of the distinct-users run
	distinctConc                          int           // people sending at once
	distinctIdle                          time.Duration // serve's reflector.idle in that run
	distinctOnly                          bool
	noStream                              bool // also a chat with llm.stream false, at the first size
	noRollups                             bool // also a chat without roll-ups, at each size
	chatOnly                              bool // only the chat and echo hi rows
	timeout                               time.Duration
	dir                                   string
	commandLine                           string // as shown in the README
}

const benchUsage = `Usage: mnemo-load -bench [flags]

Measures the real binary (-bin, built by make build) as a child process
against a fake model, a fake Slack and a fake Discord in this process, all on
127.0.0.1, prints one table for this machine and, with -readme, writes it into
that file's "## Performance" section between the markers
` + benchBegin + ` and ` + benchEnd + ` (replacing what was there).
Figures are reported, never asserted. Then it runs the go test benchmarks of
-gobench and summarises them.

Flags:
`

func parseBenchFlags(args []string, stdout io.Writer) (benchConfig, error) {
	c := benchConfig{}
	fs := flag.NewFlagSet("mnemo-load -bench", flag.ContinueOnError)
	fs.Bool("bench", true, "the bench mode (this)")
	fs.StringVar(&c.bin, "bin", "bin/mnemo", "the mnemo binary to measure (make build)")
	fs.StringVar(&c.readme, "readme", "", "write the table into this README's \"## Performance\" section")
	fs.IntVar(&c.messages, "messages", 200, "messages of the per-message chat at each memory size")
	sizes := fs.String("sizes", "0,200,2000,10000", "fact+episode files of the user, one chat per size")
	toolSizes := fs.String("tool-sizes", "200,10000", "text files of the chats whose messages each read a file (memory_read) or search (memory_search), one pair per size (\"\": none)")
	users := fs.String("users", "1,10,100", "concurrent users through console, Slack and Discord")
	fs.IntVar(&c.concMessages, "conc-messages", 5, "messages per user in the concurrent rows")
	distinct := fs.String("distinct", "100,1000,10000", "distinct people, one DM each, at each step of the open files and goroutines run (\"\": none)")
	fs.IntVar(&c.distinctConc, "distinct-conc", 64, "people sending their DM at once in that run")
	fs.DurationVar(&c.distinctIdle, "distinct-idle", 20*time.Second, "serve's reflector.idle in that run")
	fs.BoolVar(&c.distinctOnly, "distinct-only", false, "run only the distinct-people part")
	fs.IntVar(&c.edits, "edits", 20, "repetitions of each edit-to-index change")
	fs.IntVar(&c.streamReplies, "stream-replies", 5, "streamed replies measured in the streaming row (0: no streaming row)")
	fs.IntVar(&c.streamWords, "stream-words", 30, "words of each streamed reply")
	fs.DurationVar(&c.streamEvery, "stream-every", 200*time.Millisecond, "the streaming model's time per word (and to its first word)")
	fs.BoolVar(&c.chatOnly, "chat-only", false, "run only the mnemo chat rows (-tool-sizes' too) and the echo hi rows (issue 24's figures) and print them")
	fs.BoolVar(&c.noStream, "no-stream", true, "also measure the chat at the first -sizes with llm.stream false (the default streams)")
	fs.BoolVar(&c.noRollups, "no-rollups", false, "also measure the chat at each -sizes on the memory without its roll-up files, with memory.rollupAfter 0 (the default seeds the roll-ups the job would have written)")
	fs.IntVar(&c.starts, "starts", 5, "runs of `echo hi | mnemo chat` per memory size, and starts of `mnemo serve`")
	fs.StringVar(&c.goCmd, "go", "go", "the go command for -gobench")
	fs.StringVar(&c.goPkgs, "gobench", "./memory/ ./memory/search/ ./reflector/ ./bots/internal/intake/ ./bots/slack/ ./bots/discord/", "packages whose go test benchmarks are run (\"\": none)")
	fs.StringVar(&c.benchtime, "benchtime", "", "go test -benchtime (\"\": go's default, 1s)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "end the run with an error after this long")
	fs.StringVar(&c.dir, "dir", "", "work folder (default: a temp folder, removed at the end)")
	err := parseArgs(fs, args, stdout, benchUsage, "-bench -h")
	if err != nil {
		return c, err
	}
	if c.sizes, err = intList("-sizes", *sizes, 0); err != nil {
		return c, err
	}
	if strings.TrimSpace(*toolSizes) != "" {
		if c.toolSizes, err = intList("-tool-sizes", *toolSizes, 1); err != nil {
			return c, err
		}
	}
	if c.users, err = intList("-users", *users, 1); err != nil {
		return c, err
	}
	if strings.TrimSpace(*distinct) != "" {
		if c.distinct, err = intList("-distinct", *distinct, 1); err != nil {
			return c, err
		}
	}
	if err := firstBroken(
		rule{c.messages < 2, "-messages must be at least 2 (the first one starts the chat)"},
		rule{c.concMessages < 1, "-conc-messages must be at least 1"},
		rule{c.edits < 1, "-edits must be at least 1"},
		rule{c.starts < 1, "-starts must be at least 1"},
		rule{c.timeout <= 0, "-timeout must be positive"},
		rule{c.streamReplies < 0, "-stream-replies must not be negative"},
		rule{c.streamWords < 1, "-stream-words must be at least 1"},
		rule{c.streamEvery < 0, "-stream-every must not be negative"},
		rule{c.distinctConc < 1, "-distinct-conc must be at least 1"},
		rule{c.distinctIdle <= 0, "-distinct-idle must be positive"},
		rule{c.distinctOnly && len(c.distinct) == 0, "-distinct-only needs -distinct, e.g. -distinct 100,1000"},
		rule{c.chatOnly && c.distinctOnly, "-chat-only and -distinct-only are two different parts: give one"},
	); err != nil {
		return c, err
	}
	var shown []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "bench" && f.Name != "readme" && f.Name != "bin" && f.Name != "go" {
			v := f.Value.String()
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				// -name, or -name=false: "-name false" would end the flags
				if v == "true" {
					shown = append(shown, "-"+f.Name)
				} else {
					shown = append(shown, "-"+f.Name+"="+v)
				}
				return
			}
			if v == "" || strings.ContainsAny(v, " '") {
				v = "'" + v + "'"
			}
			shown = append(shown, "-"+f.Name+" "+v)
		}
	})
	c.commandLine = "make bench"
	if len(shown) > 0 {
		c.commandLine += ` BENCHFLAGS="` + strings.Join(shown, " ") + `"`
	}
	return c, nil
}

// intList parses "1,10,100": numbers of at least min.
func intList(flagName, s string, min int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < min {
			return nil, usageError{fmt.Errorf("%s: %q is not a whole number of at least %d", flagName, f, min)}
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usageError{fmt.Errorf("%s: give at least one number, e.g. 1,10", flagName)}
	}
	return out, nil
}

// benchResult is everything -bench measured.
type benchResult struct {
	Machine machine
	Command string
	Chats   []chatFigures   // per message, one per memory size
	Tools   []toolFigures   // memory_read, memory_search on each message: a pair per -tool-sizes
	Conc    []concFigures   // console, Slack, Discord at 1, 10, 100 users
	Serve   *serveFigures   // start-up to ready, RSS idle and under load
	Edits   []editFigures   // edit-to-index
	Streams []streamFigures // streamed replies, per platform
	// Distinct is the open files, goroutines and RSS as distinct people
	// grow; DistinctConc and DistinctIdle how they were sent.
	Distinct     []distinctFigures
	DistinctConc int
	DistinctIdle time.Duration
	Binary       int64         // bytes
	GoBench      []goBenchmark // go test -bench
	Notes        []string      // what went wrong with a part of the run
}

// machine is what the table was measured on.
type machine struct {
	CPU       string
	Cores     int
	Go        string
	LoadStart string // /proc/loadavg's first three at the start
	LoadEnd   string
	Date      string
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseBenchFlags(args, stdout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("timed out after %v (-timeout)", cfg.timeout))
	defer cancel()
	bin, err := filepath.Abs(cfg.bin)
	if err != nil {
		return err
	}
	st, err := os.Stat(bin)
	if err != nil {
		return fmt.Errorf("-bin: %w (run make build first)", err)
	}
	dir := cfg.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mnemo-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := emptyDir(dir); err != nil {
		return err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", args...) }
	res := &benchResult{Machine: readMachine(), Command: cfg.commandLine, Binary: st.Size()}
	b := &bencher{bin: bin, dir: dir, progress: progress}

	if cfg.distinctOnly {
		if err := b.distinctPart(ctx, cfg, res); err != nil {
			return err
		}
		res.Machine.LoadEnd = loadAvg()
		_, err := io.WriteString(stdout, renderDistinct(res))
		return err
	}
	for _, n := range cfg.sizes {
		progress("chat, %d files: %d messages, then %d × echo hi | mnemo chat", n, cfg.messages, cfg.starts)
		f, err := b.chatAtSize(ctx, n, cfg.messages, cfg.starts, false, false)
		if err != nil {
			return fmt.Errorf("chat at %d files: %w", n, err)
		}
		res.Chats = append(res.Chats, f)
		if cfg.noRollups {
			progress("chat, %d files, no roll-ups: %d messages, then %d × echo hi | mnemo chat", n, cfg.messages, cfg.starts)
			if f, err = b.chatAtSize(ctx, n, cfg.messages, cfg.starts, false, true); err != nil {
				return fmt.Errorf("chat at %d files, no roll-ups: %w", n, err)
			}
			res.Chats = append(res.Chats, f)
		}
	}
	if cfg.noStream {
		n := cfg.sizes[0]
		progress("chat, %d files, llm.stream false: %d messages, then %d × echo hi | mnemo chat", n, cfg.messages, cfg.starts)
		f, err := b.chatAtSize(ctx, n, cfg.messages, cfg.starts, true, false)
		if err != nil {
			return fmt.Errorf("chat at %d files, llm.stream false: %w", n, err)
		}
		res.Chats = append(res.Chats, f)
	}
	for _, n := range cfg.toolSizes {
		progress("chat, %d text files: %d messages each reading a file, then %d each searching", n, cfg.messages, cfg.messages)
		f, err := b.toolChats(ctx, n, cfg.messages)
		if err != nil {
			return fmt.Errorf("chat at %d text files: %w", n, err)
		}
		res.Tools = append(res.Tools, f...)
	}
	if cfg.chatOnly {
		res.Machine.LoadEnd = loadAvg()
		_, err := io.WriteString(stdout, renderBench(res))
		return err
	}
	for _, n := range cfg.users {
		progress("console, %d users × %d messages", n, cfg.concMessages)
		f, err := b.consoleConcurrent(ctx, n, cfg.concMessages)
		if err != nil {
			return fmt.Errorf("console with %d users: %w", n, err)
		}
		res.Conc = append(res.Conc, f)
	}
	if cfg.streamReplies > 0 {
		progress("streaming: %d replies of %d words at one per %v in mnemo chat", cfg.streamReplies, cfg.streamWords, cfg.streamEvery)
		f, err := b.consoleStream(ctx, cfg.streamReplies, cfg.streamWords, cfg.streamEvery)
		if err != nil {
			return fmt.Errorf("streaming in mnemo chat: %w", err)
		}
		res.Streams = append(res.Streams, f)
	}
	progress("serve: Slack and Discord, %v users × %d messages", cfg.users, cfg.concMessages)
	sf, conc, err := b.serveRun(ctx, cfg.users, cfg.concMessages, cfg.starts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	res.Serve, res.Conc = sf, append(res.Conc, conc...)
	if err := b.distinctPart(ctx, cfg, res); err != nil {
		return err
	}
	progress("edit-to-index, %d of each change", cfg.edits)
	if res.Edits, err = editToIndex(ctx, filepath.Join(dir, "edits"), cfg.edits); err != nil {
		return fmt.Errorf("edit-to-index: %w", err)
	}
	if pkgs := strings.Fields(cfg.goPkgs); len(pkgs) > 0 {
		progress("go test -bench %s", strings.Join(pkgs, " "))
		if res.GoBench, err = runGoBench(ctx, cfg.goCmd, cfg.benchtime, pkgs); err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
	}
	res.Machine.LoadEnd = loadAvg()

	table := renderBench(res)
	if _, err := io.WriteString(stdout, table); err != nil {
		return err
	}
	if cfg.readme != "" {
		if err := updateReadme(cfg.readme, table); err != nil {
			return err
		}
		progress("wrote the table into %s", cfg.readme)
	}
	return nil
}

// distinctPart measures serve as distinct people grow (-distinct), when
// asked for.
func (b *bencher) distinctPart(ctx context.Context, cfg benchConfig, res *benchResult) error {
	if len(cfg.distinct) == 0 {
		return nil
	}
	b.progress("distinct people: %v, one DM each", cfg.distinct)
	var err error
	if res.Distinct, err = b.distinctUsers(ctx, cfg.distinct, cfg.distinctConc, cfg.distinctIdle); err != nil {
		return fmt.Errorf("distinct people: %w", err)
	}
	res.DistinctConc, res.DistinctIdle = cfg.distinctConc, cfg.distinctIdle
	return nil
}

// bencher runs the measured children.
type bencher struct {
	bin, dir  string
	progress  func(format string, args ...any)
	seq       int           // for fresh folders
	readyWait time.Duration // how long serve may take to be ready; 0: readyTimeout
	clock     clock.Clock   // times readyWait; nil: the real clock
}

// fresh returns a new empty folder under the work folder.
func (b *bencher) fresh(name string) (string, error) {
	b.seq++
	d := filepath.Join(b.dir, fmt.Sprintf("%03d-%s", b.seq, name))
	return d, os.MkdirAll(d, 0o700)
}

func readMachine() machine {
	m := machine{CPU: "unknown CPU", Cores: runtime.NumCPU(), Go: runtime.Version(), LoadStart: loadAvg(),
		Date: time.Now().UTC().Format(time.DateOnly)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(b)
	}
	return m
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// loadAvg is the 1, 5 and 15 minute load averages, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return loadFields(string(b))
}

func loadFields(s string) string {
	f := strings.Fields(s)
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// childEnv is the environment of a measured child: nothing of this
// process's but PATH, so that no OPENAI_API_KEY or MNEMO_* of the person
// running the bench changes what is measured.
func childEnv(home string, kv ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "USER=bench", "TERM=dumb", "NO_COLOR=1"}
	return append(env, kv...)
}

// startChild starts bin with args in dir, stdout piped, stderr's tail kept.
func startChild(ctx context.Context, bin, dir string, env []string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *tailBuffer, error) {
	cmd := execCommand(ctx, bin, dir, env, args...)
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, nil, err
	}
	return cmd, in, bufio.NewReader(out), stderr, nil
}

// tailBuffer keeps the last max bytes written to it: a child's stderr, for
// the error when it fails.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	buf []byte
	// baseline is closed once baselineDoneLine is written (within one
	// write, as a log line is); made by the first of Write and
	// baselineDone.
	baseline     chan struct{}
	baselineSeen bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.baselineSeen && bytes.Contains(p, []byte(baselineDoneLine)) {
		t.baselineSeen = true
		if t.baseline == nil {
			t.baseline = make(chan struct{})
		}
		close(t.baseline)
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// baselineDone is closed once the child logged that the history's
// baseline is done (at any time since it started).
func (t *tailBuffer) baselineDone() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.baseline == nil {
		t.baseline = make(chan struct{})
	}
	return t.baseline
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// execCommand is bin with args, run in dir with env.
func execCommand(ctx context.Context, bin, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	return cmd
}
