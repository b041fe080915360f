package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
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
	// A baseline that ran to its end says so (mnemo-load -bench waits for
	// it); a cancelled one does not.
	var logged bytes.Buffer
	l.log = slog.New(slog.NewTextHandler(&logged, nil))
	if n := l.baseline(context.Background(), store, ""); n != 0 {
		t.Errorf("a second baseline kept %d", n)
	}
	if !strings.Contains(logged.String(), "as found at start; done") {
		t.Errorf("a finished baseline logged %q", logged.String())
	}
	logged.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	os.WriteFile(filepath.Join(mem, "bob/episodes/2026-11.md"), []byte("# E\n> Summary: changed\n"), 0o644)
	if n := l.baseline(ctx, store, ""); n != 0 {
		t.Errorf("a cancelled baseline kept %d", n)
	}
	if strings.Contains(logged.String(), "done") {
		t.Errorf("a cancelled baseline logged %q", logged.String())
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

// Every kind of change is kept in the history under who made it: a hand
// edit (or its deletion), a forget, the reflector's write after the text
// it replaced, a person's /memory share under their name; a history that
// cannot be written is logged, never a failed change.
func TestChangeLogRecords(t *testing.T) {
	h, err := memhistory.Open(memhistory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	l := &changeLog{hist: h, metrics: metrics.New(metrics.Gauges{}), log: slog.New(slog.NewTextHandler(&logs, nil))}
	after := func(text string) memory.Version {
		return memory.Version{Exists: true, Size: int64(len(text)), Hash: sha256.Sum256([]byte(text))}
	}
	l.onChange(memory.Commit{User: "ann", Path: "facts/a.md", Kind: memory.ChangeEdit, After: after("one"), Text: []byte("one")})
	l.onChange(memory.Commit{User: "ann", Path: "facts/a.md", Kind: memory.ChangeWrite, After: after("two"), Text: []byte("two"), Previous: []byte("one")})
	c := memory.Commit{User: "ann", Path: "facts/a.md", Kind: memory.ChangeWrite, After: after("three")}
	l.author(c, "ann (/memory share)")
	c.Text, c.Previous = []byte("three"), []byte("two")
	l.onChange(c)
	l.onChange(memory.Commit{User: "ann", Path: "facts/a.md", Kind: memory.ChangeEdit})
	l.onChange(memory.Commit{User: "ann", Path: "facts/b.md", Kind: memory.ChangeDelete})
	vs, err := h.List("ann", "facts/a.md")
	var who []string
	for _, v := range vs {
		who = append(who, v.Who)
	}
	if err != nil || strings.Join(who, "; ") != "hand edit (deleted); ann (/memory share); reflector; hand edit" {
		t.Errorf("history of facts/a.md: %q, %v", who, err)
	}
	if vs, _ := h.List("ann", "facts/b.md"); len(vs) != 1 || vs[0].Who != "forget" || !vs[0].Deleted {
		t.Errorf("history of facts/b.md: %+v", vs)
	}
	// A forget's removed text is not kept again when it is the newest kept.
	l.onChange(memory.Commit{User: "ann", Path: "facts/c.md", Kind: memory.ChangeCreate, After: after("c"), Text: []byte("c")})
	l.onChange(memory.Commit{User: "ann", Path: "facts/c.md", Kind: memory.ChangeDelete, Previous: []byte("c")})
	if vs, _ := h.List("ann", "facts/c.md"); len(vs) != 2 || vs[0].Who != "forget" || vs[1].Who != "reflector" {
		t.Errorf("history of facts/c.md: %+v", vs)
	}
	h.Close()
	l.onChange(memory.Commit{User: "ann", Path: "facts/a.md", Kind: memory.ChangeWrite, After: after("four"), Text: []byte("four")})
	if !strings.Contains(logs.String(), "history: could not keep a version of a memory file") {
		t.Errorf("a failed history is not logged: %s", logs.String())
	}
}

// A person's save that lands just before a forget of the file, unseen by
// the watcher (here: none runs), is kept in the history as the text the
// forget removed ("before delete"), whole: `mnemo memory restore` can
// bring it back.
func TestForgetKeepsAHandEditJustBeforeIt(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"MNEMO_DATA_DIR": filepath.Join(dir, "data", "memory"), "HOME": dir}
	for _, sub := range []string{"memory", "state/history"} {
		if err := os.MkdirAll(filepath.Join(dir, "data", sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(dir, "data", "state", "history")})
	if err != nil {
		t.Fatal(err)
	}
	l := &changeLog{hist: h, metrics: metrics.New(metrics.Gauges{}), log: slog.New(slog.DiscardHandler)}
	file := filepath.Join(dir, "data", "memory", "ann", "facts", "user.md")
	reflected := "# Ann\n> Summary: who Ann is\n\n- Name: Ann\n"
	edited := reflected + "- Editor: vim\n"
	store, err := memory.Open(memory.Options{Dir: env["MNEMO_DATA_DIR"], Watch: false, OnChange: l.onChange,
		Faults: func(op, name string) error {
			if op == durable.Remove && name == "facts/user.md" { // the save lands just before the remove
				if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
					t.Error(err)
				}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := store.User("ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write("facts/user.md", reflected, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := u.Remove("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	store.Close()
	defer h.Close()

	// Newest first: the forget, the text it removed, the reflector's write.
	vs, err := h.List("ann", "facts/user.md")
	if err != nil || len(vs) != 3 || !strings.Contains(vs[0].Who, "forget") || !vs[0].Deleted || vs[1].Who != "before delete" || vs[2].Who != "reflector" {
		t.Fatalf("history after a save just before a forget: %+v, %v", vs, err)
	}
	if got, err := h.Read("ann", "facts/user.md", vs[1]); err != nil || string(got) != edited {
		t.Errorf("the version kept before the delete is %q, %v; want the hand edit %q", got, err, edited)
	}
}

// A person's "forget that": the history forgets the lines before the
// change and ends the forget when told of it; a roll-up deleted by a
// forget takes its history; a history that cannot forget refuses.
func TestChangeLogForgets(t *testing.T) {
	dir := t.TempDir()
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(dir, "history")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var logged bytes.Buffer
	l := &changeLog{hist: h, metrics: metrics.New(metrics.Gauges{}), log: slog.New(slog.NewTextHandler(&logged, nil))}
	old := []byte("# U\n\n- Lives in: Berlin\n- Name: Ann\n")
	h.Record("ann", "facts/user.md", old, "reflector")
	h.Record("ann", "episodes/2026-Q1.md", []byte("# Q1\n"), "rollup")
	c := memory.Commit{User: "ann", Path: "facts/user.md", Kind: memory.ChangePatch, Forgotten: []string{"- Lives in: Berlin"}}
	if err := l.forgetting(c); err != nil {
		t.Fatal(err)
	}
	c.Previous, c.Text = old, []byte("# U\n\n- Name: Ann\n")
	l.onChange(c)
	vs, _ := h.List("ann", "facts/user.md")
	for _, v := range vs {
		if b, err := h.Read("ann", "facts/user.md", v); err != nil || strings.Contains(string(b), "Berlin") {
			t.Errorf("version %s: %q, %v", v.ID, b, err)
		}
	}
	if !strings.Contains(logged.String(), "forgot lines in every kept version") || strings.Contains(logged.String(), "Berlin") {
		t.Errorf("log: %s", logged.String())
	}
	l.onChange(memory.Commit{User: "ann", Path: "episodes/2026-Q1.md", Kind: memory.ChangeDelete, Forget: true, Previous: []byte("# Q1\n")})
	if vs, _ := h.List("ann", "episodes/2026-Q1.md"); len(vs) != 0 {
		t.Errorf("a roll-up deleted by a forget kept its history: %+v", vs)
	}
	if err := l.forgetting(memory.Commit{User: "../x", Path: "facts/user.md", Forgotten: []string{"a"}}); err == nil || !strings.Contains(logged.String(), "the forget was not made") {
		t.Errorf("a history that cannot forget: %v\n%s", err, logged.String())
	}
}
