package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// RollupModel is the reflector's model on the configured server; a
// configuration without a reachable server is an error.
func TestRollupModel(t *testing.T) {
	srv := openaitest.New(t)
	srv.Enqueue(openaitest.Text("Summary: s"))
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-key-123456", "MNEMO_REFLECTOR_MODEL": "small",
		"MNEMO_DATA_DIR": filepath.Join(t.TempDir(), "memory")}
	cfg, err := config.Load("", false, func(k string) string { return env[k] }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	model, name, err := RollupModel(context.Background(), cfg, "", nil)
	if err != nil || name != "small" {
		t.Fatalf("RollupModel = %q, %v", name, err)
	}
	resp, err := model.Complete(context.Background(), llm.Request{Model: name, Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if err != nil || resp.Message.Content != "Summary: s" {
		t.Errorf("Complete = %+v, %v", resp, err)
	}
	cfg.LLM.BaseURL, cfg.LLM.APIKey = "", ""
	if _, _, err := RollupModel(context.Background(), cfg, "http://127.0.0.1:1", nil); err == nil {
		t.Error("no model server: no error")
	}
}
