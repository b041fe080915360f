// Package bottest holds the fakes every chat adapter's tests use: a
// Handler that records tasks (and can hold them back), a Memory for
// /memory, and a log buffer safe for concurrent writers.
package bottest

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/logtest"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
)

var (
	_ mnemo.Handler    = (*Handler)(nil)
	_ memorycmd.Memory = (*Memory)(nil)
)

// Handler records tasks and answers with Reply (default: "echo: "+text).
// While Gate is set (SetGate), Handle waits for it to be closed.
type Handler struct {
	mu      sync.Mutex
	tasks   []mnemo.Task
	changed chan struct{}
	reply   func(mnemo.Task) (mnemo.Reply, error)
	gate    chan struct{}
}

// NewHandler returns an echoing Handler.
func NewHandler() *Handler { return &Handler{changed: make(chan struct{})} }

// Handle records t, waits for the gate, and answers.
func (h *Handler) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	h.mu.Lock()
	h.tasks = append(h.tasks, t)
	close(h.changed)
	h.changed = make(chan struct{})
	reply, gate := h.reply, h.gate
	h.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if reply != nil {
		return reply(t)
	}
	return mnemo.Reply{TaskID: "task", Text: "echo: " + t.Text}, nil
}

// SetReply sets how Handle answers.
func (h *Handler) SetReply(f func(mnemo.Task) (mnemo.Reply, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reply = f
}

// Hold makes the next tasks wait until the returned function is called.
func (h *Handler) Hold() (release func()) {
	gate := make(chan struct{})
	h.mu.Lock()
	h.gate = gate
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			if h.gate == gate {
				h.gate = nil
			}
			h.mu.Unlock()
			close(gate)
		})
	}
}

// Tasks is every task so far.
func (h *Handler) Tasks() []mnemo.Task {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]mnemo.Task(nil), h.tasks...)
}

// WaitTasks waits up to timeout for at least n tasks.
func (h *Handler) WaitTasks(t testing.TB, n int, timeout time.Duration) []mnemo.Task {
	t.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		got, ch := append([]mnemo.Task(nil), h.tasks...), h.changed
		h.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waited for %d tasks, got %d", n, len(got))
		}
	}
}

// Memory is a /memory backend that records what it was asked.
type Memory struct {
	mu        sync.Mutex
	ShowText  string
	ShowErr   error
	ForgetErr error
	SetErr    error                   // SetShared fails with it
	Delay     time.Duration           // Show takes this long (a slow store)
	Gate      chan struct{}           // when set, Show returns once it is closed (a store held by the test)
	Check     func(path string) error // the path grammar; nil accepts all
	// Files are the files SetShared finds, "user:path" → shared; any
	// other is missing (an error wrapping fs.ErrNotExist). Set it before
	// the Memory is used; read it with IsShared.
	Files    map[string]bool
	shown    []string
	channels []string // Show's channel, per call
	forgets  []string // "user:path"
	sets     []string // "user:path:shared" or "user:path:private", changed or not
	whys     []string
	WhyText  string
	WhyErr   error
}

// Show returns ShowText or ShowErr, after Delay and once Gate is closed.
func (m *Memory) Show(user, channel string) (string, error) {
	m.mu.Lock()
	m.shown = append(m.shown, user)
	m.channels = append(m.channels, channel)
	text, err, delay, gate := m.ShowText, m.ShowErr, m.Delay, m.Gate
	m.mu.Unlock()
	time.Sleep(delay)
	if gate != nil {
		<-gate
	}
	return text, err
}

// Why answers WhyText (WhyErr), recording "user|channel|query|inChannel".
func (m *Memory) Why(user, channel, query string, inChannel bool) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.whys = append(m.whys, fmt.Sprintf("%s|%s|%s|%v", user, channel, query, inChannel))
	return m.WhyText, m.WhyErr
}

// Whys are the Why calls made so far.
func (m *Memory) Whys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.whys)
}

// SetShared records "user:path:shared" (or private) and flips the file in
// Files, unless SetErr is set or the file is not there.
func (m *Memory) SetShared(user, path string, shared bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.SetErr != nil {
		return false, m.SetErr
	}
	was, ok := m.Files[user+":"+path]
	if !ok {
		return false, fmt.Errorf("%s: no such memory file: %w", path, fs.ErrNotExist)
	}
	m.Files[user+":"+path] = shared
	m.sets = append(m.sets, user+":"+path+":"+map[bool]string{true: "shared", false: "private"}[shared])
	return was != shared, nil
}

// IsShared reports whether "user:path" is shared in Files.
func (m *Memory) IsShared(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Files[key]
}

// Sets lists the visibility changes carried out, as "user:path:shared"
// or "user:path:private".
func (m *Memory) Sets() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.sets...)
}

// ShownChannels lists the channel each Show was asked with ("" for none).
func (m *Memory) ShownChannels() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.channels...)
}

// CheckPath applies Check.
func (m *Memory) CheckPath(path string) error {
	if m.Check == nil {
		return nil
	}
	return m.Check(path)
}

// Forget records "user:path" unless ForgetErr is set.
func (m *Memory) Forget(user, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ForgetErr != nil {
		return m.ForgetErr
	}
	m.forgets = append(m.forgets, user+":"+path)
	return nil
}

// Shown lists the users Show was asked about.
func (m *Memory) Shown() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.shown...)
}

// Forgotten lists the forgets carried out, as "user:path".
func (m *Memory) Forgotten() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.forgets...)
}

// LogBuffer collects log output from several goroutines: the module's one
// log sink for tests.
type LogBuffer = logtest.Buffer

// InOrder fails unless every want is in got, in this order.
func InOrder(t testing.TB, got string, want ...string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("want %q (in order) in\n%s", w, got)
			return
		}
		rest = rest[i+len(w):]
	}
}
