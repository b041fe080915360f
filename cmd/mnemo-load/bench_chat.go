package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// chatFigures is one per-message row: a `mnemo chat` of one user with
// Files memory files.
type chatFigures struct {
	Files, Messages int
	NoStream        bool          // llm.stream: false (the default streams)
	NoRollups       bool          // no roll-up files, memory.rollupAfter: 0 (the default has them)
	CPUPerMsg       time.Duration // the child's CPU between the first and the last reply, per message
	Wall            Latency       // message written → reply read, ms
	Bare            Latency       // the same Thinker requests replayed by a bare client, ms
	Client          Latency       // the same, replayed through go-openai alone, ms
	CallsPerMsg     float64       // model calls per message (Thinker)
	ReflectorCalls  int64
	RollupCalls     int64   // the roll-up job's model calls (0: the seed's roll-ups are the job's own)
	FirstRequest    int     // bytes
	MaxReflector    int     // bytes
	MaxRSS          int64   // bytes, the chat's peak (VmHWM after the last reply)
	Start           Latency // `echo hi | mnemo chat` start → exit, ms
	StartCPU        time.Duration
	StartRSS        int64   // the largest run's own peak (see echoHi)
	StartCalls      float64 // model calls per `echo hi` (Thinker)
	StartReflector  float64 // reflector calls per `echo hi`
}

// chatDir seeds a data folder with one user of files memory files (with
// their roll-ups, or without) and returns its folder and the env of a
// chat against m.
func (b *bencher) chatDir(ctx context.Context, name string, files int, rollups bool, m *benchModel) (dir string, env []string, err error) {
	if dir, err = b.fresh(name); err != nil {
		return "", nil, err
	}
	mem, env := chatEnv(dir, m)
	if err := seedMemory(ctx, mem, 1, files, time.Now(), rollups); err != nil {
		return "", nil, err
	}
	return dir, env, nil
}

// chatEnv is the memory folder under dir and the env of a chat in dir
// against m.
func chatEnv(dir string, m *benchModel) (mem string, env []string) {
	mem = filepath.Join(dir, "data", "memory")
	return mem, childEnv(dir, "OPENAI_BASE_URL="+m.srv.URL(), "OPENAI_API_KEY=sk-bench", "MNEMO_DATA_DIR="+mem)
}

// The mnemo.yaml of a chat measured with llm.stream off, and of one
// without roll-ups (the child reads it from its working folder).
const (
	noStreamConfig  = "llm:\n  stream: false\n"
	noRollupsConfig = "memory:\n  rollupAfter: 0\n"
)

