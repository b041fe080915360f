package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// hooks let a test see or change a run from the inside; the binary runs
// with none.
type hooks struct {
	// seeded sees the memory folder once it is seeded, before the store
	// opens.
	seeded func(memDir string)
	// discordConfig sees the fake Discord and may change the adapter's
	// config before the adapter is made; discordDriven sees the fake
	// Discord once the adapter stopped, before its posts are checked.
	discordConfig func(*discordtest.Server, *discord.Config)
	discordDriven func(*discordtest.Server)
	// abandonAfter is how long close waits for an adapter that did not
	// stop cleanly (0: defaultAbandonAfter).
	abandonAfter time.Duration
}

// sampleEvery is how often the heap is sampled for its peak.
const sampleEvery = 50 * time.Millisecond

type config struct {
	users, messages, files, concurrency, reflectTurns int
	latency, reflectIdle, timeout                     time.Duration
	dir, platform                                     string
	keep, json                                        bool
	hooks                                             hooks
}

// Platforms (-platform).
const (
	platformDirect  = "direct"  // tasks straight to the agent
	platformDiscord = "discord" // DMs through the real Discord adapter and a fake Discord
	platformBoth    = "both"    // direct, then discord, in one process, and the difference
)

// usageError is a bad command line: exit status 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

const usageHead = `Usage: mnemo-load [flags]

Measures mnemo's core (memory store with its watcher, model client, Thinker,
reflector) under load, against a fake OpenAI-compatible model on 127.0.0.1.

Each user's messages go in order on the user's own conversation; -concurrency
tasks, of as many users, run at once (the Thinker's own concurrency limit is
set to the same number), and users take turns: after a reply the user queues
up behind the others for the next message. The reflector runs while the load
goes on, every -reflect-turns turns of a user, and reflects the rest at the
end; at the end every episode entry it appended is looked up in the files.
By default no idle time ends a burst, so the number of reflections does not
depend on the machine's speed: -reflect-idle sets one.

-platform discord sends the same messages as Discord DMs (MESSAGE_CREATE over
the gateway, each user in its own DM channel) to the real Discord adapter, in
front of the same agent, against a fake Discord on 127.0.0.1, waits for every
reply post and checks that each message got exactly one reply. -platform both
runs direct, then discord, in one process and prints the difference: the
Discord path's CPU per message, against a baseline measured in the same run.
The fakes run in this process; a CPU profile labelled by side tells their
share of the CPU time (the "by side" line).

mnemo-load -bench [flags] measures the mnemo binary instead (make bench; see
mnemo-load -bench -h).

Exit status: 0 success, 1 failure or failed checks, 2 usage error.

Flags:
`

func parseFlags(args []string, stdout io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("mnemo-load", flag.ContinueOnError)
	fs.IntVar(&c.users, "users", 50, "simulated users, each with its own memory and conversation")
	fs.IntVar(&c.messages, "messages", 20, "messages per user, sent in order")
	fs.IntVar(&c.files, "files", 20, "memory files pre-created per user: half facts, half episode months")
	fs.IntVar(&c.concurrency, "concurrency", 16, "tasks at once, each of a different user")
	fs.DurationVar(&c.latency, "model-latency", 0, "simulated latency of each model call, e.g. 200ms")
	fs.IntVar(&c.reflectTurns, "reflect-turns", 5, "reflect a user's turns once this many wait (reflector.maxTurns)")
	fs.DurationVar(&c.reflectIdle, "reflect-idle", 0, "reflect once a user has been quiet this long (reflector.idle);\n0: never during the run")
	fs.StringVar(&c.dir, "dir", "", "folder for memory/ and state/ (must be empty or missing; kept; with -platform both\ndirect/ and discord/ in it, one per run)\n(default: a fresh temp folder, removed at the end unless -keep)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temp folder")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "end the run with an error after this long")
	fs.StringVar(&c.platform, "platform", platformDirect, "direct: tasks straight to the agent; discord: DMs through the Discord adapter\nand a fake Discord; both: direct, then discord, and the difference")
	if err := parseArgs(fs, args, stdout, usageHead, "-h"); err != nil {
		return c, err
	}
	if err := firstBroken(
		rule{c.users < 1, "-users must be at least 1"},
		rule{c.messages < 1, "-messages must be at least 1"},
		rule{c.files < 0, "-files must not be negative"},
		rule{c.concurrency < 1, "-concurrency must be at least 1"},
		rule{c.latency < 0, "-model-latency must not be negative"},
		rule{c.reflectTurns < 1, "-reflect-turns must be at least 1"},
		rule{c.reflectIdle < 0, "-reflect-idle must not be negative"},
		rule{c.timeout <= 0, "-timeout must be positive"},
	); err != nil {
		return c, err
	}
	if c.platform != platformDirect && c.platform != platformDiscord && c.platform != platformBoth {
		return c, usageError{fmt.Errorf("-platform %q: want direct, discord or both", c.platform)}
	}
	return c, nil
}

