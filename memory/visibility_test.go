package memory

import (
	"path/filepath"
	"testing"
)

// A file a Windows editor saved starts with a byte order mark, which
// IsShared reads past: SetVisibility must read the same header, or the
// line under the mark is neither dropped nor outvoted. Before the fix,
// SetVisibility(t, false) left such a file shared (so "private FILE" and a
// DM's write left it shared) and SetVisibility(t, true) left it private.
func TestSetVisibilityReadsTheHeaderUnderABOM(t *testing.T) {
	const bom = "\ufeff"
	for _, c := range []struct {
		text   string
		shared bool
		want   string
	}{
		{bom + "> Visibility: shared\n# T\n> Summary: s\n", false, bom + "# T\n> Summary: s\n> Visibility: private\n"},
		{bom + "> Visibility: private\n# T\n> Summary: s\n", true, bom + "# T\n> Summary: s\n> Visibility: shared\n"},
		{bom + "> Visibility: shared\n", false, bom + "> Visibility: private\n"},
		{bom + "# T\n- x\n", true, bom + "# T\n> Visibility: shared\n- x\n"},
		{bom + "- x\n", true, bom + "> Visibility: shared\n- x\n"},
		{bom + "- x\n", false, bom + "- x\n"},
	} {
		got := SetVisibility(c.text, c.shared)
		if got != c.want || IsShared(got) != c.shared {
			t.Errorf("SetVisibility(%q, %v) = %q (IsShared %v); want %q", c.text, c.shared, got, IsShared(got), c.want)
		}
	}
}

// The owner's "private FILE" on such a file makes it private.
func TestSetSharedPrivateUnderABOM(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	file := filepath.Join(s.Dir(), "alice/facts/work.md")
	writeFile(t, file, "\ufeff> Visibility: shared\n# Work\n\n> Summary: work\n")
	if _, err := u.SetShared("facts/work.md", false, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, file); IsShared(got) {
		t.Errorf("after SetShared(false) the file is still shared:\n%q", got)
	}
}

// A DM's patch cannot make such a file shared: what is said in a private
// conversation stays in private files.
func TestPrivateViewPatchUnderABOMStaysPrivate(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	file := filepath.Join(s.Dir(), "alice/facts/notes.md")
	writeFile(t, file, "\ufeff> Visibility: private\n# Notes\n\n> Summary: notes\n\n- x\n")
	v := NewView(u, false, nil)
	if _, err := v.Load("facts/notes.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Patch("facts/notes.md", []Patch{{OldText: "private", NewText: "shared"}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, file); IsShared(got) {
		t.Errorf("a private conversation's patch made the file shared:\n%q", got)
	}
}
