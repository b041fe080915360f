package userdata

import (
	"path/filepath"
	"slices"
	"testing"
)

// A person's topics: their newest episode titles first, their fact
// titles (a name without a title, never facts/user.md), at most n each,
// from their own folder only — never a channel's.
func TestTopics(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Dir(w.state)
	put(t, filepath.Join(dir, "memory", "alice", "facts", "user.md"), "# Alice herself\n> Summary: name\n\n- Alice.\n")
	put(t, filepath.Join(dir, "memory", "alice", "facts", "project_atlas-plan.md"), "> Summary: no title\n\n- Ships in May.\n")
	put(t, filepath.Join(dir, "memory", "alice", "episodes", "2026-10.md"),
		"# Episodes 2026-10\n> Summary: old\n\n## Set up CI\n- Date: 2026-10-02\n\n## Older work\n- Date: 2026-10-01\n")
	// A roll-up is no topic: neither a fact file nor entries.
	put(t, filepath.Join(dir, "memory", "alice", "episodes", "2026-Q1.md"), "# 2026-Q1 Roll-up\n> Summary: q\n\n- Work ([2026-01 § Work](2026-01.md#work))\n")
	svc := w.offline()
	for _, c := range []struct {
		n             int
		recent, facts []string
	}{
		{2, []string{"Set up CI", "Fixed the flaky test"}, []string{"Alice", "project atlas plan"}},
		{1, []string{"Set up CI"}, []string{"Alice"}},
		{5, []string{"Set up CI", "Fixed the flaky test", "Older work"}, []string{"Alice", "project atlas plan"}},
	} {
		recent, facts, err := svc.Topics("alice", c.n)
		if err != nil || !slices.Equal(recent, c.recent) || !slices.Equal(facts, c.facts) {
			t.Errorf("Topics(alice, %d) = %q, %q, %v; want %q, %q", c.n, recent, facts, err, c.recent, c.facts)
		}
	}
	if recent, facts, err := svc.Topics("nobody", 2); len(recent)+len(facts) != 0 || err != nil {
		t.Errorf("Topics of a new person = %q, %q, %v", recent, facts, err)
	}
	if _, _, err := svc.Topics(chanKey, 2); err == nil {
		t.Error("a channel's memory gave topics")
	}
	put(t, filepath.Join(dir, "memory", "bob"), "a file where a folder belongs")
	if _, _, err := svc.Topics("bob", 2); err == nil {
		t.Error("an unreadable memory gave topics")
	}
}