// chatAtSize measures a chat of messages messages with files memory files,
// then starts × `echo hi | mnemo chat` on the same memory; noStream runs
// both with llm.stream off, noRollups on the memory without its roll-ups
// and with memory.rollupAfter 0 (a memory before roll-ups).
func (b *bencher) chatAtSize(ctx context.Context, files, messages, starts int, noStream, noRollups bool) (chatFigures, error) {
	f := chatFigures{Files: files, Messages: messages, NoStream: noStream, NoRollups: noRollups}
	m := newBenchModel(messages)
	defer m.close()
	name, config := fmt.Sprintf("chat-%d", files), ""
	if noStream {
		name, config = name+"-nostream", config+noStreamConfig
	}
	if noRollups {
		name, config = name+"-norollups", config+noRollupsConfig
	}
	dir, env, err := b.chatDir(ctx, name, files, !noRollups, m)
	if err != nil {
		return f, err
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "mnemo.yaml"), []byte(config), 0o600); err != nil {
			return f, err
		}
	}
	// --verbose: its log says when the history's baseline is done.
	c, err := startChat(ctx, b.bin, dir, env, userName(0), "--verbose")
	if err != nil {
		return f, err
	}
	baselineDone := c.stderr.baselineDone()
	var lat []time.Duration
	var cpu0 time.Duration
	for i := range messages {
		d, err := c.say(messageText(i, messages))
		if err != nil {
			return f, c.fail(err)
		}
		if i == 0 {
			// The start, and what it left running in the background, is
			// the echo hi rows' cost: the window starts once the
			// history's baseline (every file kept as found at start; on
			// a fresh seed it reads and keeps every file, fsyncs that
			// make the child look idle) is done, and the child is idle.
			if err := waitFor(ctx, baselineDone, baselineMax); err != nil {
				return f, c.fail(fmt.Errorf("the history's baseline: %w", err))
			}
			if err := settle(ctx, c.proc.Pid); err != nil {
				return f, c.fail(err)
			}
			cpu0 = procCPU(c.proc.Pid)
			continue
		}
		lat = append(lat, d)
	}
	cpu1 := procCPU(c.cmd.Process.Pid)
	// The child's own peak, read while it runs: the rusage of a child
	// started with vfork (os/exec) carries the bench's own peak, a
	// larger process, recorded at its exec.
	f.MaxRSS = vmHWM(c.proc.Pid)
	if _, err := c.finish(); err != nil {
		return f, err
	}
	f.CPUPerMsg = (cpu1 - cpu0) / time.Duration(messages-1)
	f.Wall = distribution(lat)
	f.CallsPerMsg = float64(m.thinker.Load()) / float64(messages)
	f.ReflectorCalls, f.RollupCalls = m.reflector.Load(), m.rollups.Load()
	m.mu.Lock()
	f.FirstRequest, f.MaxReflector = m.firstThinker, m.maxReflector
	if len(m.bodies) > 0 {
		m.bodies = m.bodies[1:] // the first message's, like its time, is not compared
	}
	m.mu.Unlock()
	bare, err := m.replay(ctx)
	if err != nil {
		return f, err
	}
	f.Bare = distribution(bare)
	lib, err := m.replayClient(ctx)
	if err != nil {
		return f, err
	}
	f.Client = distribution(lib)

	// One message, start → exit, on the same memory (a fresh state folder
	// each time would measure the first start only).
	var walls []time.Duration
	var cpus []time.Duration
	m.reset()
	for range starts {
		w, ru, rss, err := echoHi(ctx, b.bin, dir, env, userName(0))
		if err != nil {
			return f, err
		}
		walls = append(walls, w)
		cpus = append(cpus, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		f.StartRSS = max(f.StartRSS, rss)
	}
	if starts == 0 {
		return f, nil
	}
	f.Start = distribution(walls)
	f.StartCalls = float64(m.thinker.Load()) / float64(starts)
	f.StartReflector = float64(m.reflector.Load()) / float64(starts)
	slices.Sort(cpus)
	f.StartCPU = cpus[len(cpus)/2]
	return f, nil
}

