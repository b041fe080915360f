package memory_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/memory"
)

// Found by the soak (cmd/mnemo TestSoak -soak.free, 10,000 messages): a
// person saving an episode file in place (cat > file, cp over it, an
// editor with backupcopy=yes) truncates it, then writes it. An append that
// reads the file in between sees it empty, builds a new file from nothing
// (title + its one entry), finds it still empty at its check before the
// rename, and renames it in: every earlier entry of the month is gone, and
// the person's save then goes to the replaced inode, gone too. Nothing is
// logged. The store knew the file was not empty (its index, its last
// write); an empty read of such a file should be treated as a save under
// way (wait for it, or refuse with a conflict so the reflection is
// retried), not as the file's content.
func TestAppendWhileAPersonSavesInPlace(t *testing.T) {
	t.Skip("known bug, reported from the soak: an append during a person's in-place save drops the file's earlier entries; unskip once the store treats that empty read as a save under way")
	dir := filepath.Join(t.TempDir(), "memory")
	store, err := memory.Open(memory.Options{Dir: dir, Watch: true})
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
	if _, err := u.Append(p, entry("1"), ""); err != nil {
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
	_, appendErr := u.Append(p, entry("2"), "")
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
