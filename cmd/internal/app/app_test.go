package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// world is a data folder and a fake model server for one test.
type world struct {
	dir string
	srv *openaitest.Server
	env map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	srv := openaitest.New(t)
	srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Text("nothing to remember"), true
	})
	return &world{dir: dir, srv: srv, env: map[string]string{
		"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-key-123456",
		"MNEMO_DATA_DIR": filepath.Join(dir, "data", "memory"),
	}}
}

// config is the world's configuration with yaml on top.
func (w *world) config(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("mnemo.yaml", []byte(yaml), func(k string) string { return w.env[k] }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// open opens the app on the world with yaml; it is closed when the test
// ends.
func (w *world) open(t *testing.T, yaml string) *App {
	t.Helper()
	a, err := Open(context.Background(), Options{Config: w.config(t, yaml), Logger: slog.New(slog.DiscardHandler), Notes: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// putMemory writes a memory file by hand: rel is under the memory folder.
func (w *world) putMemory(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(w.dir, "data", "memory", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// file is a memory file's text.
func (w *world) file(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, "data", "memory", rel))
	if err != nil {
		t.Fatalf("memory file %s: %v", rel, err)
	}
	return string(b)
}

// Open hands llm.maxResponseBytes and maxReplyChars to the model client
// and the agent.
func TestOpenBounds(t *testing.T) {
	w := newWorld(t)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		switch r.LastUser() {
		case "long":
			return openaitest.Text(strings.Repeat("word ", 80)), true // a 400-character reply in a body under 1 KiB
		case "huge":
			return openaitest.Text(strings.Repeat("x", 4000)), true
		}
		return openaitest.Text("nothing to remember"), true // the reflector, at Close
	})
	a := w.open(t, "llm:\n  maxResponseBytes: 1024\n  maxRetries: 0\nmaxReplyChars: 100\n")
	r, err := a.core.Agent.Handle(context.Background(), mnemo.Task{User: "alice", Platform: "console", Text: "long"})
	if err != nil || r.Failed || len([]rune(r.Text)) > 100 || !strings.Contains(r.Text, "reply cut") {
		t.Errorf("maxReplyChars 100: reply %q, %v", r.Text, err)
	}
	_, err = a.llm.Complete(context.Background(), llm.Request{Model: a.cfg.LLM.Model,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "huge"}}})
	if !errors.Is(err, llm.ErrResponseTooLarge) || !strings.Contains(err.Error(), "(1024 bytes)") {
		t.Errorf("llm.maxResponseBytes 1024: %v", err)
	}
}

// log is a logger that discards.
func (w *world) log() *slog.Logger { return slog.New(slog.DiscardHandler) }
