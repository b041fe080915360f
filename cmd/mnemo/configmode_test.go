package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configuration file holding a secret that its group or other local
// users can read is named with the keys it holds and the fix; never the
// secret itself.
func TestLooseSecrets(t *testing.T) {
	const key = "llm:\n  apiKey: sk-secret-1\n  model: m\nmaxReplyChars: 16000\nidentities:\n  ada: [\"discord:1\"]\n"
	tests := []struct {
		name string
		mode os.FileMode
		text string
		want string // "" = no warning
	}{
		{"private", 0o600, key, ""},
		{"read-only, private", 0o400, key, ""},
		{"world-readable", 0o644, key, "holds llm.apiKey and other local users can read it (mode 0644): run `chmod 600 FILE`, or set OPENAI_API_KEY in the environment instead"},
		{"group-readable", 0o640, key, "(mode 0640)"},
		{"other-readable only", 0o604, key, "(mode 0604)"},
		{"group-writable, not readable", 0o620, key, ""},
		{"every token", 0o644, "slack:\n  botToken: xoxb-1\n  appToken: xapp-1\ndiscord:\n  botToken: d\n",
			"holds slack.botToken, slack.appToken, discord.botToken and other local users can read it (mode 0644): run `chmod 600 FILE`, or set SLACK_BOT_TOKEN, SLACK_APP_TOKEN, DISCORD_BOT_TOKEN in the environment instead"},
		{"no secret", 0o644, "llm:\n  model: m\n", ""},
		{"a blank key", 0o644, "llm:\n  apiKey: \"  \"\n", ""},
		{"a section that is not a mapping", 0o644, "llm: 3\n", ""},
		{"not YAML", 0o644, "llm: [\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mnemo.yaml")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			got := looseSecrets(path)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, strings.ReplaceAll(tt.want, "FILE", path)) {
				t.Fatalf("looseSecrets = %q, want %q", got, tt.want)
			}
			if tt.want != "" && !strings.HasPrefix(got, path+" holds ") {
				t.Fatalf("the file is not named first: %q", got)
			}
			if strings.Contains(got, "sk-secret") || strings.Contains(got, "xoxb") {
				t.Fatalf("the secret is shown: %q", got)
			}
		})
	}
	if got := looseSecrets(""); got != "" {
		t.Errorf("no file: %q", got)
	}
	if got := looseSecrets(filepath.Join(t.TempDir(), "missing.yaml")); got != "" {
		t.Errorf("a missing file: %q", got)
	}
}

// chat and serve warn at start, and `memory check` says so as a warning
// (exit 0: the memory is sound); other commands say nothing of it.
func TestLooseSecretsWarned(t *testing.T) {
	dir := inTempDir(t)
	path := filepath.Join(dir, "mnemo.yaml")
	if err := os.WriteFile(path, []byte("llm:\n  apiKey: sk-secret-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "data", "memory"), 0o700)
	env := map[string]string{}
	cli(t, env, "memory", "check").want(t, 0, "ok: ", "")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = "mnemo.yaml holds llm.apiKey and other local users can read it (mode 0644)"
	for _, cmd := range []string{"chat", "serve"} {
		r := cli(t, env, cmd)
		if !strings.Contains(r.stderr, "config: "+warning) || strings.Count(r.stderr, warning) != 1 {
			t.Errorf("%s: stderr %q", cmd, r.stderr)
		}
	}
	r := cli(t, env, "memory", "check")
	r.want(t, 0, "warning: "+warning, "")
	if !strings.Contains(r.stdout, "ok: ") {
		t.Errorf("memory check: %q", r.stdout)
	}
	if r := cli(t, env, "memory", "ls"); strings.Contains(r.stdout+r.stderr, warning) {
		t.Errorf("memory ls warned: %q", r.stdout+r.stderr)
	}
}
