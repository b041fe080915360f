package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	goopenai "github.com/sashabaranov/go-openai"
)

// benchReply starts every answer of the bench's model, so that the driver
// knows a reply line from anything else.
const benchReply = "bench-reply"

// benchModel is the scripted model of the bench: it answers at once, the
// Thinker with one line of text (a casual message needs no tool), the
// reflector with "nothing to remember". A person's message that carries a
// tool marker (searchMarker, readMarker) makes the Thinker call that tool
// first, and answer with the line of text once the tool's result is
// there. It counts the calls and the tool results and keeps the Thinker's
// request bodies, for the bare client to replay.
type benchModel struct {
	srv          *openaitest.Server
	thinker      atomic.Int64
	reflector    atomic.Int64
	replaying    atomic.Bool
	keepBodies   int // at most this many bodies kept
	mu           sync.Mutex
	bodies       [][]byte
	firstThinker int // bytes of the first Thinker request
	maxReflector int // bytes of the largest reflector request
	tools        toolResults
}

// toolResults is what the bench's model was given back for the tool calls
// it made.
type toolResults struct {
	calls, results, bytes int
	errors, misses        int    // results that are an error; searches that found nothing
	firstError            string // the first error's text
}

func newBenchModel(keepBodies int) *benchModel {
	m := &benchModel{srv: openaitest.NewServer(), keepBodies: keepBodies}
	m.srv.Handle(m.reply)
	return m
}

func (m *benchModel) close() { m.srv.Close() }

func (m *benchModel) reply(r openaitest.Request) (openaitest.Reply, bool) {
	m.srv.DiscardRequests()
	if m.replaying.Load() {
		return openaitest.Text(benchReply + " ok"), true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.Contains(r.System(), "memory reflector") {
		m.reflector.Add(1)
		m.maxReflector = max(m.maxReflector, len(r.Body))
		return openaitest.Text("Nothing worth remembering."), true
	}
	if m.thinker.Add(1) == 1 {
		m.firstThinker = len(r.Body)
	}
	if len(m.bodies) < m.keepBodies {
		m.bodies = append(m.bodies, bytes.Clone(r.Body))
	}
	if msgs := r.Chat.Messages; len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		m.tools.add(msgs[len(msgs)-1].Content)
	} else if call, ok := benchToolCall(r.LastUser()); ok {
		m.tools.calls++
		return openaitest.ToolCalls(call), true
	}
	return openaitest.Text(benchReply + " ok"), true
}

// The markers of a person's message that makes the bench's model call a
// memory tool before it answers: memory_search with the rest of the line
// as its query, memory_read with it as the path.
const (
	searchMarker = "bench-search:"
	readMarker   = "bench-read:"
)

// benchToolCall is the call the bench's model makes for a person's message
// (its last user message) that carries a tool marker; false for any other.
func benchToolCall(lastUser string) (openaitest.ToolCall, bool) {
	for _, t := range [...]struct{ marker, tool, arg string }{
		{searchMarker, "memory_search", "query"},
		{readMarker, "memory_read", "path"},
	} {
		_, rest, ok := strings.Cut(lastUser, t.marker)
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "\n")
		args, _ := json.Marshal(map[string]string{t.arg: strings.TrimSpace(rest)})
		return openaitest.Call(t.tool, string(args)), true
	}
	return openaitest.ToolCall{}, false
}

// add counts one tool result: mnemo's agent words a failed call as
// "error: ..."; memory_search's "No entries match" found nothing.
func (t *toolResults) add(text string) {
	t.results++
	t.bytes += len(text)
	switch {
	case strings.HasPrefix(text, "error"):
		t.errors++
		if t.firstError == "" {
			t.firstError = text
		}
	case strings.HasPrefix(text, "No entries match"):
		t.misses++
	}
}

// reset forgets the counts and bodies.
func (m *benchModel) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.thinker.Store(0)
	m.reflector.Store(0)
	m.bodies, m.firstThinker, m.maxReflector = nil, 0, 0
	m.tools = toolResults{}
}

// toolCounts is a copy of the tool calls and results so far.
func (m *benchModel) toolCounts() toolResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tools
}

// startReplay returns the kept Thinker bodies and a transport of one
// connection, the model answering as to a replay until done is called.
func (m *benchModel) startReplay() (bodies [][]byte, tr *http.Transport, done func()) {
	m.mu.Lock()
	bodies = m.bodies
	m.mu.Unlock()
	m.replaying.Store(true)
	tr = &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	return bodies, tr, func() {
		tr.CloseIdleConnections()
		m.replaying.Store(false)
	}
}

