package memory_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/memory"
)

// Found by the soak (cmd/mnemo TestSoak -soak.free, 10,000 messages): a
// person saving an episode file in place (cat > file, cp over it, an
// editor with backupcopy=yes) truncates it, then writes it. An append that
// read the file in between saw it empty, built a new file from nothing and
// renamed it in: every earlier entry and the person's save were lost. Now
// an append that finds its file existing and empty waits (up to EditWait)
// for the text, and refuses with a conflict if it stays empty.
func TestAppendWhileAPersonSavesInPlace(t *testing.T) {

	dir := filepath.Join(t.TempDir(), "memory")
	store, err := memory.Open(memory.Options{Dir: dir, Watch: true, EditWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u, err := store.User("ada")
	if err != nil {
		t.Fatal(err)
	}
	const p = "episodes/2026-11.md"
	entry := func(n string) string {
		return "## Entry " + n + "\n- Summary: entry " + n + "\n- Date: 2026-11-2" + n + "\n"
	}
	if _, err := u.Append(p, entry("1"), "", nil); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "ada", filepath.FromSlash(p))
	before, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	// The person's save: truncated, not written yet.
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, appendErr := u.Append(p, entry("2"), "", nil)
	if _, err := f.WriteString(string(before) + "- Note: the person's line\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	got := string(after)
	if !strings.Contains(got, "## Entry 1\n") || !strings.Contains(got, "the person's line") {
		t.Errorf("after an append (err %v) during a save in place, the file lost the earlier entry or the person's line:\n%s", appendErr, got)
	}
	if appendErr == nil && !strings.Contains(got, "## Entry 2\n") {
		t.Errorf("the append reported success but its entry is not in the file:\n%s", got)
	}
}

// TestAppendWaitsForASaveInPlace: a save in place that completes while the
// append waits is appended to, not replaced.
func TestAppendWaitsForASaveInPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	store, err := memory.Open(memory.Options{Dir: dir, Watch: true, EditWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u, _ := store.User("ada")
	const p = "episodes/2026-11.md"
	if _, err := u.Append(p, "## Entry 1\n- Summary: one\n- Date: 2026-11-21\n", "", nil); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "ada", filepath.FromSlash(p))
	before, _ := os.ReadFile(full)
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := u.Append(p, "## Entry 2\n- Summary: two\n- Date: 2026-11-22\n", "", nil)
		done <- err
	}()
	if _, err := f.WriteString(string(before) + "- Note: the person's line\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(full)
	for _, want := range []string{"## Entry 1\n", "the person's line", "## Entry 2\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("file lacks %q:\n%s", want, got)
		}
	}
}
