package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Credentials written into OPENAI_BASE_URL never reach a log line or an
// error message, whether the model server answers or not.
func TestBaseURLCredentialsNotShown(t *testing.T) {
	w := newChatWorld(t)
	w.env["OPENAI_BASE_URL"] = strings.Replace(w.srv.URL(), "http://", "http://user:s3cr3t@", 1)
	r := w.chat(t, "Hello, I'm Zhang San.\n", "--user", "zhangsan", "--verbose")
	r.want(t, 0, "Noted.\n", "mnemo: ready")
	if strings.Contains(r.stderr, "s3cr3t") {
		t.Errorf("the password was logged:\n%s", r.stderr)
	}
	// Nothing answers there; no retries, so the test stays quick.
	if err := os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("llm:\n  maxRetries: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env["OPENAI_BASE_URL"] = "http://user:s3cr3t@127.0.0.1:1/v1"
	r = w.chat(t, "Hello again.\n", "--user", "zhangsan", "--verbose")
	if strings.Contains(r.stdout+r.stderr, "s3cr3t") {
		t.Errorf("the password was shown:\n%s\n%s", r.stdout, r.stderr)
	}
}