// replay sends the kept Thinker bodies again, one after the other on one
// connection, as a bare client would, and returns each round trip's time.
func (m *benchModel) replay(ctx context.Context) ([]time.Duration, error) {
	bodies, tr, done := m.startReplay()
	defer done()
	client := &http.Client{Transport: tr}
	url := m.srv.URL() + "/chat/completions"
	var out []time.Duration
	for _, body := range bodies {
		t0 := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bare client: %w", err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("bare client: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("bare client: the fake model answered %s", resp.Status)
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// replayClient sends the kept Thinker requests again through go-openai
// alone, the client library mnemo itself uses (each body decoded into its
// request type, streamed when the body asks for it and read to the end),
// one after the other on one connection, and returns each round trip's
// time: the part of a message's time that is the library's, not mnemo's.
func (m *benchModel) replayClient(ctx context.Context) ([]time.Duration, error) {
	bodies, tr, done := m.startReplay()
	defer done()
	cfg := goopenai.DefaultConfig("sk-bench")
	cfg.BaseURL, cfg.HTTPClient = m.srv.URL(), &http.Client{Transport: tr}
	client := goopenai.NewClientWithConfig(cfg)
	var out []time.Duration
	for _, body := range bodies {
		var req goopenai.ChatCompletionRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("go-openai client: a kept request: %w", err)
		}
		t0 := time.Now()
		if err := completeWith(ctx, client, req); err != nil {
			return nil, fmt.Errorf("go-openai client: %w", err)
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// completeWith sends req with client, streamed when req asks for it, and
// reads the reply to its end.
func completeWith(ctx context.Context, client *goopenai.Client, req goopenai.ChatCompletionRequest) error {
	if !req.Stream {
		_, err := client.CreateChatCompletion(ctx, req)
		return err
	}
	s, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		if _, err := s.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// chatFigures is one per-message row: a `mnemo chat` of one user with
// Files memory files.
type chatFigures struct {
	Files, Messages int
	NoStream        bool          // llm.stream: false (the default streams)
	CPUPerMsg       time.Duration // the child's CPU between the first and the last reply, per message
	Wall            Latency       // message written → reply read, ms
	Bare            Latency       // the same Thinker requests replayed by a bare client, ms
	Client          Latency       // the same, replayed through go-openai alone, ms
	CallsPerMsg     float64       // model calls per message (Thinker)
	ReflectorCalls  int64
	FirstRequest    int     // bytes
	MaxReflector    int     // bytes
	MaxRSS          int64   // bytes, the chat's peak (VmHWM after the last reply)
	Start           Latency // `echo hi | mnemo chat` start → exit, ms
	StartCPU        time.Duration
	StartRSS        int64   // the largest run's own peak (see echoHi)
	StartCalls      float64 // model calls per `echo hi` (Thinker)
	StartReflector  float64 // reflector calls per `echo hi`
}

// chatDir seeds a data folder with one user of files memory files and
// returns its folder and the env of a chat against m.
func (b *bencher) chatDir(ctx context.Context, name string, files int, m *benchModel) (dir string, env []string, err error) {
	if dir, err = b.fresh(name); err != nil {
		return "", nil, err
	}
	mem, env := chatEnv(dir, m)
	if err := seed(ctx, mem, 1, files, time.Now()); err != nil {
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

// noStreamConfig is the mnemo.yaml of a chat measured with llm.stream
// off (the child reads it from its working folder).
const noStreamConfig = "llm:\n  stream: false\n"

// chatAtSize measures a chat of messages messages with files memory files,
// then starts × `echo hi | mnemo chat` on the same memory; noStream runs
// both with llm.stream off.
func (b *bencher) chatAtSize(ctx context.Context, files, messages, starts int, noStream bool) (chatFigures, error) {
	f := chatFigures{Files: files, Messages: messages, NoStream: noStream}
	m := newBenchModel(messages)
	defer m.close()
	name := fmt.Sprintf("chat-%d", files)
	if noStream {
		name += "-nostream"
	}
	dir, env, err := b.chatDir(ctx, name, files, m)
	if err != nil {
		return f, err
	}
	if noStream {
		if err := os.WriteFile(filepath.Join(dir, "mnemo.yaml"), []byte(noStreamConfig), 0o600); err != nil {
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
	f.ReflectorCalls = m.reflector.Load()
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
		dir, env, err := b.chatDir(ctx, fmt.Sprintf("console-%d-%d", users, u), 20, m)
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

// toolFigures is one tool chat: Messages messages each making the Thinker
// call Tool once, on a memory of Files text files (MemoryBytes in all).
// The first of them is measured apart: a search builds the index there.
type toolFigures struct {
	Tool            string // memory_read or memory_search
	Files, Messages int
	MemoryBytes     int64
	CPUPerMsg       time.Duration // the child's CPU from the second tool message's start to the last reply, per message
	Wall            Latency       // the same messages, message written → reply read
	FirstCPU        time.Duration // the first tool message's
	FirstWall       time.Duration
	CallsPerMsg     float64 // model calls (Thinker) per tool message: 2, the call and the answer
	ReflectorCalls  int64
	ResultBytes     int   // a tool result's mean size
	Misses          int   // searches that found nothing
	StartRSS        int64 // VmHWM before the first tool message (after the start)
	FirstRSS        int64 // VmHWM after it
	MaxRSS          int64 // VmHWM after the last reply
}

// toolChats seeds one text memory of files files and measures on it a chat
// whose messages each read a file, then one whose messages each search,
// messages tool messages each (after a first casual one, the start).
func (b *bencher) toolChats(ctx context.Context, files, messages int) ([]toolFigures, error) {
	m := newBenchModel(0)
	defer m.close()
	dir, err := b.fresh(fmt.Sprintf("tools-%d", files))
	if err != nil {
		return nil, err
	}
	mem, env := chatEnv(dir, m)
	tm, err := seedText(ctx, mem, files, time.Now())
	if err != nil {
		return nil, err
	}
	var out []toolFigures
	for _, tool := range []string{"memory_read", "memory_search"} {
		f, err := b.toolChat(ctx, dir, env, m, tm, tool, messages)
		if err != nil {
			return out, fmt.Errorf("%s on each message: %w", tool, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// toolChat measures one tool chat on tm (seeded in dir).
func (b *bencher) toolChat(ctx context.Context, dir string, env []string, m *benchModel, tm *textMemory, tool string, messages int) (toolFigures, error) {
	f := toolFigures{Tool: tool, Files: tm.files, Messages: messages, MemoryBytes: tm.bytes}
	m.reset()
	c, err := startChat(ctx, b.bin, dir, env, userName(0), "--verbose")
	if err != nil {
		return f, err
	}
	baselineDone := c.stderr.baselineDone()
	// The start, as in chatAtSize: a casual message, the history's
	// baseline, idle.
	if _, err := c.say(messageText(0, messages+1)); err != nil {
		return f, c.fail(err)
	}
	if err := waitFor(ctx, baselineDone, baselineMax); err != nil {
		return f, c.fail(fmt.Errorf("the history's baseline: %w", err))
	}
	if err := settle(ctx, c.proc.Pid); err != nil {
		return f, c.fail(err)
	}
	m.reset()
	pid := c.proc.Pid
	f.StartRSS = vmHWM(pid)
	cpu0 := procCPU(pid)
	d, err := c.say(tm.message(tool, 0, messages))
	if err != nil {
		return f, c.fail(err)
	}
	f.FirstCPU, f.FirstWall, f.FirstRSS = procCPU(pid)-cpu0, d, vmHWM(pid)
	if err := settle(ctx, pid); err != nil {
		return f, c.fail(err)
	}
	cpu1 := procCPU(pid)
	var lat []time.Duration
	for i := 1; i < messages; i++ {
		d, err := c.say(tm.message(tool, i, messages))
		if err != nil {
			return f, c.fail(err)
		}
		lat = append(lat, d)
	}
	cpu2 := procCPU(pid)
	f.MaxRSS = vmHWM(pid)
	if _, err := c.finish(); err != nil {
		return f, err
	}
	f.CPUPerMsg = (cpu2 - cpu1) / time.Duration(messages-1)
	f.Wall = distribution(lat)
	f.CallsPerMsg = float64(m.thinker.Load()) / float64(messages)
	f.ReflectorCalls = m.reflector.Load()
	t := m.toolCounts()
	if t.errors > 0 {
		return f, fmt.Errorf("%d of %d %s results were errors, the first: %.300s", t.errors, t.results, tool, t.firstError)
	}
	if t.calls != messages || t.results != messages {
		return f, fmt.Errorf("the model called %s %d times and got %d results for %d messages", tool, t.calls, t.results, messages)
	}
	f.ResultBytes, f.Misses = t.bytes/max(t.results, 1), t.misses
	return f, nil
}

// textMemory is a seeded memory of text: its files, their bytes, and the
// words they were written with, for the tool messages.
type textMemory struct {
	files int
	bytes int64
	paths []string // every file, as memory_read names it
	vocab []string
}

// Text memory: the vocabulary's size, the Zipf law's exponent (as in
// memory/search's benchmarks) and the words of a line of text.
const (
	textVocab = 4000
	textZipf  = 1.1
	lineWords = 40
)

// seedText writes files memory files of text for the bench's one user,
// straight to disk as seed does (half fact files, half episode months,
// an hour old): a fact file holds 5 "- Key: value" lines, an episode file
// 5 entries of a title, a summary, a date in its month and 2 detail
// lines; every summary, value and detail is about lineWords words drawn
// with a Zipf law from a vocabulary of textVocab made-up words (fixed
// seeds: the same memory each run), about 3 KB a file.
func seedText(ctx context.Context, memDir string, files int, now time.Time) (*textMemory, error) {
	r := rand.New(rand.NewPCG(24, 1))
	tm := &textMemory{files: files, vocab: vocabulary(r, textVocab)}
	zipf := rand.NewZipf(r, textZipf, 1, uint64(len(tm.vocab)-1))
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = tm.vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	line := func() string { return words(lineWords - 5 + r.IntN(11)) } // 35 to 45 words
	dir := filepath.Join(memDir, userName(0))
	for _, sub := range []string{"facts", "episodes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("seed memory: %w", err)
		}
	}
	episodes := files / 2
	for k := range files - episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, text := "facts/user.md", userFacts(0)
		if k > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "# %s\n\n> Summary: %s\n\n", capital(words(3)), words(8))
			for range 5 {
				fmt.Fprintf(&b, "- %s: %s\n", capital(words(1)), line())
			}
			name, text = fmt.Sprintf("facts/topic-%04d.md", k), b.String()
		}
		if err := tm.write(dir, name, text, now); err != nil {
			return nil, err
		}
	}
	for k := range episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		month := time.Date(now.Year(), now.Month()-time.Month(k), 1, 0, 0, 0, 0, time.UTC)
		var b strings.Builder
		fmt.Fprintf(&b, "# %s Episodes\n\n> Summary: %s\n", month.Format("2006-01"), words(10))
		for e := range 5 {
			fmt.Fprintf(&b, "\n## %s\n- Summary: %s\n- Date: %s\n- Solution: %s\n- Notes: %s\n",
				capital(words(4)), line(), month.AddDate(0, 0, 1+6*e).Format(time.DateOnly), line(), line())
		}
		if err := tm.write(dir, "episodes/"+month.Format("2006-01")+".md", b.String(), now); err != nil {
			return nil, err
		}
	}
	return tm, nil
}

func (tm *textMemory) write(dir, name, text string, now time.Time) error {
	if err := writeSeed(filepath.Join(dir, filepath.FromSlash(name)), text, now); err != nil {
		return err
	}
	tm.paths = append(tm.paths, name)
	tm.bytes += int64(len(text))
	return nil
}

// vocabulary is n distinct made-up words of three or four syllables (no
// English stop word among them), in the order drawn: the first is the
// most frequent.
func vocabulary(r *rand.Rand, n int) []string {
	const consonants, vowels = "bdfgklmnprstvz", "aeiou"
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 3 + r.IntN(2) {
			b.WriteByte(consonants[r.IntN(len(consonants))])
			b.WriteByte(vowels[r.IntN(len(vowels))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// capital is s with its first letter upper case.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// message is the i-th (from 0) of n tool messages: for memory_search a
// query of three words of the vocabulary (one frequent, two of the rest),
// for memory_read the path of a file; each message its own, the same each
// run.
func (tm *textMemory) message(tool string, i, n int) string {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	head := fmt.Sprintf("Message %d of %d. ", i+1, n)
	if tool == "memory_read" {
		return head + readMarker + " " + tm.paths[r.IntN(len(tm.paths))]
	}
	v := tm.vocab
	q := []string{v[r.IntN(min(50, len(v)))]}
	for range 2 {
		q = append(q, v[r.IntN(len(v))])
	}
	return head + searchMarker + " " + strings.Join(q, " ")
}
