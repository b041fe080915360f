package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/cmd/internal/turns"
)

// The soak (issue 9): `mnemo serve`, the real run() path, with the Slack
// and Discord adapters on the real slack-go Socket Mode and discordgo
// clients, against the fake Slack, the fake Discord and a scripted model,
// while Slack redelivers and Discord replays events, both drop and renew
// their connections, and a person edits the memory files. `make e2e` runs
// 1,000 messages; `make soak` runs 10,000 (-soak.messages).
var (
	soakMessages    = flag.Int("soak.messages", 1000, "soak: messages in all, spread over -soak.users users")
	soakUsers       = flag.Int("soak.users", 100, "soak: users, each linked on Slack and on Discord to one memory")
	soakConcurrency = flag.Int("soak.concurrency", 16, "soak: users writing at once (each waits for its answer before the next message)")
	soakSeed        = flag.Uint64("soak.seed", 0, "soak: seed of the platform choices, faults and edits (0: a random one, logged)")
	soakTimeout     = flag.Duration("soak.timeout", 5*time.Minute, "soak: fail the run after this long")
	soakReport      = flag.String("soak.report", "", "soak: also write the figures as JSON to this file")
	soakDiscordRecs = flag.Int("soak.discord-reconnects", 0, "soak: Discord reconnects in the run (0: 2, or 4 past 2,000 messages; see soakDiscordReconnects)")
	soakFree        = flag.Bool("soak.free", false, "soak: the person's saves take no lock, so they may land inside one of the store's writes (see soakHuman)")
)

// What happens every so many messages sent.
const (
	soakEditEvery      = 2  // a person's edit
	soakRedeliverEvery = 7  // a redelivery (Slack, attempt 1–3) or a duplicate dispatch (Discord) of a recent message
	soakSlackReconnect = 83 // a Slack reconnect, in turn a disconnect envelope and a dropped socket, then an event replayed with attempt 0
	soakForceEvery     = 4  // every 4th reflection gets a person's edit between its read and its write
	soakRecent         = 32 // redeliveries pick among the last messages sent
	soakMaxTurns       = 5  // reflector.maxTurns
	soakLogLines       = 40 // warning and error lines kept for the report
)

// soakDiscordReconnects is how many Discord reconnects a run of total
// messages gets, in turn op 7 (RECONNECT) and a dropped socket, each
// resumed with a replay of events already seen. The adapter reopens a
// session that had READY or RESUMED at once, so a reconnect costs about a
// second of Discord silence (discordgo's Close waits 1 s).
func soakDiscordReconnects(total int) int {
	switch {
	case *soakDiscordRecs > 0:
		return *soakDiscordRecs
	case total <= 2000:
		return 2
	}
	return 4
}

func soakSlackUser(u int) string   { return fmt.Sprintf("U%08d", u+1) }
func soakSlackDM(u int) string     { return fmt.Sprintf("D%08d", u+1) }
func soakDiscordUser(u int) string { return fmt.Sprintf("5%018d", u+1) }
func soakDiscordDM(u int) string   { return fmt.Sprintf("6%018d", u+1) }
func soakMemoryUser(u int) string  { return fmt.Sprintf("soak-u%03d", u+1) }
func soakToken(u, m int) string    { return fmt.Sprintf("soak-u%03d-m%05d", u+1, m+1) }

// soakSent is one message as sent: over Slack (env) or Discord (msg).
type soakSent struct {
	user    int
	token   string
	slack   bool
	env     slacktest.Envelope
	discord discordgo.Message
}

