package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvOverridesLogged: a variable that overrides a key the config file
// sets wins, and mnemo says so once at start, naming the keys and their
// variables, never the values; a variable alone is said nowhere.
func TestEnvOverridesLogged(t *testing.T) {
	const msg = "environment variables override keys of the config file"
	w := newChatWorld(t)
	os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("llm:\n  model: file-model\n  maxRetries: 1\n"), 0o600)
	w.env["MNEMO_MODEL"] = "env-model-x1"
	w.env["MNEMO_LLM_MAX_RETRIES"] = "2"
	w.env["MNEMO_AGENT_MAX_STEPS"] = "4" // not in the file: no override
	r := w.chat(t, "hello\n")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, msg); n != 1 {
		t.Fatalf("%d override lines, want 1:\n%s", n, r.stderr)
	}
	line := r.stderr[strings.Index(r.stderr, msg):]
	line = line[:strings.Index(line, "\n")]
	if !strings.Contains(line, "llm.model (MNEMO_MODEL), llm.maxRetries (MNEMO_LLM_MAX_RETRIES)") ||
		strings.Contains(line, "agent.maxSteps") || strings.Contains(line, "env-model-x1") || strings.Contains(line, "file-model") {
		t.Errorf("override line: %s", line)
	}
	if got := w.srv.Requests(); len(got) == 0 || got[0].Chat.Model != "env-model-x1" {
		t.Errorf("the model asked is not the variable's")
	}

	os.Remove(filepath.Join(w.dir, "mnemo.yaml"))
	if r := w.chat(t, "hello\n"); strings.Contains(r.stderr, msg) {
		t.Errorf("without a file, an override line: %s", r.stderr)
	}
}