// parseArgs parses args with fs, which prints nothing itself: -h prints
// usage and the flags to stdout and returns flag.ErrHelp; a bad flag or a
// stray argument is a usageError that points at help.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer, usage, help string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return usageError{fmt.Errorf("%w (see %s)", err, help)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (see %s)", fs.Arg(0), help)}
	}
	return nil
}

// rule is a check of the parsed flags: bad says it is broken, text says
// what it wants.
type rule struct {
	bad  bool
	text string
}

// firstBroken is the usageError of the first broken rule, nil if none is.
func firstBroken(rules ...rule) error {
	for _, r := range rules {
		if r.bad {
			return usageError{errors.New(r.text)}
		}
	}
	return nil
}

// exitCode prints err (unless it is a help request) and maps it to the
// exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "mnemo-load:", err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

// DiscordFigures is what a Discord run adds to the report.
type DiscordFigures struct {
	Messages        int   `json:"messages_sent"`           // MESSAGE_CREATE dispatched, one per task
	Replies         int   `json:"replies"`                 // posts replying to a message of the run
	PostFailures    int64 `json:"post_failures"`           // reply posts Discord refused
	Typings         int   `json:"typing_indicators"`       // POST typing
	RESTCalls       int   `json:"rest_calls"`              // every REST request the fake answered, start-up included
	RESTConnections int64 `json:"rest_connections_opened"` // TCP connections the adapter's HTTP client dialled
	GatewayConns    int   `json:"gateway_connections"`
	GatewayEvents   int   `json:"gateway_events"` // dispatches written: the messages, the bot's own posts echoed back, READY
	// FakeHeapLive is the part of the live heap after the load (HeapLive)
	// that the fake Discord's records held: measured by closing it.
	FakeHeapLive int64 `json:"fake_discord_heap_live"`
}

// Comparison is -platform both: the same load, direct and through Discord,
// in one process.
type Comparison struct {
	Direct  *Report `json:"direct"`
	Discord *Report `json:"discord"`
	// DiscordPathCPUMS is (process CPU of the Discord run − process CPU of
	// the direct run) / messages: what the Discord path costs per message,
	// fake Discord included.
	DiscordPathCPUMS float64 `json:"discord_path_cpu_ms_per_message"`
	// FakeDiscordCPUMS is the fake Discord's share of it, per message (the
	// CPU profile's fake-discord label in the Discord run), and
	// MnemoSideCPUMS the rest, DiscordPathCPUMS − FakeDiscordCPUMS: the
	// adapter, discordgo, its REST and gateway clients, and the Go
	// runtime's work for all of it (GC, scheduler, network poller), the
	// fake's GC included. The fake model and the load tool do the same work
	// in both runs, so they are taken to cancel out: subtracting their
	// sampled shares too would only add the profile's sampling noise.
	// Absent without a CPU profile.
	FakeDiscordCPUMS *float64 `json:"fake_discord_cpu_ms_per_message,omitempty"`
	MnemoSideCPUMS   *float64 `json:"mnemo_side_cpu_ms_per_message,omitempty"`
}

// compare computes the differences between a direct and a Discord run of
// the same load.
func compare(direct, discord *Report) *Comparison {
	c := &Comparison{Direct: direct, Discord: discord}
	n := float64(max(discord.Tasks, 1))
	c.DiscordPathCPUMS = (cpuSeconds(discord) - cpuSeconds(direct)) / n * 1000
	if discord.CPUBySide != nil {
		fake := discord.CPUBySide[sideFakeDiscord] / n * 1000
		own := c.DiscordPathCPUMS - fake
		c.FakeDiscordCPUMS, c.MnemoSideCPUMS = &fake, &own
	}
	return c
}

func cpuSeconds(r *Report) float64 { return r.CPUUserSeconds + r.CPUSysSeconds }

