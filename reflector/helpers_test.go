package reflector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// fakeClock is a manual clock with timers that fire when Advance passes them.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// leaky makes stop report failure and leave the timer to fire, as a real
	// timer whose callback is already running would.
	leaky bool
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
	fired   bool
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 5, 14, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.leaky || t.fired || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

// Advance moves the clock and runs the callbacks of the timers it passed,
// in time order, on the caller's goroutine.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.fired && !t.stopped && !t.at.After(c.now) {
			t.fired = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// armed counts the timers that would still fire.
func (c *fakeClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.fired && !t.stopped {
			n++
		}
	}
	return n
}

// toolCall is one call a fake memory tool received.
type toolCall struct {
	User, Name, Args string
}

// fakeMemory hands out pre-load texts and five tools that record calls.
type fakeMemory struct {
	mu         sync.Mutex
	facts      string
	episodes   string
	prepareErr error
	prepared   map[string]int
	calls      []toolCall
	versions   map[string]string // path → version, moved by the write tools
	toolErr    error             // returned by the write tools instead of writing
	block      chan struct{}     // when set, write tools wait for it to close (ignoring ctx)
}

func (m *fakeMemory) version(user, p string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.versions[user+"/"+p]
}

var _ Memory = (*fakeMemory)(nil)

func newFakeMemory() *fakeMemory {
	return &fakeMemory{
		facts:    "### facts/user.md\n# User Facts\n\n> Summary: name, language\n\n- Name: Ada\n- Language: English",
		episodes: "- episodes/2026-02.md (1.2KB): logger fix, short ID",
		prepared: map[string]int{},
		versions: map[string]string{},
	}
}

func (m *fakeMemory) Prepare(user string, factsBudget int, onCommit func(Commit) error) (Prepared, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prepareErr != nil {
		return Prepared{}, m.prepareErr
	}
	m.prepared[user]++
	tool := func(name string) agent.Tool {
		return agent.Tool{Name: name, Description: name + " (fake)", Parameters: json.RawMessage(`{"type":"object"}`),
			Call: func(_ context.Context, args json.RawMessage) (string, error) {
				m.mu.Lock()
				m.calls = append(m.calls, toolCall{User: user, Name: name, Args: string(args)})
				n, toolErr, block := len(m.calls), m.toolErr, m.block
				m.mu.Unlock()
				if strings.Contains(string(args), "refuse") {
					return "", errors.New("refused")
				}
				switch name {
				case "memory_read":
					return "# User Facts\n> Summary: name\n- Name: Ada", nil
				case "memory_list":
					return `[]`, nil
				}
				if toolErr != nil {
					return "", toolErr
				}
				if block != nil {
					<-block
				}
				var a struct {
					Path string `json:"path"`
				}
				_ = json.Unmarshal(args, &a)
				key := user + "/" + a.Path
				m.mu.Lock()
				before := m.versions[key]
				m.mu.Unlock()
				after := fmt.Sprintf("%s#%d", name, n)
				if err := onCommit(Commit{Path: a.Path, Before: before, After: after}); err != nil {
					return "", err
				}
				m.mu.Lock()
				m.versions[key] = after
				m.mu.Unlock()
				return `{"success":true}`, nil
			}}
	}
	version := func(p string) (string, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.versions[user+"/"+p], nil
	}
	return Prepared{Facts: m.facts, Episodes: m.episodes, Version: version, Tools: []agent.Tool{
		tool("memory_list"), tool("memory_read"), tool("memory_write"), tool("memory_patch"), tool("memory_append"),
	}}, nil
}

func (m *fakeMemory) Calls() []toolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]toolCall(nil), m.calls...)
}

func (m *fakeMemory) Prepared(user string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prepared[user]
}

// logBuf is a goroutine-safe log sink.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// env is one test's reflector with its fakes.
type env struct {
	t     *testing.T
	dir   string
	clock *fakeClock
	mem   *fakeMemory
	srv   *openaitest.Server
	logs  *logBuf
	cfg   Config
	r     *Reflector

	faultMu sync.Mutex
	fault   func(op, name string) error // injected disk faults; nil: none
}

