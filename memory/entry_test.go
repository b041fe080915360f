package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// An entry keeps its summary only, never the start of the file it was
// read from: a one-word summary is a substring of that text, and kept as
// such it would hold up to 16 KB per file for as long as the entry lives.
func TestEntryKeepsOnlyItsSummary(t *testing.T) {
	head := "# Prefs\n\n> Summary: preferences\n\n" + strings.Repeat("- a fact\n", 1000)
	e := fileEntry(head, int64(len(head)), statKey{}, 0)
	if e.Summary != "preferences" || e.Size != int64(len(head)) || e.Shared {
		t.Fatalf("entry %+v", e)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(head)))
	if p := uintptr(unsafe.Pointer(unsafe.StringData(e.Summary))); p >= start && p < start+uintptr(len(head)) {
		t.Error("the summary points into the file's text")
	}
	if e := fileEntry(SetVisibility(head, true), 1, statKey{}, 0); !e.Shared {
		t.Error("a shared file's entry is not shared")
	}
}

// A change edits the sorted list in place (a copy with the file put in or
// taken out), many changes at once make it again: either way the list is
// the one a full sort of the entries gives, in a new slice with a new
// version, and a list given out is never modified.
func TestListEditedInPlace(t *testing.T) {
	x := newIndex(time.Now, "")
	x.full = false // as after the first scan, with events arriving
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"facts/a.md", "facts/b.md", "facts/m.md", "facts/z.md", "episodes/2026-01.md", "episodes/2026-02.md", "episodes/2025-12.md"}
	want := func() []FileInfo {
		var out []FileInfo
		for p, e := range x.files {
			out = append(out, e.info(p))
		}
		sortFiles(out)
		return out
	}
	prev := x.list(nil)
	for step := range 500 {
		x.mu.Lock()
		n := 1 + rng.IntN(3)
		if rng.IntN(4) == 0 {
			n += 2 * maxEdits // now and then more than maxEdits: made again
		}
		for range n {
			p := paths[rng.IntN(len(paths))]
			if rng.IntN(3) == 0 {
				x.drop(p)
			} else {
				x.put(p, entry{Summary: fmt.Sprint("s", rng.IntN(4)), Size: int64(rng.IntN(3))})
			}
		}
		x.mu.Unlock()
		l := x.list(nil)
		if !slices.Equal(l.files, want()) {
			t.Fatalf("step %d: list %v\nwant %v", step, l.files, want())
		}
		changed := !slices.Equal(l.files, prev.files)
		if changed && (l.ver == prev.ver || (len(l.files) > 0 && len(prev.files) > 0 && &l.files[0] == &prev.files[0])) {
			t.Fatalf("step %d: a changed list kept its version or slice", step)
		}
		if !slices.Equal(prev.files, prevCopy(prev)) {
			t.Fatalf("step %d: a list given out was modified", step)
		}
		prev = withCopy(l)
	}
}

// withCopy keeps a copy of l's files beside it, to tell whether the
// index modified a list it gave out.
var copies = map[*FileInfo][]FileInfo{}

func withCopy(l listing) listing {
	if len(l.files) > 0 {
		copies[&l.files[0]] = slices.Clone(l.files)
	}
	return l
}

func prevCopy(l listing) []FileInfo {
	if len(l.files) == 0 {
		return l.files
	}
	if c, ok := copies[&l.files[0]]; ok {
		return c
	}
	return l.files
}

// A file read again with nothing changed in what List shows of it (an
// event for a save of the same text) keeps the list and its version: the
// views' indexes are not made again.
func TestSameLineKeepsTheList(t *testing.T) {
	x := newIndex(time.Now, "")
	x.full = false
	x.mu.Lock()
	x.put("facts/a.md", entry{Summary: "a", Size: 1})
	x.mu.Unlock()
	before := x.list(nil)
	x.mu.Lock()
	x.put("facts/a.md", entry{Summary: "a", Size: 1, readAt: 5})
	x.mu.Unlock()
	if after := x.list(nil); after.ver != before.ver || &after.files[0] != &before.files[0] {
		t.Error("the same line made a new list")
	}
}