// echoHi runs `echo hi | mnemo chat` and returns its wall time, start to
// exit, its rusage and its own peak RSS. A child's rusage from wait4 is
// no use for the peak: os/exec starts it with vfork, and the exec records
// the peak of the memory it leaves — the bench's, a larger process — as
// the child's. So the child runs under GNU time (timeCmd), a small process
// whose own peak is far below mnemo's, and the peak is what time reports;
// without it the rusage's is taken (and is the bench's when larger). The
// CPU (user + system) is time's and its child's, time's own a fraction of
// a millisecond.
func echoHi(ctx context.Context, bin, dir string, env []string, user string) (time.Duration, *syscall.Rusage, int64, error) {
	var out, errb bytes.Buffer
	args := []string{"chat", "--user", user}
	name, rssFile := bin, ""
	if t := timeCmd(); t != "" {
		rssFile = filepath.Join(dir, "echo-hi.maxrss")
		name, args = t, append([]string{"-f", "%M", "-o", rssFile, bin}, args...)
	}
	cmd := execCommand(ctx, name, dir, env, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader("hi\n"), &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("echo hi | mnemo chat: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	if !strings.Contains(out.String(), benchReply) {
		return 0, nil, 0, fmt.Errorf("echo hi | mnemo chat printed %q, not the model's reply", out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rss := rssBytes(ru.Maxrss, "linux")
	if rssFile != "" {
		if kb, ok := timeKB(rssFile); ok {
			rss = kb << 10
		}
	}
	return wall, ru, rss, nil
}

// timeCmd is GNU time's path when it is installed ("" when not): it
// reports its child's peak RSS (-f %M, in KB).
var timeCmd = sync.OnceValue(func() string {
	p, err := exec.LookPath("time")
	if err != nil {
		return ""
	}
	out, err := exec.Command(p, "-f", "%M", "true").CombinedOutput()
	if _, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err != nil || perr != nil {
		return "" // not GNU time
	}
	return p
})

// timeKB reads the number GNU time wrote to file (its last line: a
// non-zero exit is said on a line before it).
func timeKB(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	n, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	return n, err == nil && n > 0
}

// chatProc is a running `mnemo chat`, piped.
type chatProc struct {
	cmd    *exec.Cmd
	proc   *os.Process
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
}

func startChat(ctx context.Context, bin, dir string, env []string, user string, flags ...string) (*chatProc, error) {
	cmd, in, out, stderr, err := startChild(ctx, bin, dir, env, append([]string{"chat", "--user", user}, flags...)...)
	if err != nil {
		return nil, fmt.Errorf("start mnemo chat: %w", err)
	}
	return &chatProc{cmd: cmd, proc: cmd.Process, in: in, out: out, stderr: stderr}, nil
}

// say writes one message and waits for the reply line; it returns the
// time between the two.
func (c *chatProc) say(text string) (time.Duration, error) {
	t0 := time.Now()
	if _, err := io.WriteString(c.in, text+"\n"); err != nil {
		return 0, fmt.Errorf("send %q: %w", text, err)
	}
	for {
		line, err := c.out.ReadString('\n')
		if strings.Contains(line, benchReply) {
			return time.Since(t0), nil
		}
		if err != nil {
			return 0, fmt.Errorf("no reply to %q: %w", text, err)
		}
	}
}

// finish closes the chat's input (EOF: the chat ends) and waits for it.
func (c *chatProc) finish() (*syscall.Rusage, error) {
	c.in.Close()
	_, _ = io.Copy(io.Discard, c.out)
	if err := c.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("mnemo chat: %w: %s", err, c.stderr)
	}
	return c.cmd.ProcessState.SysUsage().(*syscall.Rusage), nil
}

// fail ends a chat that went wrong and adds its stderr to err.
func (c *chatProc) fail(err error) error {
	_ = c.proc.Kill()
	c.in.Close()
	_ = c.cmd.Wait()
	return fmt.Errorf("mnemo chat: %w: %s", err, c.stderr)
}

// procCPU is the CPU time (user + sys) of every thread of process pid so
// far, from /proc/<pid>/task/*/schedstat (nanoseconds, unlike stat's clock
// ticks); 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return time.Duration(sum)
}

// baselineDoneLine is what mnemo logs (--verbose) when the history's
// baseline has kept every file as found at start (cmd/mnemo changes.go).
const baselineDoneLine = "as found at start; done"

// baselineMax bounds the wait for it: on a fresh seed of 10,000 files
// the baseline keeps each in the history, an fsync each (tens of seconds
// on a slow disk).
const baselineMax = 5 * time.Minute

// waitFor waits until ch is closed, at most max.
func waitFor(ctx context.Context, ch <-chan struct{}, max time.Duration) error {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("not done after %v", max)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Settling: a process is idle when it used less than settleIdle of CPU
// in settleWindow; settle waits at most settleMax for that.
const (
	settleWindow = 50 * time.Millisecond
	settleIdle   = time.Millisecond
	settleMax    = 10 * time.Second
)

// settle waits until process pid is idle, so that what its start left
// running in the background (the history baseline of the memory files,
// say) is not counted against the messages measured next. A process
// that is still busy after settleMax is measured as it is.
func settle(ctx context.Context, pid int) error {
	deadline := time.Now().Add(settleMax)
	last := procCPU(pid)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(settleWindow):
		}
		now := procCPU(pid)
		if now-last < settleIdle {
			return nil
		}
		last = now
	}
	return nil
}

