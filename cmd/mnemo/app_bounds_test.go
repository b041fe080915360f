package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// openApp hands llm.maxResponseBytes and maxReplyChars to the model client
// and the agent.
func TestOpenAppBounds(t *testing.T) {
	srv := openaitest.New(t)
	srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		switch r.LastUser() {
		case "long":
			return openaitest.Text(strings.Repeat("word ", 80)), true // a 400-character reply in a body under 1 KiB
		case "huge":
			return openaitest.Text(strings.Repeat("x", 4000)), true
		}
		return openaitest.Text("nothing to remember"), true // the reflector, at Close
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "MNEMO_DATA_DIR": filepath.Join(t.TempDir(), "memory")}
	c, err := config.Parse("mnemo.yaml", []byte("llm:\n  maxResponseBytes: 1024\n  maxRetries: 0\nmaxReplyChars: 100\n"),
		func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cenv := &cliEnv{getenv: func(string) string { return "" }, stdin: strings.NewReader(""), stdout: io.Discard,
		stderr: io.Discard, logger: slog.New(slog.DiscardHandler)}
	a, err := openApp(context.Background(), cenv, c)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	r, err := a.core.Agent.Handle(context.Background(), mnemo.Task{User: "alice", Platform: "console", Text: "long"})
	if err != nil || r.Failed || len([]rune(r.Text)) > 100 || !strings.Contains(r.Text, "reply cut") {
		t.Errorf("maxReplyChars 100: reply %q, %v", r.Text, err)
	}
	_, err = a.llm.Complete(context.Background(), llm.Request{Model: c.LLM.Model,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "huge"}}})
	if !errors.Is(err, llm.ErrResponseTooLarge) || !strings.Contains(err.Error(), "(1024 bytes)") {
		t.Errorf("llm.maxResponseBytes 1024: %v", err)
	}
}
