package userdata

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Home is a person's own files, each fact file's first lines (at most
// homeLines, the rest counted; no title, summary, visibility or stamps)
// and the newest entries (at most homeEntries, newest first); a channel's
// memory or a bad name is refused; no folder is nothing.
func TestHome(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	h, err := svc.Home("alice")
	if err != nil || len(h.Files) != 2 {
		t.Fatalf("Home: %+v, %v", h, err)
	}
	pets, eps := h.Files[0], h.Files[1]
	if pets.Path != "facts/pets.md" || !pets.Fact || !pets.Shared || pets.Summary != "alice's pets" ||
		strings.Join(pets.Lines, "|") != "- Has a cat called Zebra." || pets.MoreLines != 0 {
		t.Errorf("pets: %+v", pets)
	}
	if eps.Path != "episodes/2026-11.md" || eps.Fact || eps.Shared || len(eps.Lines) != 0 {
		t.Errorf("episodes: %+v", eps)
	}
	if got := fmt.Sprint(h.Entries); got != "[{episodes/2026-11.md 2026-11-20 Set up CI } {episodes/2026-11.md 2026-11-03 Fixed the flaky test a race in the cache}]" || h.MoreEntries != 0 {
		t.Errorf("entries %s", got)
	}

	// Many lines and entries: cut, and counted.
	var b strings.Builder
	b.WriteString("# Long\n> Summary: long\n\n")
	for i := range homeLines + 3 {
		fmt.Fprintf(&b, "- line %d <!-- src: slack · 2026-11-0%d -->\n", i, i+1)
	}
	put(t, filepath.Join(w.memDir(), "bob", "facts", "long.md"), b.String())
	put(t, filepath.Join(w.memDir(), "bob", "facts", "empty.md"), "# Empty\n> Summary: nothing yet\n")
	b.Reset()
	b.WriteString("# Episodes\n> Summary: many\n")
	for i := range homeEntries + 4 {
		fmt.Fprintf(&b, "\n## Entry %02d\n- Summary: s\n- Date: 2026-10-%02d\n", i, i+1)
	}
	put(t, filepath.Join(w.memDir(), "bob", "episodes", "2026-10.md"), b.String())
	h, err = svc.Home("bob")
	if err != nil || len(h.Files) != 3 {
		t.Fatalf("bob: %+v, %v", h, err)
	}
	var long, empty = h.Files[1], h.Files[0]
	if long.Path != "facts/long.md" {
		long, empty = empty, long
	}
	if len(long.Lines) != homeLines || long.MoreLines != 3 || long.Lines[0] != "- line 0" || len(empty.Lines) != 0 {
		t.Errorf("long %+v, empty %+v", long, empty)
	}
	if len(h.Entries) != homeEntries || h.MoreEntries != 4 || h.Entries[0].Title != "Entry 13" {
		t.Errorf("entries %+v, %d more", h.Entries, h.MoreEntries)
	}

	for _, user := range []string{chanKey, "../x", ""} {
		if _, err := svc.Home(user); err == nil {
			t.Errorf("Home(%q) answered", user)
		}
		if _, err := svc.SearchHome(user, "cat", 5); err == nil {
			t.Errorf("SearchHome(%q) answered", user)
		}
	}
	if h, err := svc.Home("nobody"); err != nil || len(h.Files) != 0 {
		t.Errorf("nobody: %+v, %v", h, err)
	}
	hits, err := svc.SearchHome("bob", "line", 2)
	if err != nil || len(hits) != 1 || strings.Contains(hits[0].Text, "src:") || hits[0].Path != "facts/long.md" {
		t.Errorf("search: %+v, %v", hits, err)
	}
	if hits, err := svc.SearchHome("alice", "Zebra", 5); err != nil || len(hits) != 1 || hits[0].Path != "facts/pets.md" {
		t.Errorf("search alice: %+v, %v", hits, err)
	}
}

// memDir is the world's memory folder.
func (w *world) memDir() string { return filepath.Join(filepath.Dir(w.state), "memory") }

// A user whose folder cannot be read: an error, for Home and SearchHome.
func TestHomeUnreadable(t *testing.T) {
	w := newWorld(t)
	put(t, filepath.Join(w.memDir(), "broken"), "not a folder")
	svc := w.offline()
	if h, err := svc.Home("broken"); err == nil {
		t.Errorf("Home: %+v", h)
	}
	if hits, err := svc.SearchHome("broken", "x", 5); err == nil {
		t.Errorf("SearchHome: %+v", hits)
	}
}
