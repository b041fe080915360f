package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// baseline keeps each file whose text the history lacks as its newest, as
// found at start, once.
func TestHistoryBaseline(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "memory")
	for p, text := range map[string]string{
		"ann/facts/user.md":       "# Ann\n> Summary: a\n",
		"ann/facts/kept.md":       "# Kept\n> Summary: k\n",
		"bob/episodes/2026-11.md": "# E\n> Summary: e\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(mem, p)), 0o755)
		os.WriteFile(filepath.Join(mem, p), []byte(text), 0o644)
	}
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(dir, "history")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Record("ann", "facts/kept.md", []byte("# Kept\n> Summary: k\n"), "reflector") // already the newest
	store, err := memory.Open(memory.Options{Dir: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := &changeLog{hist: h, metrics: metrics.New(metrics.Gauges{}), log: slog.New(slog.DiscardHandler)}
	if n := l.baseline(context.Background(), store, "bob"); n != 1 {
		t.Errorf("kept %d versions of bob's, want 1", n)
	}
	if vs, _ := h.List("ann", "facts/user.md"); len(vs) != 0 {
		t.Errorf("a baseline of bob kept ann's files: %+v", vs)
	}
	if n := l.baseline(context.Background(), store, ""); n != 1 {
		t.Errorf("kept %d versions, want 1 (bob's and the file already kept are not kept again)", n)
	}
	if vs, _ := h.List("ann", "facts/user.md"); len(vs) != 1 || vs[0].Who != "as found at start" {
		t.Errorf("ann's user.md: %+v", vs)
	}
	if n := l.baseline(context.Background(), store, ""); n != 0 {
		t.Errorf("a second baseline kept %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	os.WriteFile(filepath.Join(mem, "bob/episodes/2026-11.md"), []byte("# E\n> Summary: changed\n"), 0o644)
	if n := l.baseline(ctx, store, ""); n != 0 {
		t.Errorf("a cancelled baseline kept %d", n)
	}
}

// With a watcher and the index cache (files marked kept are skipped, see
// memory.User.KeepEach), a file changed while mnemo was not running is
// still kept at the next start, and nothing is kept twice.
func TestHistoryBaselineAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "memory")
	write := func(p, text string) {
		os.MkdirAll(filepath.Dir(filepath.Join(mem, p)), 0o755)
		os.WriteFile(filepath.Join(mem, p), []byte(text), 0o644)
	}
	write("ann/facts/user.md", "# Ann\n> Summary: a\n")
	write("ann/facts/work.md", "# Work\n> Summary: w\n")
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(dir, "history")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l := &changeLog{hist: h, metrics: metrics.New(metrics.Gauges{}), log: slog.New(slog.DiscardHandler)}
	run := func(want int) {
		t.Helper()
		store, err := memory.Open(memory.Options{Dir: mem, Watch: true, IndexCache: filepath.Join(dir, "index")})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		if n := l.baseline(context.Background(), store, "ann"); n != want {
			t.Errorf("kept %d versions, want %d", n, want)
		}
	}
	run(2)
	write("ann/facts/user.md", "# Ann\n> Summary: edited while mnemo was stopped\n")
	run(1)
	if vs, _ := h.List("ann", "facts/user.md"); len(vs) != 2 || vs[0].Who != "as found at start" || vs[0].Size != 48 {
		t.Errorf("ann's user.md: %+v", vs)
	}
	run(0)
}
