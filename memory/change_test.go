package memory

import (
	"testing"
)

// TestChangesAreReported: the commit hook and the store's OnChange
// observer are told what each change is — whose file, which, and of what
// kind — so callers see changes, not tool names.
func TestChangesAreReported(t *testing.T) {
	var changes []Commit
	s := newStore(t, func(o *Options) { o.OnChange = func(c Commit) { changes = append(changes, c) } })
	u := mustUser(t, s, "alice")
	var hooked []ChangeKind
	sess := u.NewSession()
	sess.OnCommit(func(c Commit) error {
		if c.User != "alice" {
			t.Errorf("commit of user %q", c.User)
		}
		hooked = append(hooked, c.Kind)
		return nil
	})
	must(t, sess.Write("facts/user.md", userFact))
	must(t, sess.Write("facts/user.md", userFact+"- Likes: tea\n"))
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "tea", NewText: "coffee"}}); err != nil {
		t.Fatal(err)
	}
	entry := "## T\n- Summary: s\n- Date: 2026-02-01\n"
	must(t, sess.Append("episodes/2026-02.md", entry, ""))
	must(t, sess.Append("episodes/2026-02.md", entry, ""))
	must(t, u.Remove("facts/user.md"))

	want := []ChangeKind{ChangeCreate, ChangeWrite, ChangePatch, ChangeCreate, ChangeAppend}
	if len(hooked) != len(want) {
		t.Fatalf("hook saw %v, want %v", hooked, want)
	}
	for i := range want {
		if hooked[i] != want[i] {
			t.Errorf("hook saw %v, want %v", hooked, want)
			break
		}
	}
	want = append(want, ChangeDelete)
	if len(changes) != len(want) {
		t.Fatalf("observer saw %+v, want kinds %v", changes, want)
	}
	paths := []string{"facts/user.md", "facts/user.md", "facts/user.md", "episodes/2026-02.md", "episodes/2026-02.md", "facts/user.md"}
	for i, c := range changes {
		if c.Kind != want[i] || c.Path != paths[i] || c.User != "alice" {
			t.Errorf("change %d = %s %s of %q, want %s %s", i, c.Kind, c.Path, c.User, want[i], paths[i])
		}
		now := c.After
		if c.Kind == ChangeDelete {
			if !c.Before.Exists || c.Before.Size == 0 || now.Exists {
				t.Errorf("delete reported as %+v", c)
			}
			continue
		}
		if !now.Exists || (c.Kind == ChangeCreate) == c.Before.Exists {
			t.Errorf("change %d versions: before %v, after %v", i, c.Before, now)
		}
	}
	if !changes[1].Before.Same(changes[0].After) {
		t.Error("a write's Before is not the version the create made")
	}
}
