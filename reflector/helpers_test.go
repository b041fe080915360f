package reflector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/agent/logtest"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"go.uber.org/goleak"
)

func newClock() *clocktest.Fake {
	return clocktest.New(time.Date(2026, 3, 5, 14, 0, 0, 0, time.UTC))
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
	scopes     []mnemo.Scope // of each Prepare, in order
	froms      [][]string    // the TaskIDs of each Prepare's turns to stamp with
	calls      []toolCall
	versions   map[string]string // path → version, moved by the write tools
	toolErr    error             // returned by the write tools instead of writing
	block      chan struct{}     // when set, write tools wait for it to close (ignoring ctx)
	changes    *changes
}

func (m *fakeMemory) version(user, p string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.versions[user+"/"+p]
}

var _ Memory = (*fakeMemory)(nil)

func newFakeMemory(c *changes) *fakeMemory {
	return &fakeMemory{
		changes:  c,
		facts:    "### facts/user.md\n# User Facts\n\n> Summary: name, language\n\n- Name: Ada\n- Language: English",
		episodes: "- episodes/2026-02.md (1.2KB): logger fix, short ID",
		prepared: map[string]int{},
		versions: map[string]string{},
	}
}

func (m *fakeMemory) Prepare(scope mnemo.Scope, said []mnemo.Turn, factsBudget int, onCommit func(Commit) error) (Prepared, error) {
	user := scope.User
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prepareErr != nil {
		return Prepared{}, m.prepareErr
	}
	m.prepared[user]++
	m.scopes = append(m.scopes, scope)
	ids := make([]string, len(said))
	for i, t := range said {
		ids[i] = t.TaskID
	}
	m.froms = append(m.froms, ids)
	tool := func(name string) mnemo.Tool {
		return mnemo.Tool{Name: name, Description: name + " (fake)", Parameters: json.RawMessage(`{"type":"object"}`),
			Call: func(_ context.Context, args json.RawMessage) (string, error) {
				m.mu.Lock()
				m.calls = append(m.calls, toolCall{User: user, Name: name, Args: string(args)})
				n, toolErr, block := len(m.calls), m.toolErr, m.block
				m.mu.Unlock()
				m.changes.notify()
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
	return Prepared{Facts: m.facts, Episodes: m.episodes, Version: version, Tools: []mnemo.Tool{
		tool("memory_list"), tool("memory_read"), tool("memory_write"), tool("memory_patch"), tool("memory_append"),
	}}, nil
}

func (m *fakeMemory) Calls() []toolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]toolCall(nil), m.calls...)
}

// Scopes are the scopes Prepare was called with, in order.
func (m *fakeMemory) Scopes() []mnemo.Scope {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mnemo.Scope(nil), m.scopes...)
}

func (m *fakeMemory) Prepared(user string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prepared[user]
}

// changes is closed and renewed at every recorded change (a log line, a
// tool call), for waitFor.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

// next is closed at the next change.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *changes) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// env is one test's reflector with its fakes.
type env struct {
	t       *testing.T
	dir     string
	clock   *clocktest.Fake
	changes *changes
	mem     *fakeMemory
	srv     *openaitest.Server
	logs    *logtest.Buffer
	cfg     Config
	r       *Reflector

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
	c := &changes{}
	e := &env{t: t, dir: t.TempDir(), clock: newClock(), mem: newFakeMemory(c), srv: openaitest.New(t), logs: &logtest.Buffer{OnWrite: c.notify}, changes: c}
	e.cfg = Config{
		Model:     openai.New(openai.Config{BaseURL: e.srv.URL(), APIKey: "test-key", MaxRetries: -1}),
		ModelName: "reflector-model",
		Memory:    e.mem,
		StateDir:  e.dir,
		Idle:      2 * time.Minute,
		Logger:    slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:     e.clock,
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

// endWindow ends the journal's sync window (its timer fires and the
// flusher fsyncs), so that Armed counts the reflector's own timers only.
func (e *env) endWindow() { e.clock.Advance(DefaultSyncWindow) }

// waitFor waits until cond holds, checking it again at each log line, tool
// call and end of a run.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	e.wait(what, cond, e.r.running)
}

// waitLogs waits until cond holds, checking it again at each log line and
// tool call only: unlike waitFor it runs nothing on the users' loops, so
// what it waits for must come about without them being woken.
func (e *env) waitLogs(what string, cond func() bool) {
	e.t.Helper()
	e.wait(what, cond, nil)
}

// wait waits until cond holds, checking it again at each change and, when
// running is set, at the end of each run it lists.
func (e *env) wait(what string, cond func() bool, running func() []chan struct{}) {
	e.t.Helper()
	// A bound for a hung test, not a timing: 200 reflections under -race
	// on a loaded 2-core machine took longer than 10 s.
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		changed := e.changes.next()
		var dones []chan struct{}
		if running != nil {
			dones = running() // after the loops' ops under way: cond sees their effects
		}
		if cond() {
			return
		}
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(changed)},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline.C)},
		}
		for _, d := range dones {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(d)})
		}
		if i, _, _ := reflect.Select(cases); i == 1 {
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// running lists the done channels of the runs in progress.
func (r *Reflector) running() []chan struct{} {
	var dones []chan struct{}
	r.each(func(u *userState) {
		if u.busy {
			dones = append(dones, u.done)
		}
	})
	return dones
}

// each runs f on the loop of every user with state.
func (r *Reflector) each(f func(*userState)) {
	r.mu.Lock()
	var users []*userState
	for name := range r.users {
		users = append(users, r.acquire(name, false))
	}
	r.mu.Unlock()
	for _, u := range users {
		u.exec(func() { f(u) })
	}
}

// settle waits until no run is in progress.
func (e *env) settle() {
	e.t.Helper()
	// A bound for a hung test, not a timing: 200 reflections under -race
	// on a loaded 2-core machine took longer than 10 s.
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		dones := e.r.running()
		if len(dones) == 0 {
			return
		}
		for _, d := range dones {
			select {
			case <-d:
			case <-deadline.C:
				e.t.Fatal("timed out waiting for the runs to finish")
			}
		}
	}
}

// drain waits until no turn is pending and no run is in progress.
func (e *env) drain(what string) {
	e.t.Helper()
	e.waitFor(what, func() bool { return e.r.Pending() == 0 })
	e.settle()
}

// hasState reports whether the reflector keeps state for user.
func (r *Reflector) hasState(user string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[user] != nil
}

// crash abandons r as a killed process would: its timers stop, nothing
// more runs, nothing is cleaned up.
func (r *Reflector) crash() {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.cancel()
	r.each(func(u *userState) {
		u.closing = true
		u.disarm()
	})
	r.wg.Wait()
	r.timers.stop()
	r.j.stop(false)
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

// turnDuringRun adds alice's turn t1, lets its run start once the idle time
// is up and reach the model, held there as by gateModel(text), and adds
// her turn t2 while that run is busy.
func (e *env) turnDuringRun(text string) (arrived chan struct{}, release chan struct{}) {
	arrived, release = e.gateModel(text)
	e.add(turn("alice", "t1", "one"))
	e.clock.Advance(2 * time.Minute)
	<-arrived
	e.add(turn("alice", "t2", "two"))
	return arrived, release
}

// TestMain checks that no loop or run outlives its reflector's Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
