package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// topic is the text of fact file k with summary s.
// countChecked counts the entries checked against the disk since a start
// (entry.checked). x.mu is held.
func countChecked(x *index) int {
	n := 0
	for _, e := range x.files {
		if e.checked {
			n++
		}
	}
	return n
}

func topic(k int, s string) string {
	return fmt.Sprintf("# Topic %03d\n\n> Summary: %s\n\n- note\n", k, s)
}

// editInPlace rewrites name as an editor saving in place does
// (truncate, write): its folder does not change.
func editInPlace(t *testing.T, name, text string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
	old := time.Now().Add(-30 * time.Minute) // past racySlack, unlike the cached time
	os.Chtimes(name, old, old)
}

// A start with an index cache shows the index after checking only the
// files it shows (not one stat per file), and still never shows a stale
// summary: edits made while mnemo was stopped — in place, files created,
// deleted — are in the first index; an edit to a file past it is in the
// first List, which checks the rest.
func TestIndexStartChecksOnlyWhatItShows(t *testing.T) {
	const files = 1000
	dir, cache := cacheDirs(t)
	facts := filepath.Join(dir, "alice", "facts")
	for k := range files {
		writeAged(t, filepath.Join(facts, fmt.Sprintf("topic-%03d.md", k)), topic(k, fmt.Sprintf("topic %03d", k)))
	}
	s := cachedStore(t, dir, cache)
	if n := len(listAll(t, mustUser(t, s, "alice"))); n != files {
		t.Fatalf("first run lists %d files", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// While stopped: a file the index shows and one past it edited in
	// place, one deleted, one created.
	editInPlace(t, filepath.Join(facts, "topic-000.md"), topic(0, "edited while stopped"))
	editInPlace(t, filepath.Join(facts, "topic-999.md"), topic(999, "edited too, past the index"))
	if err := os.Remove(filepath.Join(facts, "topic-001.md")); err != nil {
		t.Fatal(err)
	}
	writeAged(t, filepath.Join(facts, "aaa-new.md"), topic(1000, "created while stopped"))

	s = cachedStore(t, dir, cache)
	u := mustUser(t, s, "alice")
	idx, err := NewView(u, false, nil).Index(DefaultIndexBudget)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"facts/aaa-new.md (", "created while stopped", "facts/topic-000.md (", "edited while stopped", "facts/topic-002.md ("} {
		if !strings.Contains(idx, want) {
			t.Errorf("the first index lacks %q:\n%s", want, idx)
		}
	}
	var shown, more int
	for line := range strings.Lines(idx) {
		if strings.HasPrefix(line, "- facts/") {
			shown++
		}
		fmt.Sscanf(line, "- (%d more files", &more)
	}
	if shown+more != files {
		t.Errorf("the first index counts %d shown + %d more, not the %d files", shown, more, files)
	}
	if strings.Contains(idx, "topic-001") || strings.Contains(idx, "topic 000") {
		t.Errorf("the first index shows a stale entry:\n%s", idx)
	}
	u.idx.mu.Lock()
	lazy, checked := u.idx.lazy, countChecked(u.idx)
	u.idx.mu.Unlock()
	if !lazy || checked > indexLines(DefaultIndexBudget) {
		t.Errorf("the first index checked %d files (lazy %v); at most %d expected", checked, lazy, indexLines(DefaultIndexBudget))
	}

	all := listAll(t, u)
	if len(all) != files {
		t.Fatalf("List after the index: %d files", len(all))
	}
	if got := all[len(all)-1]; got.Path != "facts/topic-999.md" || got.Summary != "edited too, past the index" {
		t.Errorf("List shows %+v, not the edit made while stopped", got)
	}
	if u.idx.lazy {
		t.Error("List left entries unchecked")
	}
}

func listAll(t *testing.T, u *User) []FileInfo {
	t.Helper()
	files, err := u.List()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The cache lists files in List's order, so a start that finds nothing
// changed takes that order as read; an older cache sorted by path (facts,
// then episodes oldest first) is sorted as before.
func TestIndexCacheInListOrder(t *testing.T) {
	files := map[string]entry{}
	for _, p := range []string{"episodes/2025-01.md", "facts/b.md", "episodes/2026-03.md", "facts/a.md", "episodes/2025-12.md"} {
		files[p] = entry{Summary: "s", Size: 1, key: statKey{1, 1, 1}, readAt: 5}
	}
	_, order, err := parseCacheInOrder(encodeCache(files))
	if err != nil {
		t.Fatal(err)
	}
	var want []FileInfo
	for p, e := range files {
		want = append(want, e.info(p))
	}
	sortFiles(want)
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("the cache's order %v, List's %v", order, want)
	}
	// Path order, as version 2 caches before this one wrote it.
	var b strings.Builder
	b.WriteString(cacheMagicV2)
	for _, p := range []string{"episodes/2025-01.md", "episodes/2025-12.md", "facts/a.md"} {
		fmt.Fprintf(&b, "%q 1 1 1 5 0 \"s\"\n", p)
	}
	fmt.Fprintf(&b, "end 3 %08x\n", crc32IEEE([]byte(b.String())))
	got, order, err := parseCacheInOrder([]byte(b.String()))
	if err != nil || len(got) != 3 || order != nil {
		t.Errorf("a cache in path order: %d files, order %v, %v", len(got), order, err)
	}
}

// The history's baseline (KeepEach) checks a start's unchecked entries a
// chunk at a time and stops when told, rather than checking every file
// of a chat that is already ending; unstopped, it checks them all.
func TestKeepEachStopsCheckingWhenTold(t *testing.T) {
	const files = 3 * checkChunk
	dir, cache := cacheDirs(t)
	for k := range files {
		writeAged(t, filepath.Join(dir, "alice", "facts", fmt.Sprintf("topic-%03d.md", k)), topic(k, "t"))
	}
	s := cachedStore(t, dir, cache)
	listAll(t, mustUser(t, s, "alice"))
	s.Close()
	s = cachedStore(t, dir, cache)
	u := mustUser(t, s, "alice")
	if _, err := NewView(u, false, nil).Index(DefaultIndexBudget); err != nil {
		t.Fatal(err)
	}
	calls := 0
	n, err := u.KeepEach(func() bool { calls++; return calls > 1 }, func(string, []byte) error { return nil })
	u.idx.mu.Lock()
	lazy, checked := u.idx.lazy, countChecked(u.idx)
	u.idx.mu.Unlock()
	if n != 0 || err != nil || !lazy || checked > indexLines(DefaultIndexBudget)+checkChunk {
		t.Errorf("a stopped KeepEach marked %d (%v) and checked %d files (lazy %v)", n, err, checked, lazy)
	}
	if n, err := u.KeepEach(func() bool { return false }, func(string, []byte) error { return nil }); n != files || err != nil || u.idx.lazy {
		t.Errorf("KeepEach marked %d of %d (%v), lazy %v", n, files, err, u.idx.lazy)
	}
	// Before any List (serve's and chat's baseline starts with them): it
	// starts the index from the cache as a List would, not by a rescan
	// of every file.
	s.Close()
	s = cachedStore(t, dir, cache)
	u = mustUser(t, s, "alice")
	calls = 0
	u.KeepEach(func() bool { calls++; return calls > 1 }, func(string, []byte) error { return nil })
	u.idx.mu.Lock()
	lazy, checked = u.idx.lazy, countChecked(u.idx)
	u.idx.mu.Unlock()
	if !lazy || checked > checkChunk {
		t.Errorf("a KeepEach stopped after a chunk, first at a start, checked %d files (lazy %v)", checked, lazy)
	}
}

// An index of no budget is one of the default's; a folder that could not
// be opened has no descriptor to stat against (every entry is re-read).
func TestIndexLinesAndNoFolder(t *testing.T) {
	if indexLines(0) != indexLines(DefaultIndexBudget) || indexLines(20) != 2 {
		t.Errorf("indexLines: %d for no budget, %d for 20 bytes", indexLines(0), indexLines(20))
	}
	root, err := os.OpenRoot(t.TempDir()) // no facts/, no episodes/
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	x := newIndex(time.Now, "")
	paths := []string{"facts/a.md", "episodes/2026-01.md"}
	for _, p := range paths {
		x.files[p] = entry{key: statKey{1, 1, 1}, readAt: 1 << 62}
	}
	if got := x.staleOf(root, paths); len(got) != 2 {
		t.Errorf("without their folders, untrusted: %v", got)
	}
}

// A reflection's pre-load after a start from the cache checks only the
// files it shows (not one stat per file), and shows edits made while
// mnemo was stopped: in the facts' index past the budget, in the facts'
// text within it (a file shrunk while stopped brings the facts within
// the budget), and in the episodes' index.
func TestPreloadChecksOnlyWhatItShows(t *testing.T) {
	const files = 1000
	dir, cache := cacheDirs(t)
	facts := filepath.Join(dir, "alice", "facts")
	for k := range files {
		writeAged(t, filepath.Join(facts, fmt.Sprintf("topic-%03d.md", k)), topic(k, fmt.Sprintf("topic %03d", k)))
	}
	writeAged(t, filepath.Join(dir, "alice", "episodes", "2026-01.md"), "# January\n\n> Summary: jan\n")
	s := cachedStore(t, dir, cache)
	listAll(t, mustUser(t, s, "alice"))
	s.Close()

	editInPlace(t, filepath.Join(facts, "topic-000.md"), topic(0, "edited while stopped"))
	if err := os.Remove(filepath.Join(facts, "topic-001.md")); err != nil {
		t.Fatal(err)
	}
	writeAged(t, filepath.Join(facts, "aaa-new.md"), topic(1000, "created while stopped"))
	editInPlace(t, filepath.Join(dir, "alice", "episodes", "2026-01.md"), "# January\n\n> Summary: jan, edited while stopped\n")
	s = cachedStore(t, dir, cache)
	u := mustUser(t, s, "alice")
	f, eps, err := NewView(u, false, nil).Preload(16384)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"more than the 16384 bytes", "created while stopped", "facts/topic-000.md (", "edited while stopped"} {
		if !strings.Contains(f, want) {
			t.Errorf("the pre-loaded facts lack %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "topic-001") || strings.Contains(f, "topic 000") {
		t.Errorf("the pre-loaded facts show a stale entry:\n%s", f)
	}
	if eps != "- episodes/2026-01.md (48B): jan, edited while stopped" {
		t.Errorf("the pre-loaded episodes = %q", eps)
	}
	u.idx.mu.Lock()
	lazy, checked := u.idx.lazy, countChecked(u.idx)
	u.idx.mu.Unlock()
	if !lazy || checked > 2*indexLines(16384/4)+indexLines(DefaultIndexBudget) {
		t.Errorf("the pre-load checked %d files (lazy %v)", checked, lazy)
	}
	s.Close()

	// While stopped, all but two facts shrink to nothing (in place, the
	// folder unchanged): the cached sizes pass the budget, the files do
	// not, so their text is pre-loaded, as read now.
	for k := 2; k < files; k++ {
		editInPlace(t, filepath.Join(facts, fmt.Sprintf("topic-%03d.md", k)), "")
	}
	s = cachedStore(t, dir, cache)
	u = mustUser(t, s, "alice")
	f, _, err = NewView(u, false, nil).Preload(16384)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f, "more than the") || !strings.Contains(f, "### facts/topic-000.md\n"+topic(0, "edited while stopped")) || !strings.Contains(f, "created while stopped") {
		t.Errorf("facts within the budget are not pre-loaded as they are now:\n%.600s", f)
	}
	s.Close()
}
