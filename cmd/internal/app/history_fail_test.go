package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// A history that cannot be written at start (its folder gone from under
// it): keeping the files as found logs what it could not keep, by user and
// path, and stops; the memory files themselves are untouched.
func TestBaselineWithAHistoryThatCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "memory")
	file := filepath.Join(mem, "ann", "facts", "user.md")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("# Ann\n> Summary: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(dir, "history")})
	if err != nil {
		t.Fatal(err)
	}
	h.Close() // every write of it fails from now on
	store, err := memory.Open(memory.Options{Dir: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var logs bytes.Buffer
	l := &changeLog{hist: h, metrics: metrics.New(metrics.Gauges{}), log: slog.New(slog.NewTextHandler(&logs, nil))}
	if n := l.baseline(context.Background(), store, ""); n != 0 {
		t.Errorf("kept %d versions in a closed history", n)
	}
	got := logs.String()
	if !strings.Contains(got, "history: could not keep a memory file as found at start") || !strings.Contains(got, "user=ann") || !strings.Contains(got, "path=facts/user.md") {
		t.Errorf("log: %s", got)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "# Ann\n> Summary: a\n" {
		t.Errorf("the memory file: %q, %v", b, err)
	}
}