// Latency is a distribution of task latencies, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Report is the result of a run; -json prints it as is.
type Report struct {
	Platform        string  `json:"platform"` // direct or discord
	Users           int     `json:"users"`
	MessagesPerUser int     `json:"messages_per_user"`
	FilesPerUser    int     `json:"files_per_user"`
	Concurrency     int     `json:"concurrency"`
	Conversations   int     `json:"conversations_at_once"` // min(concurrency, users)
	ModelLatencyMS  float64 `json:"model_latency_ms"`
	ReflectTurns    int     `json:"reflect_turns"`
	ReflectIdleMS   float64 `json:"reflect_idle_ms"` // 0: none during the run
	GOMAXPROCS      int     `json:"gomaxprocs"`

	Tasks          int     `json:"tasks"`
	FailedTasks    int64   `json:"failed_tasks"`
	WallSeconds    float64 `json:"wall_seconds"`  // first task sent → last reply
	DrainSeconds   float64 `json:"drain_seconds"` // reflector Close: the reflections left at the end
	TasksPerSecond float64 `json:"tasks_per_second"`
	LatencyMS      Latency `json:"latency_ms"`

	ModelCalls     int64 `json:"model_calls"` // Complete calls of the client
	ThinkerCalls   int64 `json:"thinker_calls"`
	ReflectorCalls int64 `json:"reflector_calls"`
	Retries        int64 `json:"retries"`
	ModelFailures  int64 `json:"model_failures"`
	Connections    int64 `json:"connections_opened"` // TCP connections the client dialled

	MemoryReads    int64   `json:"memory_reads"`    // Thinker memory_read calls
	RepliesQuoting int64   `json:"replies_quoting"` // replies that quote what was read
	Reflections    int64   `json:"reflections"`     // reflector runs
	TurnsReflected int64   `json:"turns_reflected"` // turns those runs covered
	EntriesWritten int     `json:"entries_written"` // reflector entries found in the files
	AppendErrors   int64   `json:"append_errors"`   // memory_append calls that failed
	Files          int     `json:"files"`           // memory files at the end, all users
	MemoryBytes    int64   `json:"memory_bytes"`    // their total size
	HeapPeak       int64   `json:"heap_inuse_peak"` // bytes, sampled
	HeapLive       int64   `json:"heap_live_after"` // bytes live after the load (after a GC)
	MaxRSS         int64   `json:"max_rss"`         // bytes
	CPUUserSeconds float64 `json:"cpu_user_seconds"`
	CPUSysSeconds  float64 `json:"cpu_sys_seconds"`
	// CPUBySide splits the CPU time above (user + sys) by the CPU profile's
	// labels: mnemo (unlabelled: mnemo's goroutines and the Go runtime's
	// own, GC included), fake-model, fake-discord, load-tool. Absent when
	// no CPU profile could be taken.
	CPUBySide map[string]float64 `json:"cpu_seconds_by_side,omitempty"`

	Discord *DiscordFigures `json:"discord,omitempty"` // -platform discord

	Dir      string   `json:"dir"`
	Kept     bool     `json:"kept"`
	Problems []string `json:"problems"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-bench" || args[0] == "--bench") {
		return runBench(ctx, args[1:], stdout, stderr)
	}
	return runWith(ctx, args, stdout, stderr, hooks{})
}

// runWith is run with a test's hooks.
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) error {
	cfg, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	cfg.hooks = h
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("timed out after %v (-timeout)", cfg.timeout))
	defer cancel()

	dir, kept := cfg.dir, true
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mnemo-load-"); err != nil {
			return err
		}
		kept = cfg.keep
		if !kept {
			defer os.RemoveAll(dir)
		}
	} else if err := emptyDir(dir); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	loadIn := func(platform, dir string) (*Report, error) {
		c := cfg
		c.platform = platform
		rep, err := load(ctx, c, dir, log)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return nil, fmt.Errorf("load run stopped: %w", cause)
			}
			return nil, err
		}
		rep.Dir, rep.Kept = dir, kept
		return rep, nil
	}
	var out any
	var problems []string
	if cfg.platform == platformBoth {
		// The same load twice, each in its own folder, direct first.
		direct, err := loadIn(platformDirect, filepath.Join(dir, platformDirect))
		if err != nil {
			return err
		}
		discord, err := loadIn(platformDiscord, filepath.Join(dir, platformDiscord))
		if err != nil {
			return err
		}
		out = compare(direct, discord)
		for _, r := range []*Report{direct, discord} {
			for _, p := range r.Problems {
				problems = append(problems, r.Platform+": "+p)
			}
		}
	} else {
		rep, err := loadIn(cfg.platform, dir)
		if err != nil {
			return err
		}
		out, problems = rep, rep.Problems
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if err := writeOut(stdout, out); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d check(s) failed:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// emptyDir makes sure dir exists and holds nothing.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("-dir %s is not empty: give an empty or missing folder", dir)
	}
	return nil
}

// load sets up the fake model and mnemo's core in dir, drives the tasks
// (straight to the agent, or through the Discord adapter and a fake
// Discord for cfg.platform "discord"), closes everything and checks the
// result.
func load(ctx context.Context, cfg config, dir string, log *slog.Logger) (*Report, error) {
	if cfg.platform == "" {
		cfg.platform = platformDirect
	}
	memDir, stateDir := filepath.Join(dir, "memory"), filepath.Join(dir, "state")
	if err := seed(ctx, memDir, cfg.users, cfg.files, time.Now()); err != nil {
		return nil, err
	}
	if cfg.hooks.seeded != nil {
		cfg.hooks.seeded(memDir)
	}

	var srv *openaitest.Server
	asSide(sideFakeModel, func() { srv = openaitest.NewServer() }) // its goroutines carry the label
	defer srv.Close()
	fake := newFakeModel(srv, cfg.latency)
	srv.Handle(fake.reply)

	// The client as cmd/mnemo wires it, counting the connections it opens.
	var dials atomic.Int64
	transport := wiring.ModelTransport(cfg.concurrency)
	dial := transport.DialContext
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	defer transport.CloseIdleConnections()
	llm := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "mnemo-load", HTTPClient: &http.Client{Transport: transport}, Logger: log})

	idle := cfg.reflectIdle
	if idle == 0 { // longer than the run: only -reflect-turns and the end start a reflection
		idle = cfg.timeout + time.Hour
	}
	// The core as cmd/mnemo opens it.
	core, err := wiring.Open(wiring.Options{
		Thinker: llm, Reflector: llm, ThinkerModel: "mnemo-load", ReflectorModel: "mnemo-load",
		Store:    memory.Options{Dir: memDir, Watch: true, Clean: true},
		StateDir: stateDir,
		Reflect:  reflector.Config{Idle: idle, MaxTurns: cfg.reflectTurns},
		Agent:    agent.Config{MaxConcurrent: cfg.concurrency},
		Logger:   log,
	})
	if err != nil {
		return nil, err
	}
	defer core.Close(ctx) // what the run has not closed: the store (and the reflector on an early return)
	store, refl, ag := core.Store, core.Reflector, core.Agent
	turn := directTurn(cfg, ag)
	var disc *discordRun
	if cfg.platform == platformDiscord {
		// Connected, READY and /memory registered before anything is measured.
		if disc, err = startDiscord(ctx, cfg, ag, log); err != nil {
			return nil, err
		}
		defer disc.close()
		turn = disc.turn
	}

	runtime.GC() // what setting up left is not the load's
	prof := startProfile()
	var sampler *sampler
	asSide(sideTool, func() { sampler = startSampler() })
	cpu0 := cpuTime()
	d := drive(ctx, cfg, turn)
	heapPeak := sampler.stop()
	if err := ctx.Err(); err != nil {
		prof.stop()
		return nil, err
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	drainStart := time.Now()
	if err := refl.Close(ctx); err != nil {
		prof.stop()
		return nil, fmt.Errorf("reflector: %w", err)
	}
	drain := time.Since(drainStart)
	cpu1 := cpuTime()
	sides, profErr := prof.stop()

	rep := &Report{
		Platform: cfg.platform,
		Users:    cfg.users, MessagesPerUser: cfg.messages, FilesPerUser: cfg.files, Concurrency: cfg.concurrency,
		Conversations: min(cfg.concurrency, cfg.users), ModelLatencyMS: ms64(cfg.latency), GOMAXPROCS: runtime.GOMAXPROCS(0),
		ReflectTurns: cfg.reflectTurns, ReflectIdleMS: ms64(cfg.reflectIdle),
		Tasks: len(d.latencies), FailedTasks: d.failed.Load(),
		WallSeconds: d.wall.Seconds(), DrainSeconds: drain.Seconds(),
		TasksPerSecond: float64(len(d.latencies)) / d.wall.Seconds(),
		LatencyMS:      distribution(d.latencies),
		ThinkerCalls:   fake.thinkerCalls.Load(), ReflectorCalls: fake.reflectorCalls.Load(),
		Connections: dials.Load(),
		MemoryReads: fake.reads.Load(), RepliesQuoting: d.quoting.Load(),
		Reflections: fake.reflections.Load(), TurnsReflected: fake.turns.Load(), AppendErrors: fake.appendErrors.Load(),
		HeapPeak: max(heapPeak, int64(ms.HeapInuse)), HeapLive: int64(ms.HeapAlloc),
		MaxRSS:         maxRSS(),
		CPUUserSeconds: (cpu1.user - cpu0.user).Seconds(), CPUSysSeconds: (cpu1.sys - cpu0.sys).Seconds(),
		CPUBySide: bySide(sides, (cpu1.user + cpu1.sys - cpu0.user - cpu0.sys).Seconds(), cfg.platform),
		Problems:  []string{},
	}
	if profErr != nil { // runtime/pprof wrote something this reader does not know
		rep.Problems = append(rep.Problems, profErr.Error())
	}
	u := llm.Usage()
	rep.ModelCalls, rep.Retries, rep.ModelFailures = u.Calls, u.Retries, u.Failures
	if disc != nil {
		// Every task was answered (the reply posted) before the adapter
		// stops; stopping it first makes sure that no late post is missed.
		if err := disc.stop(); err != nil {
			return nil, fmt.Errorf("discord adapter: %w", err)
		}
		var problems []string
		rep.Discord, rep.FailedTasks, rep.RepliesQuoting, problems = disc.results()
		rep.Problems = append(rep.Problems, problems...)
		rep.Discord.FakeHeapLive = disc.releaseFake()
	}
	if rep.Files, rep.MemoryBytes, err = countFiles(store); err != nil {
		return nil, err
	}
	found, problems, err := verifyEntries(memDir, fake.issuedEntries())
	if err != nil {
		return nil, err
	}
	rep.EntriesWritten = found
	rep.Problems = append(rep.Problems, problems...)
	rep.check(fake.unexpected.Load(), core.Lost())
	return rep, nil
}

// bySide turns the CPU nanoseconds sampled per side into shares of total
// (the process's CPU seconds, measured by getrusage), so that the sides add
// up to it; nil without samples. Every side of the platform is there, if
// only with 0.
func bySide(sampled map[string]int64, total float64, platform string) map[string]float64 {
	var sum int64
	for _, ns := range sampled {
		sum += ns
	}
	if sum <= 0 {
		return nil
	}
	out := map[string]float64{sideMnemo: 0, sideFakeModel: 0, sideTool: 0}
	if platform == platformDiscord {
		out[sideFakeDiscord] = 0
	}
	for side, ns := range sampled {
		out[side] = total * float64(ns) / float64(sum)
	}
	return out
}

// check adds the problems the counters show.
func (r *Report) check(unexpected, journalErrs int64) {
	add := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	if r.FailedTasks > 0 {
		add("%d task(s) failed (the reply was the apology)", r.FailedTasks)
	}
	if r.RepliesQuoting != r.MemoryReads {
		add("%d replies quote facts/user.md, but the Thinker read it %d times", r.RepliesQuoting, r.MemoryReads)
	}
	if int64(r.EntriesWritten) != r.Reflections {
		add("%d reflections appended an entry each, but %d such entries are in the files", r.Reflections, r.EntriesWritten)
	}
	if r.TurnsReflected != int64(r.Tasks) {
		add("reflections covered %d turns, want one per task (%d)", r.TurnsReflected, r.Tasks)
	}
	if r.AppendErrors > 0 {
		add("%d memory_append call(s) failed", r.AppendErrors)
	}
	if r.ModelCalls != r.ThinkerCalls+r.ReflectorCalls {
		add("the client made %d model calls, the fake model answered %d", r.ModelCalls, r.ThinkerCalls+r.ReflectorCalls)
	}
	if unexpected > 0 {
		add("the fake model got %d request(s) it could not make sense of", unexpected)
	}
	if journalErrs > 0 {
		add("%d turn(s) could not be journaled for the reflector", journalErrs)
	}
}