// vmHWM is process pid's peak resident set size so far, in bytes, from
// /proc/<pid>/status; 0 when it cannot be read.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return statusKB(string(b), "VmHWM:")
}

func statusKB(status, key string) int64 {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}

// concFigures is one concurrent row: users users at once through a path.
type concFigures struct {
	Path        string // console, Slack, Discord
	Users       int
	Messages    int           // answered, all users
	CPUPerMsg   time.Duration // mnemo's CPU per message (every mnemo process)
	Wall        Latency
	PerSecond   float64
	CallsPerMsg float64
	PeakRSS     int64 // the largest process's peak
}

// consoleConcurrent runs users `mnemo chat`s at once, each its own person
// with its own data folder (a chat holds its folder's lock) of 20 files,
// each sending a first message (not measured: it waits for the start) and
// then messages messages.
func (b *bencher) consoleConcurrent(ctx context.Context, users, messages int) (concFigures, error) {
	f := concFigures{Path: "console", Users: users}
	m := newBenchModel(0)
	defer m.close()
	chats := make([]*chatProc, users)
	defer func() {
		for _, c := range chats {
			if c != nil {
				_ = c.proc.Kill()
				_ = c.cmd.Wait()
			}
		}
	}()
	for u := range users {
		dir, env, err := b.chatDir(ctx, fmt.Sprintf("console-%d-%d", users, u), 20, true, m)
		if err != nil {
			return f, err
		}
		if chats[u], err = startChat(ctx, b.bin, dir, env, userName(0)); err != nil {
			return f, err
		}
	}
	// Everyone says hello first: the starts are not measured.
	errs := make([]error, users)
	var wg sync.WaitGroup
	for u, c := range chats {
		wg.Go(func() { _, errs[u] = c.say("hello") })
	}
	wg.Wait()
	if err := firstError(chats, errs); err != nil {
		return f, err
	}
	m.reset()
	cpu0 := make([]time.Duration, users)
	for u, c := range chats {
		if err := settle(ctx, c.proc.Pid); err != nil {
			return f, err
		}
		cpu0[u] = procCPU(c.proc.Pid)
	}
	lat := make([][]time.Duration, users)
	t0 := time.Now()
	for u, c := range chats {
		wg.Go(func() {
			for i := range messages {
				d, err := c.say(messageText(i, messages))
				if err != nil {
					errs[u] = err
					return
				}
				lat[u] = append(lat[u], d)
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	if err := firstError(chats, errs); err != nil {
		return f, err
	}
	var cpu time.Duration
	for u, c := range chats {
		cpu += procCPU(c.proc.Pid) - cpu0[u]
		f.PeakRSS = max(f.PeakRSS, vmHWM(c.proc.Pid))
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	f.Messages = len(all)
	f.CPUPerMsg = cpu / time.Duration(f.Messages)
	f.Wall = distribution(all)
	f.PerSecond = float64(f.Messages) / wall.Seconds()
	f.CallsPerMsg = float64(m.thinker.Load()) / float64(f.Messages)
	for u, c := range chats {
		if _, err := c.finish(); err != nil {
			return f, err
		}
		chats[u] = nil
	}
	return f, nil
}

// firstError is the first of errs, with its chat's stderr, or nil.
func firstError(chats []*chatProc, errs []error) error {
	for u, err := range errs {
		if err != nil {
			return fmt.Errorf("user %d: %w: %s", u+1, err, chats[u].stderr)
		}
	}
	return nil
}

// The tool chats: each message makes the Thinker call one memory tool,
// memory_read of a file or memory_search, before it answers, on a memory
// of text (seedText) that a search has something to rank in.