// failOp makes every disk operation op fail with err (op "" clears it).
func (e *env) failOp(op string, err error) {
	e.faultMu.Lock()
	defer e.faultMu.Unlock()
	if op == "" {
		e.fault = nil
		return
	}
	e.fault = func(o, _ string) error {
		if o == op {
			return err
		}
		return nil
	}
}

func (e *env) faults(op, name string) error {
	e.faultMu.Lock()
	f := e.fault
	e.faultMu.Unlock()
	if f == nil {
		return nil
	}
	return f(op, name)
}

func newEnv(t *testing.T, tweak func(*Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: newClock(), mem: newFakeMemory(), srv: openaitest.New(t), logs: &logBuf{}}
	e.cfg = Config{
		Model:     openai.New(openai.Config{BaseURL: e.srv.URL(), APIKey: "test-key", MaxRetries: -1}),
		ModelName: "reflector-model",
		Memory:    e.mem,
		StateDir:  e.dir,
		Idle:      2 * time.Minute,
		Logger:    slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:       e.clock.Now,
		afterFunc: e.clock.AfterFunc,
		Faults:    e.faults,
	}
	if tweak != nil {
		tweak(&e.cfg)
	}
	e.r = e.open()
	return e
}

// open opens a reflector on the env's config and closes it at the end.
func (e *env) open() *Reflector {
	e.t.Helper()
	r, err := Open(e.cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// turn builds alice's n-th turn.
func turn(user, id, text string) Turn {
	return Turn{TaskID: id, User: user, Conversation: "D1", Platform: "console", Speaker: user,
		UserText: text, ReplyText: "reply to " + text}
}

func (e *env) add(t Turn) {
	e.t.Helper()
	if err := e.r.Add(t); err != nil {
		e.t.Fatalf("Add(%s): %v", t.TaskID, err)
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// idle reports that no run is in progress and nothing is due.
func (r *Reflector) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.users {
		if u.busy {
			return false
		}
	}
	return true
}

// settle waits until no run is in progress.
func (e *env) settle() {
	e.t.Helper()
	waitFor(e.t, "runs to finish", e.r.idle)
}

// crash abandons r as a killed process would: its timers stop, nothing
// more runs, nothing is cleaned up.
func (r *Reflector) crash() {
	r.mu.Lock()
	r.closing = true
	for _, u := range r.users {
		r.disarm(u)
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// requestsFor lists the recorded requests of one user's runs.
func (e *env) requestsFor(user string) []openaitest.Request {
	var out []openaitest.Request
	for _, req := range e.srv.Requests() {
		if requestUser(req) == user {
			out = append(out, req)
		}
	}
	return out
}

// requestUser finds the user a reflection request is about.
func requestUser(req openaitest.Request) string {
	for _, m := range req.Chat.Messages {
		if _, rest, ok := strings.Cut(m.Content, "Memory of user \""); ok {
			name, _, _ := strings.Cut(rest, "\"")
			return name
		}
	}
	return ""
}

// journalLines reads a user's journal, one string per line.
func (e *env) journalLines(user string) []string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, "reflector", user+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func (e *env) writeJournal(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "reflector", name), []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func mustLine(t *testing.T, tr Turn, attempts int) string {
	t.Helper()
	b, err := encodeLine(entry{turn: tr, attempts: attempts})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func count(s, sub string) int { return strings.Count(s, sub) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// gateModel makes every model call signal arrived (buffered) and then wait
// until release is sent to or closed, before answering text.
func (e *env) gateModel(text string) (arrived chan struct{}, release chan struct{}) {
	arrived, release = make(chan struct{}, 8), make(chan struct{})
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		arrived <- struct{}{}
		<-release
		return openaitest.Text(text), true
	})
	return arrived, release
}