// soakFigures is what a run measured.
type soakFigures struct {
	Messages        int     `json:"messages"`
	Users           int     `json:"users"`
	Concurrency     int     `json:"concurrency"`
	Seed            uint64  `json:"seed"`
	Race            bool    `json:"race"`
	Free            bool    `json:"free_saves"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
	SlackMessages   int     `json:"slack_messages"`
	DiscordMessages int     `json:"discord_messages"`
	Seconds         float64 `json:"seconds"` // first message sent → every answer posted
	MessagesPerSec  float64 `json:"messages_per_second"`
	ShutdownSeconds float64 `json:"shutdown_seconds"` // SIGTERM → serve returned (the last reflections)
	MaxGoroutines   int     `json:"max_goroutines"`
	MaxRSS          int64   `json:"max_rss_bytes"`
	HeapPeak        int64   `json:"heap_inuse_peak_bytes"`
	// HeapLive is the live heap once every message was answered, serve
	// still running; HeapLiveServed once serve has stopped (the fakes'
	// records of every call, event and post, and the soak's own, are most
	// of it); MnemoHeapLive the difference: what serve itself held.
	HeapLive         int64          `json:"heap_live_after_load_bytes"`
	HeapLiveServed   int64          `json:"heap_live_after_serve_stopped_bytes"`
	MnemoHeapLive    int64          `json:"mnemo_heap_live_bytes"`
	Redeliveries     int            `json:"slack_redeliveries"`      // attempt ≥ 1, sent by the soak
	ReplaysAttempt0  int            `json:"slack_replays_attempt_0"` // after a reconnect
	AutoRedeliveries int            `json:"slack_auto_redeliveries"` // the fake's own, of envelopes not acked in time
	Duplicates       int            `json:"discord_duplicate_dispatches"`
	ResumeReplays    int            `json:"discord_events_replayed_on_resume"`
	DupsIgnored      int            `json:"duplicates_ignored"` // "duplicate ... ignored" log lines, both adapters
	SlackConnections int            `json:"slack_connections"`
	DiscordConns     int            `json:"discord_gateway_connections"`
	DiscordResumes   int            `json:"discord_resumes"`
	Reflections      int            `json:"reflections"`
	HumanEdits       int            `json:"human_edits"`
	EditsByStyle     map[string]int `json:"human_edits_by_style"`
	ForcedEdits      int64          `json:"edits_between_read_and_write"`
	Conflicts        int64          `json:"conflicts_detected"`
	PatchFallbacks   int64          `json:"patch_fallbacks"`
	TornReads        int64          `json:"torn_reads"`
	HumanRedone      int64          `json:"human_saves_redone"`
	VimYielded       int64          `json:"vim_edits_yielded"`
	ModelRequests    int64          `json:"model_requests"`
	Warnings         int            `json:"log_warnings"`
	GoroutinesStart  int            `json:"goroutines_start"`
	GoroutinesEnd    int            `json:"goroutines_end"`
	FDsStart         int            `json:"open_files_start"`
	FDsEnd           int            `json:"open_files_end"`
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: not in -short")
	}
	users, total := *soakUsers, *soakMessages
	if users < 1 || users > 999 || total < users {
		t.Fatalf("-soak.users must be 1 to 999 and -soak.messages at least that many (got %d, %d)", users, total)
	}
	seed := *soakSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("soak: %d messages from %d users, seed %d (rerun with -soak.seed %d)", total, users, seed, seed)

	report := *soakReport
	if report != "" {
		report, _ = filepath.Abs(report) // before the test moves to its folder
	}
	// The counts the process must come back to: taken before anything of
	// the soak starts (but after t.Chdir, which keeps the old folder open).
	dir := inTempDir(t)
	startGoroutines, startFDs := runtime.NumGoroutine(), openFDs(t)
	ignore := goleak.IgnoreCurrent()

	s := newSoak(t, dir, users, total, seed)
	ctx, cancel := context.WithTimeoutCause(context.Background(), *soakTimeout,
		fmt.Errorf("the soak did not finish within %v (-soak.timeout)", *soakTimeout))
	defer cancel()
	s.serve(ctx)
	s.drive(ctx)
	s.shutdown(ctx)
	s.check()

	// Everything closed: the process is back where it started.
	s.slk.Close()
	s.dsc.Close()
	s.llm.Close()
	s.figures.GoroutinesStart, s.figures.FDsStart = startGoroutines, startFDs
	s.figures.GoroutinesEnd, s.figures.FDsEnd = settle(t, startGoroutines, startFDs)
	goleak.VerifyNone(t, ignore)
	s.report(report)
}

// soak is one run's world.
type soak struct {
	t       *testing.T
	seed    uint64
	users   int
	total   int
	dir     string
	memDir  string
	env     map[string]string
	llm     *openaitest.Server
	slk     *slacktest.Server
	dsc     *discordtest.Server
	model   *soakModel
	human   *soakHuman
	logs    *soakLog
	figures soakFigures

	serveDone chan struct{} // closed when run returned
	serveErr  error
	serveStop context.CancelFunc

	humanKicks chan struct{}
	humanDone  chan error
	humanStop  sync.Once

	mu      sync.Mutex
	sent    []soakSent // in the order sent
	perUser [][]int    // user → indexes in sent
	recent  []int      // indexes in sent of the last soakRecent messages
	faults  *rand.Rand

	heapPeak, goroutinePeak atomic.Int64
}

func newSoak(t *testing.T, dir string, users, total int, seed uint64) *soak {
	s := &soak{t: t, seed: seed, users: users, total: total, dir: dir,
		memDir:  filepath.Join(dir, "data", "memory"),
		perUser: make([][]int, users), faults: rand.New(rand.NewPCG(seed, 1)),
		logs: &soakLog{}, humanKicks: make(chan struct{}, total), humanDone: make(chan error, 1)}
	s.human = newSoakHuman(s.memDir, t.TempDir(), *soakFree)
	s.model = newSoakModel(s.human, soakForceEvery)
	s.figures = soakFigures{Messages: total, Users: users, Concurrency: min(*soakConcurrency, users), Seed: seed,
		Race: raceEnabled, Free: *soakFree, GOMAXPROCS: runtime.GOMAXPROCS(0)}

	// The configuration an operator would write: every user linked on both
	// platforms to one memory; reflections every soakMaxTurns turns of a
	// user, the rest at shutdown.
	var cfg strings.Builder
	cfg.WriteString("log:\n  level: info\nreflector:\n  idle: 1h\n  maxTurns: " + fmt.Sprint(soakMaxTurns) + "\nagent:\n  maxConcurrent: 16\nidentities:\n")
	for u := range users {
		fmt.Fprintf(&cfg, "  %s: [\"slack:%s/%s\", \"discord:%s\"]\n", soakMemoryUser(u), slacktest.DefaultTeamID, soakSlackUser(u), soakDiscordUser(u))
		// Every user starts with the fact file the reflector and the
		// person both change.
		facts := filepath.Join(s.memDir, soakMemoryUser(u), "facts")
		if err := os.MkdirAll(facts, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(facts, "soak.md"), []byte(soakFactSeed), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mnemo.yaml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	s.llm = openaitest.New(t)
	s.llm.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		s.llm.DiscardRequests() // tens of thousands of requests: keep none
		return s.model.handle(r)
	})
	// Slack redelivers what is not acked within 2 s, as it does: an
	// envelope written to a socket that then dropped is not lost.
	s.slk = slacktest.New(t, slacktest.Options{RedeliverAfter: 2 * time.Second})
	s.dsc = discordtest.New(t, discordtest.Options{})
	for u := range users {
		s.slk.SetUser(slacktest.User{ID: soakSlackUser(u), TeamID: slacktest.DefaultTeamID,
			Name: fmt.Sprintf("soak%03d", u+1), RealName: fmt.Sprintf("Soak User %d", u+1)})
		s.dsc.AddChannel(discordgo.Channel{ID: soakDiscordDM(u), Type: discordgo.ChannelTypeDM,
			Recipients: []*discordgo.User{soakAuthor(u)}})
	}
	s.env = map[string]string{
		"OPENAI_BASE_URL": s.llm.URL(), "OPENAI_API_KEY": "sk-soak-key-123456",
		"MNEMO_DATA_DIR":  s.memDir,
		"SLACK_BOT_TOKEN": slacktest.DefaultBotToken, "SLACK_APP_TOKEN": slacktest.DefaultAppToken,
		"SLACK_API_URL":     s.slk.APIURL(),
		"DISCORD_BOT_TOKEN": s.dsc.Options().Token, "DISCORD_API_URL": s.dsc.URL(),
	}
	return s
}

func soakAuthor(u int) *discordgo.User {
	return &discordgo.User{ID: soakDiscordUser(u), Username: fmt.Sprintf("soak%03d", u+1), GlobalName: fmt.Sprintf("Soak User %d", u+1)}
}

// serve starts `mnemo serve` and returns once both adapters are connected.
func (s *soak) serve(ctx context.Context) {
	t := s.t
	runCtx, stop := context.WithCancel(context.Background())
	s.serveStop, s.serveDone = stop, make(chan struct{})
	go func() {
		defer close(s.serveDone)
		s.serveErr = run(stopOn(runCtx), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return s.env[k] },
			strings.NewReader(""), io.Discard, s.logs)
	}()
	deadline := time.Until(deadlineOf(ctx))
	if err := s.slk.WaitConnected(1, deadline); err != nil {
		s.fail("no Socket Mode connection: %v", err)
	}
	if _, err := s.dsc.WaitCommandSets(1, deadline); err != nil {
		s.fail("the Discord adapter never registered /memory: %v", err)
	}
	go s.sample(runCtx)
	go func() {
		s.humanDone <- s.human.work(s.humanKicks, s.memoryUsers(), rand.New(rand.NewPCG(s.seed, 2)))
	}()
	t.Cleanup(func() { // a failed run: stop what still runs
		s.stopHuman()
		stop()
		select {
		case <-s.serveDone:
		case <-time.After(30 * time.Second):
		}
	})
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func (s *soak) memoryUsers() []string {
	out := make([]string, s.users)
	for u := range out {
		out[u] = soakMemoryUser(u)
	}
	return out
}

// fail ends the test with the log lines kept.
func (s *soak) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nlog warnings and errors:\n%s", fmt.Sprintf(format, args...), s.logs.kept())
}

// sample records the peaks of goroutines and heap until ctx ends.
func (s *soak) sample(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var ms runtime.MemStats
	for {
		s.goroutinePeak.Store(max(s.goroutinePeak.Load(), int64(runtime.NumGoroutine())))
		runtime.ReadMemStats(&ms)
		s.heapPeak.Store(max(s.heapPeak.Load(), int64(ms.HeapInuse)))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// drive sends every user's messages, each user waiting for the answer to
// one before sending the next, -soak.concurrency users at once, users
// taking turns (see turns.Run); it injects the faults and kicks the person
// as messages go.
func (s *soak) drive(ctx context.Context) {
	per := make([]int, s.users) // messages per user: total spread evenly
	for i := range s.total {
		per[i%s.users]++
	}
	var count atomic.Int64
	errs := make(chan error, s.figures.Concurrency)
	start := time.Now()
	turns.Run(ctx, s.figures.Concurrency, per, func(u, m int) bool {
		token := soakToken(u, m)
		answered := s.model.expect(token)
		s.send(u, token)
		s.afterSend(int(count.Add(1)))
		select {
		case <-answered:
			return true
		case <-ctx.Done():
			errs <- fmt.Errorf("%w: waiting for the answer to %s", context.Cause(ctx), token)
			return false
		}
	})
	close(errs)
	if err := <-errs; err != nil {
		s.fail("%v", err)
	} else if n := count.Load(); n < int64(s.total) { // ctx ended between two turns
		s.fail("%v: %d of %d messages sent", context.Cause(ctx), n, s.total)
	}
	// Every message reached the Thinker: wait for every reply post.
	deadline := time.Until(deadlineOf(ctx))
	if _, err := s.slk.WaitReplies(s.figures.SlackMessages, deadline); err != nil {
		s.fail("Slack replies: %v", err)
	}
	if _, err := s.dsc.WaitPosts(s.figures.DiscordMessages, deadline); err != nil {
		s.fail("Discord replies: %v", err)
	}
	s.figures.Seconds = time.Since(start).Seconds()
	s.figures.MessagesPerSec = float64(s.total) / s.figures.Seconds
	s.figures.HeapLive = liveHeap()
}

// send sends message token of user u, over Slack or Discord at random.
func (s *soak) send(u int, token string) {
	text := "Please keep " + token + " in mind."
	s.mu.Lock()
	slack := s.faults.IntN(2) == 0
	s.mu.Unlock()
	rec := soakSent{user: u, token: token, slack: slack}
	if slack {
		rec.env = s.slk.Message(slacktest.MessageEvent{Channel: soakSlackDM(u), ChannelType: "im", User: soakSlackUser(u), Text: text})
	} else {
		rec.discord = s.dsc.MessageCreate(discordgo.Message{ChannelID: soakDiscordDM(u), Author: soakAuthor(u), Content: text})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.sent)
	s.sent = append(s.sent, rec)
	s.perUser[u] = append(s.perUser[u], i)
	if s.recent = append(s.recent, i); len(s.recent) > soakRecent {
		s.recent = s.recent[1:]
	}
	if slack {
		s.figures.SlackMessages++
	} else {
		s.figures.DiscordMessages++
	}
}

// afterSend injects what is due after the n-th message (from 1).
func (s *soak) afterSend(n int) {
	if n%soakEditEvery == 0 {
		s.humanKicks <- struct{}{}
	}
	if n%soakRedeliverEvery == 0 {
		s.mu.Lock()
		r := s.sent[s.recent[s.faults.IntN(len(s.recent))]]
		attempt := 1 + s.faults.IntN(3)
		if r.slack {
			s.figures.Redeliveries++
		} else {
			s.figures.Duplicates++
		}
		s.mu.Unlock()
		if r.slack {
			s.slk.Redeliver(r.env, attempt)
		} else {
			s.dsc.Dispatch("MESSAGE_CREATE", r.discord)
		}
	}
	if k := max(s.total/(soakDiscordReconnects(s.total)+1), 1); n%k == 0 && n/k <= soakDiscordReconnects(s.total) {
		s.dsc.ReplayOnResume(3)
		if (n/k)%2 == 1 {
			s.dsc.Reconnect()
		} else {
			s.dsc.DropConnections()
		}
	}
	if n%soakSlackReconnect != 0 {
		return
	}
	if (n/soakSlackReconnect)%2 == 1 {
		_ = s.slk.Disconnect("refresh_requested")
	} else {
		_ = s.slk.DropConnection()
	}
	// What Slack may do after a reconnect: an event again, with
	// retry_attempt 0, on the new connection.
	s.mu.Lock()
	var again *slacktest.Envelope
	for j := len(s.recent) - 1; j >= 0 && again == nil; j-- {
		if r := s.sent[s.recent[j]]; r.slack {
			again = &r.env
		}
	}
	if again != nil {
		s.figures.ReplaysAttempt0++
	}
	s.mu.Unlock()
	if again != nil {
		s.slk.Redeliver(*again, 0)
	}
}

// stopHuman ends the person's edits once the one under way is saved.
func (s *soak) stopHuman() {
	s.humanStop.Do(func() { close(s.humanKicks) })
}

// shutdown stops the person, then serve as SIGTERM does, and waits for it.
func (s *soak) shutdown(ctx context.Context) {
	s.stopHuman()
	if err := <-s.humanDone; err != nil {
		s.fail("the person's edits: %v", err)
	}
	start := time.Now()
	s.serveStop()
	select {
	case <-s.serveDone:
		if code := exitCode(s.serveErr, io.Discard); code != 0 {
			s.fail("serve exited %d after SIGTERM: %v", code, s.serveErr)
		}
	case <-ctx.Done():
		s.fail("serve did not stop: %v", context.Cause(ctx))
	}
	s.figures.ShutdownSeconds = time.Since(start).Seconds()
	s.figures.HeapLiveServed = liveHeap()
	s.figures.MnemoHeapLive = s.figures.HeapLive - s.figures.HeapLiveServed
	s.figures.MaxGoroutines = int(s.goroutinePeak.Load())
	s.figures.HeapPeak = s.heapPeak.Load()
	s.figures.MaxRSS = soakMaxRSS()
}

// openFDs counts the process's open files.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		if runtime.GOOS != "linux" {
			return 0
		}
		t.Fatal(err)
	}
	return len(ents)
}

// settle waits until the goroutines and open files are back to their
// counts at the start (connections and their goroutines end a moment after
// they are closed), and fails if they are not within 10 s.
func settle(t *testing.T, goroutines, fds int) (int, int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && f <= fds {
			return g, f
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("after shutdown: %d goroutines (%d at the start), %d open files (%d at the start)\nopen files:\n%s\n%s",
				g, goroutines, f, fds, fdTargets(), buf[:runtime.Stack(buf, true)])
			return g, f
		}
		<-tick.C
	}
}

// fdTargets lists what the open files are.
func fdTargets() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var b strings.Builder
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		fmt.Fprintf(&b, "  %s -> %s\n", e.Name(), target)
	}
	return b.String()
}

// liveHeap is the live heap in bytes, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func soakMaxRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// soakLog is serve's stderr: it counts the lines and keeps the warnings
// and errors (the first soakLogLines of them).
type soakLog struct {
	mu       sync.Mutex
	partial  []byte
	lines    int
	warnings int
	errors   int
	dups     int
	keep     []string
}

func (l *soakLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		l.lines++
		switch {
		case strings.Contains(line, "level=ERROR"):
			l.errors++
		case strings.Contains(line, "level=WARN"):
			l.warnings++
		default:
			if strings.Contains(line, "duplicate event ignored") || strings.Contains(line, "duplicate message ignored") {
				l.dups++
			}
			continue
		}
		if len(l.keep) < soakLogLines {
			l.keep = append(l.keep, line)
		}
	}
}

func (l *soakLog) kept() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.keep, "\n")
}

func (l *soakLog) counts() (lines, warnings, errs, dups int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines, l.warnings, l.errors, l.dups
}

// report logs the figures and writes them, as JSON, to path unless it is "".
func (s *soak) report(path string) {
	f := s.figures
	s.t.Logf("soak: %d messages (%d Slack, %d Discord) from %d users, %d at once, GOMAXPROCS %d, race %v, seed %d",
		f.Messages, f.SlackMessages, f.DiscordMessages, f.Users, f.Concurrency, f.GOMAXPROCS, f.Race, f.Seed)
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	s.t.Logf("soak: %.1f s, %.0f messages/s; shutdown %.2f s; max %d goroutines, heap peak %.1f MiB, max RSS %.1f MiB",
		f.Seconds, f.MessagesPerSec, f.ShutdownSeconds, f.MaxGoroutines, mib(f.HeapPeak), mib(f.MaxRSS))
	s.t.Logf("soak: live heap %.1f MiB after the load, %.1f MiB once serve stopped (the fakes' records): serve held %.1f MiB",
		mib(f.HeapLive), mib(f.HeapLiveServed), mib(f.MnemoHeapLive))
	s.t.Logf("soak: Slack %d redeliveries + %d replays with attempt 0 + %d of its own, %d connections; Discord %d duplicate dispatches, %d events replayed on %d resumes, %d connections; %d duplicates ignored",
		f.Redeliveries, f.ReplaysAttempt0, f.AutoRedeliveries, f.SlackConnections, f.Duplicates, f.ResumeReplays, f.DiscordResumes, f.DiscordConns, f.DupsIgnored)
	s.t.Logf("soak: %d reflections; %d human edits %v (free saves: %v), %d of them between a reflection's read and its write; %d conflicts detected, %d patch fallbacks, %d torn reads, %d saves redone, %d vim edits yielded",
		f.Reflections, f.HumanEdits, f.EditsByStyle, f.Free, f.ForcedEdits, f.Conflicts, f.PatchFallbacks, f.TornReads, f.HumanRedone, f.VimYielded)
	s.t.Logf("soak: goroutines %d → %d, open files %d → %d; %d model requests, %d log warnings",
		f.GoroutinesStart, f.GoroutinesEnd, f.FDsStart, f.FDsEnd, f.ModelRequests, f.Warnings)
	if path != "" {
		b, _ := json.MarshalIndent(f, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			s.t.Error(err)
		}
	}
}
