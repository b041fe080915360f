package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/memory"
)

const wait = 10 * time.Second

// TestMain fails the run if the adapter's or socketmode's goroutines
// outlive the tests.
func TestMain(m *testing.M) {
	os.Exit(slacktest.CheckGoroutines(m.Run(), 5*time.Second, "bots/slack.(*", "bots/internal/core.(*", "slack/socketmode", "net/http.(*persistConn)"))
}

// fakeHandler records tasks and answers with reply (default: echo).
type fakeHandler struct {
	mu      sync.Mutex
	tasks   []agent.Task
	changed chan struct{}
	reply   func(agent.Task) (agent.Reply, error)
	gate    chan struct{} // when set, Handle waits for it to close
}

func newHandler() *fakeHandler { return &fakeHandler{changed: make(chan struct{})} }

func (h *fakeHandler) Handle(ctx context.Context, t agent.Task) (agent.Reply, error) {
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
	return agent.Reply{TaskID: "task", Text: "echo: " + t.Text}, nil
}

func (h *fakeHandler) setReply(f func(agent.Task) (agent.Reply, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reply = f
}

func (h *fakeHandler) all() []agent.Task {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]agent.Task(nil), h.tasks...)
}

// waitTasks waits for at least n tasks.
func (h *fakeHandler) waitTasks(t *testing.T, n int) []agent.Task {
	t.Helper()
	deadline := time.After(wait)
	for {
		h.mu.Lock()
		got, ch := append([]agent.Task(nil), h.tasks...), h.changed
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

// fakeMemory is the /memory backend.
type fakeMemory struct {
	mu        sync.Mutex
	show      string
	showErr   error
	delay     time.Duration
	shown     []string
	forgets   []string // "user:path"
	forgetErr error
}

func (m *fakeMemory) Show(user string) (string, error) {
	m.mu.Lock()
	m.shown = append(m.shown, user)
	show, err, delay := m.show, m.showErr, m.delay
	m.mu.Unlock()
	time.Sleep(delay)
	return show, err
}

// CheckPath is the real grammar: the adapter must not keep its own copy.
func (m *fakeMemory) CheckPath(path string) error {
	_, err := memory.ParsePath(path)
	return err
}

func (m *fakeMemory) Forget(user, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forgetErr != nil {
		return m.forgetErr
	}
	m.forgets = append(m.forgets, user+":"+path)
	return nil
}

func (m *fakeMemory) forgotten() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.forgets...)
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs a Bot against a fake Slack until the test ends.
type harness struct {
	srv  *slacktest.Server
	bot  *Bot
	h    *fakeHandler
	mem  *fakeMemory
	logs *syncBuffer
	stop func() error // cancels Run and returns its result
}

type setup struct {
	opts      slacktest.Options
	config    func(*Config)
	bot       func(*Bot)
	noConnect bool // do not wait for the Socket Mode connection
}

func start(t *testing.T, s setup) *harness {
	t.Helper()
	srv := slacktest.New(t, s.opts)
	hs := &harness{srv: srv, h: newHandler(), mem: &fakeMemory{}, logs: &syncBuffer{}}
	cfg := Config{
		BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(),
		Handler: hs.h, Memory: hs.mem,
		Logger: slog.New(slog.NewTextHandler(hs.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if s.config != nil {
		s.config(&cfg)
	}
	bot, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bot.retryBase = 10 * time.Millisecond
	if s.bot != nil {
		s.bot(bot)
	}
	hs.bot = bot
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bot.Run(ctx) }()
	var once sync.Once
	var result error
	hs.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(wait):
				result = errors.New("Run did not return after cancel")
			}
		})
		return result
	}
	t.Cleanup(func() {
		if err := hs.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
		if bot.Ready() {
			t.Error("Ready after Run returned")
		}
		for _, tok := range []string{cfg.BotToken, cfg.AppToken} {
			if strings.Contains(hs.logs.String(), tok) {
				t.Errorf("a token was logged:\n%s", hs.logs.String())
			}
		}
		if t.Failed() {
			t.Logf("logs:\n%s", hs.logs.String())
		}
	})
	if !s.noConnect {
		if err := srv.WaitConnected(1, wait); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "Ready", bot.Ready)
	}
	return hs
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quiet waits a little and checks that nothing more was posted.
func (hs *harness) quiet(t *testing.T, posts int) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if got := hs.srv.Posts(); len(got) != posts {
		t.Fatalf("%d posts; want %d: %+v", len(got), posts, got)
	}
}

// ackPayload waits for the ack of env and decodes its payload.
func (hs *harness) ackPayload(t *testing.T, env slacktest.Envelope) responsePayload {
	t.Helper()
	ack, err := hs.srv.WaitAck(env.ID, wait)
	if err != nil {
		t.Fatal(err)
	}
	var p responsePayload
	if len(ack.Payload) > 0 {
		if err := json.Unmarshal(ack.Payload, &p); err != nil {
			t.Fatalf("ack payload %s: %v", ack.Payload, err)
		}
	}
	p.raw = ack.Raw
	return p
}

type responsePayload struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
	Blocks       []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Style    string `json:"style"`
		} `json:"elements"`
	} `json:"blocks"`
	raw []byte
}

// button returns the value of the button with actionID.
func (p responsePayload) button(actionID string) string {
	for _, b := range p.Blocks {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}
