package memory

// Boundary tests found by mutation testing (gremlins): each pins a limit or
// an edge exactly at and one past it, so a shifted comparison fails a test.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/logtest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

func TestSummaryLengthLimitExact(t *testing.T) {
	atLimit := strings.Repeat("s", maxSummaryLen)
	if got := FileSummary("# T\n> Summary: " + atLimit + "\n"); got != atLimit {
		t.Errorf("a summary of exactly %d bytes must be kept whole; got %q", maxSummaryLen, got)
	}
	over := atLimit + "t"
	if got := FileSummary("# T\n> Summary: " + over + "\n"); got != strings.Repeat("s", maxSummaryLen-len("…"))+"…" {
		t.Errorf("a summary one byte over must be cut and marked; got %q", got)
	}
	if got := oneLine("a\x7fb", 10); got != "a b" {
		t.Errorf("DEL must read as a space; got %q", got)
	}
}

func TestFileSummaryPrefersFirstTitle(t *testing.T) {
	cases := []struct{ text, want string }{
		{"- a note before the title\n# Project\n", "Project"},
		{"# First\n# Second\n", "First"},
	}
	for _, c := range cases {
		if got := FileSummary(c.text); got != c.want {
			t.Errorf("FileSummary(%q) = %q; want %q", c.text, got, c.want)
		}
	}
}

func TestEpisodeSummaryBudgetExact(t *testing.T) {
	mk := episodesSummarized
	a, b := strings.Repeat("a", 58), strings.Repeat("b", 58)
	// 58 + ", " + 58 + the 2 the budget reserves per part = 120: both fit.
	if got := episodeSummary(mk(a, b)); got != a+", "+b {
		t.Errorf("two summaries filling the budget exactly: got %q", got)
	}
	// One byte more and the older one is left out.
	a1 := a + "a"
	if got := episodeSummary(mk(a1, b)); got != "…, "+b {
		t.Errorf("one byte over the budget: got %q", got)
	}
	// A single summary over the budget is cut, not replaced by "…".
	long := strings.Repeat("z", 150)
	if got := episodeSummary(mk(long)); got != long[:episodeSumBudget-len("…")]+"…" {
		t.Errorf("one long summary: got %q", got)
	}
	// Three parts come out oldest first.
	if got := episodeSummary(mk("x", "y", "z")); got != "x, y, z" {
		t.Errorf("order: got %q", got)
	}
}

func TestPathGrammarCharacterEdges(t *testing.T) {
	// Every edge of [A-Za-z0-9] is in, the byte just outside each is out.
	if _, err := ParsePath("facts/azAZ09-_.md"); err != nil {
		t.Errorf("edge characters refused: %v", err)
	}
	for _, c := range []string{"`", "{", "@", "[", "/", ":"} {
		if _, err := ParsePath("facts/x" + c + "y.md"); err == nil {
			t.Errorf("facts/x%sy.md accepted", c)
		}
	}
	for _, m := range []string{"2026-01", "2026-12", "0000-09", "9999-10"} {
		if _, err := ParsePath("episodes/" + m + ".md"); err != nil {
			t.Errorf("episodes/%s.md refused: %v", m, err)
		}
	}
	for _, m := range []string{"2026-00", "2026-13", "/026-01", ":026-01", "2026-0:", "2026-/1"} {
		if _, err := ParsePath("episodes/" + m + ".md"); err == nil {
			t.Errorf("episodes/%s.md accepted", m)
		}
	}
}

func TestRenderIndexExactFit(t *testing.T) {
	files := []FileInfo{
		{Path: "facts/a.md", Summary: "first " + strings.Repeat("a", 60), Size: 10},
		{Path: "facts/b.md", Summary: "second " + strings.Repeat("b", 60), Size: 20},
		{Path: "episodes/2026-02.md", Summary: "third " + strings.Repeat("c", 60), Size: 30},
	}
	// Each line is longer than the "more files not shown" line the index
	// keeps room for, so with the exact budget every file fits.
	full := RenderIndex(files, 1<<20)
	if got := RenderIndex(files, len(full)); got != full {
		t.Errorf("an index that fits its budget exactly must be whole:\n%s\nwant:\n%s", got, full)
	}
	got := RenderIndex(files, len(full)-1)
	if len(got) > len(full)-1 || !strings.Contains(got, "- (1 more file not shown; see memory_list)") || !strings.Contains(got, "facts/b.md") {
		t.Errorf("one byte short, the last file must be the one left out:\n%s", got)
	}
	one := files[:1]
	if full := RenderIndex(one, 1<<20); RenderIndex(one, len(full)) != full {
		t.Errorf("one file fitting exactly: %q", RenderIndex(one, len(full)))
	}
}

func TestCapTextEdges(t *testing.T) {
	text := strings.Repeat("x", 50)
	if got := capText(text, 50); got != text {
		t.Errorf("text of exactly the cap must be whole; got %q", got)
	}
	if got := capText(text, 49); !strings.HasPrefix(got, text[:49]+"\n[mnemo: the file is 50 bytes; only the first 49 are shown, 1 bytes were left out]") {
		t.Errorf("text one byte over the cap: %q", got)
	}
	// No line break at all: cut at the cap.
	if got := capText("abcdef", 3); got != "abc\n[mnemo: the file is 6 bytes; only the first 3 are shown, 3 bytes were left out]" {
		t.Errorf("no line break: %q", got)
	}
	// A line break up to 1024 bytes before the cut is preferred; one further back is not.
	cut := 2000
	near := strings.Repeat("a", cut-1024) + "\n" + strings.Repeat("b", 2000)
	if got := capText(near, cut); !strings.HasPrefix(got, strings.Repeat("a", cut-1024)+"\n\n[mnemo:") {
		t.Errorf("line break 1024 bytes back not used: %q", got[:80])
	}
	far := strings.Repeat("a", cut-1025) + "\n" + strings.Repeat("b", 2000)
	if got := capText(far, cut); !strings.HasPrefix(got, far[:cut]+"\n[mnemo:") {
		t.Errorf("line break 1025 bytes back used: %q", got[:80])
	}
	// Text that is not UTF-8 (a file written by hand) is cut without a panic.
	if got := capText("\x80\x80\x80\x80x", 2); !strings.HasPrefix(got, "\n[mnemo: the file is 5 bytes; only the first 0") {
		t.Errorf("invalid UTF-8: %q", got)
	}
	if got := truncate("\x80\x80\x80\x80\x80", 4); got != "…" {
		t.Errorf("truncate invalid UTF-8: %q", got)
	}
}

func TestPreloadBudgetExact(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	if facts, eps, err := u.NewSession().Preload(-1); err != nil || facts != "none yet" || eps != "none yet" {
		t.Fatalf("empty preload with a negative budget = %q %q %v", facts, eps, err)
	}
	work := "# Work\n\n> Summary: job\n\n- Go dev\n"
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(t, filepath.Join(dir, "facts/user.md"), userFact)
	writeFile(t, filepath.Join(dir, "facts/work.md"), work)
	eventually(t, "files listed", func() bool { l, _ := u.List(); return len(l) == 2 })
	total := len(userFact) + len(work)
	facts, _, err := u.NewSession().Preload(total)
	if err != nil || !strings.Contains(facts, "- Go dev") || strings.Contains(facts, "pre-loaded") {
		t.Errorf("facts of exactly the budget must be pre-loaded in full: %q %v", facts, err)
	}
	facts, _, err = u.NewSession().Preload(total - 1)
	if err != nil || strings.Contains(facts, "- Go dev") || !strings.Contains(facts, fmt.Sprintf("hold more than the %d bytes", total-1)) {
		t.Errorf("facts one byte over the budget must be indexed: %q %v", facts, err)
	}
}

// A user folder without facts/ or episodes/ yet is watched: the missing
// subfolders are no reason to warn or to fall back to rescanning.
func TestWatchUserWithoutSubfolders(t *testing.T) {
	var logs logtest.Buffer
	dir := filepath.Join(t.TempDir(), "memory")
	if err := os.MkdirAll(filepath.Join(dir, "bob"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, func(o *Options) {
		o.Dir = dir
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if s.w == nil {
		t.Fatal("watching unavailable")
	}
	if mustUser(t, s, "bob").idx.unwatched {
		t.Error("a user folder without subfolders fell back to rescanning")
	}
	if got := logs.String(); strings.Contains(got, "WARN") {
		t.Errorf("warned although watching works:\n%s", got)
	}
}

// A subfolder that cannot be watched (here a symlink loop) makes that
// user's index rescan on every List, with a warning.
func TestWatchUserSubfolderFails(t *testing.T) {
	var logs logtest.Buffer
	dir := filepath.Join(t.TempDir(), "memory")
	if err := os.MkdirAll(filepath.Join(dir, "bob"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("facts", filepath.Join(dir, "bob", "facts")); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, func(o *Options) {
		o.Dir = dir
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if !mustUser(t, s, "bob").idx.unwatched {
		t.Error("an unwatchable subfolder did not make the index rescan")
	}
	if got := logs.String(); !strings.Contains(got, "cannot watch user folder") || !strings.Contains(got, "user=bob") {
		t.Errorf("no warning naming the user:\n%s", got)
	}
}

// facts/ and episodes/ made by hand after Open are watched from then on:
// a file written into either later shows in List.
func TestSubfoldersCreatedLaterAreWatched(t *testing.T) {
	for _, sub := range []string{factsDir, episodesDir} {
		t.Run(sub, func(t *testing.T) {
			s := newStore(t)
			u := mustUser(t, s, "alice")
			udir := filepath.Join(s.Dir(), "alice")
			other := episodesDir
			if sub == episodesDir {
				other = factsDir
			}
			// The other subfolder first: once a file written there after a
			// List shows, the user folder is watched.
			if err := os.MkdirAll(filepath.Join(udir, other), 0o700); err != nil {
				t.Fatal(err)
			}
			listPaths(t, u)
			marker := map[string]string{factsDir: "facts/m%d.md", episodesDir: "episodes/2026-0%d.md"}[other]
			writeFile(t, filepath.Join(udir, fmt.Sprintf(marker, 1)), "# M\n\n> Summary: marker\n")
			eventually(t, "first marker listed", func() bool { return strings.Contains(listPaths(t, u), fmt.Sprintf(marker, 1)) })
			if err := os.Mkdir(filepath.Join(udir, sub), 0o700); err != nil {
				t.Fatal(err)
			}
			// Events are handled in order: once the second marker shows,
			// the Create of sub has been handled.
			writeFile(t, filepath.Join(udir, fmt.Sprintf(marker, 2)), "# M\n\n> Summary: marker\n")
			eventually(t, "second marker listed", func() bool { return strings.Contains(listPaths(t, u), fmt.Sprintf(marker, 2)) })
			target := map[string]string{factsDir: "facts/late.md", episodesDir: "episodes/2026-03.md"}[sub]
			writeFile(t, filepath.Join(udir, target), "# L\n\n> Summary: late\n")
			eventually(t, target+" listed", func() bool { return strings.Contains(listPaths(t, u), target+"=late") })
		})
	}
}

func TestOpenWarnsOnlyWhenWatchingFails(t *testing.T) {
	var logs logtest.Buffer
	newStore(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	if got := logs.String(); strings.Contains(got, "unavailable") {
		t.Errorf("warned that watching is unavailable although it works:\n%s", got)
	}
}

// fact returns a valid fact file of exactly n bytes.
func fact(t *testing.T, n int) string {
	t.Helper()
	head := "# T\n\n> Summary: s\n\n"
	if n < len(head)+1 {
		t.Fatalf("fact of %d bytes is too short", n)
	}
	return head + strings.Repeat("x", n-len(head)-1) + "\n"
}

func TestWriteCapExact(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 200 })
	u := mustUser(t, s, "alice")
	if _, err := u.Write("facts/a.md", fact(t, 200), nil, nil); err != nil {
		t.Errorf("a fact of exactly the write cap = %v", err)
	}
	if _, err := u.Write("facts/b.md", fact(t, 201), nil, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a fact one byte over the write cap = %v", err)
	}
}

func TestAppendEntryCapExact(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 200 })
	u := mustUser(t, s, "alice")
	entry := func(n int) string {
		e := "## T\n- Summary: s\n- Date: 2026-02-01\n"
		return e + strings.Repeat("x", n-len(e)-1) + "\n"
	}
	if _, err := u.Append("episodes/2026-02.md", entry(200), "", nil); err != nil {
		t.Errorf("an entry of exactly the write cap = %v", err)
	}
	if _, err := u.Append("episodes/2026-02.md", entry(201), "", nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an entry one byte over the write cap = %v", err)
	}
}

func TestPatchCapEdges(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 200 })
	u := mustUser(t, s, "alice")
	patch := func(p, old, new string) error {
		t.Helper()
		d, err := u.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Patch(p, []Patch{{OldText: old, NewText: new}}, &d.Version, nil)
		return err
	}
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/a.md"), fact(t, 190))
	if err := patch("facts/a.md", "> Summary: s", "> Summary: s"+strings.Repeat("y", 10)); err != nil {
		t.Errorf("a patch growing the file to exactly the cap = %v", err)
	}
	if err := patch("facts/a.md", "> Summary: s", "> Summary: sz"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a patch growing the file one byte past the cap = %v", err)
	}
	// A file over the cap (written by hand) may be patched as long as it
	// does not grow.
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/big.md"), fact(t, 300))
	if err := patch("facts/big.md", "> Summary: s", "> Summary: t"); err != nil {
		t.Errorf("a same-size patch of a file over the cap = %v", err)
	}
	if err := patch("facts/big.md", "> Summary: t", "> Summary: tt"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a growing patch of a file over the cap = %v", err)
	}
}

func TestAppendFileCapExact(t *testing.T) {
	entry := "## T\n- Summary: s\n- Date: 2026-02-01\n"
	head := "# 2026-02 Episodes\n\n> Summary: x\n\n## Old\n- Summary: old\n- Date: 2026-02-01\n"
	// The appended file is the old text (its final "\n" kept), a blank
	// line, then the entry; the explicit summary "x" keeps the summary
	// line's length, so the file is len(old)+1+len(entry) bytes.
	for _, over := range []int{0, 1} {
		s := newStore(t)
		u := mustUser(t, s, "alice")
		fill := maxEpisodeFile + over - len(head) - 1 - len(entry)
		old := head + strings.Repeat("y", fill-1) + "\n"
		writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md"), old)
		_, err := u.Append("episodes/2026-02.md", entry, "x", nil)
		switch {
		case over == 0 && err != nil:
			t.Errorf("an append making the file exactly %d bytes = %v", maxEpisodeFile, err)
		case over == 0:
			if got := readFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md")); len(got) != maxEpisodeFile {
				t.Errorf("file is %d bytes; want %d", len(got), maxEpisodeFile)
			}
		case !errors.Is(err, ErrTooLarge):
			t.Errorf("an append making the file one byte over = %v", err)
		}
	}
}

// A file that changes between every read and rename is retried exactly
// conflictRetries times, then refused: a write never loops for ever.
func TestWriteRetriesAreBounded(t *testing.T) {
	var mu sync.Mutex
	edits := 0
	var s *Store
	s = newStore(t, func(o *Options) {
		o.Faults = func(op, name string) error {
			if op != durable.Write || !strings.HasPrefix(name, "episodes/.2026-02.md") {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if edits < 20 { // a person saving again and again, then stopping
				edits++
				writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md"), fmt.Sprintf("# 2026-02 Episodes\n\n> Summary: edit %d\n", edits))
			}
			return nil
		}
	})
	u := mustUser(t, s, "alice")
	_, err := u.Append("episodes/2026-02.md", "## T\n- Summary: s\n- Date: 2026-02-01\n", "", nil)
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "during the write") {
		t.Errorf("append racing a person on every try = %v", err)
	}
	if edits != conflictRetries {
		t.Errorf("tried %d times; want %d", edits, conflictRetries)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md")); !strings.Contains(got, fmt.Sprintf("edit %d", edits)) || strings.Contains(got, "## T") {
		t.Errorf("the person's last save must stay as it is: %q", got)
	}
}

// stepClock is an Options.Now whose n-th call returns at(n) (1-based).
type stepClock struct {
	mu sync.Mutex
	n  int
	at func(n int) time.Time
}

// NewTimer fires at once: the clock's readings, not real time, pace the
// waits under test.
func (c *stepClock) NewTimer(time.Duration) clock.Timer { return clock.Real{}.NewTimer(0) }

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.at(c.n)
}

// An episode file left empty (a save in place under way) is waited for up
// to EditWait and not a poll longer.
func TestEmptyFileWaitEndsAtEditWait(t *testing.T) {
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	overshot := false
	clock := &stepClock{at: func(n int) time.Time {
		switch {
		case n <= 2: // the editor check, then the first sight of the empty file
			return t0
		case n <= 50:
			return t0.Add(time.Second) // exactly EditWait later
		}
		overshot = true
		return t0.Add(time.Hour)
	}}
	s := newStore(t, func(o *Options) { o.EditWait = time.Second; o.Clock = clock })
	u := mustUser(t, s, "alice")
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md"), "")
	_, err := u.Append("episodes/2026-02.md", "## T\n- Summary: s\n- Date: 2026-02-01\n", "", nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "empty on disk") {
		t.Errorf("append to a file that stays empty = %v", err)
	}
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if overshot {
		t.Error("kept waiting after EditWait had passed")
	}
}

// Waiting for an empty file to fill does not use up the retries a write
// has when the file then changes under it.
func TestEmptyWaitKeepsConflictRetries(t *testing.T) {
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var s *Store
	path := func() string { return filepath.Join(s.Dir(), "alice/episodes/2026-02.md") }
	clock := &stepClock{at: func(n int) time.Time {
		if n == 4 { // the third poll of the empty file: the save completes
			writeFile(t, path(), "# 2026-02 Episodes\n\n> Summary: saved\n")
		}
		return t0.Add(time.Duration(n) * time.Millisecond)
	}}
	raced := false
	s = newStore(t, func(o *Options) {
		o.Clock = clock
		o.EditWait = time.Hour
		o.Faults = func(op, name string) error {
			if op == durable.Write && !raced { // and the person saves once more during our write
				raced = true
				writeFile(t, path(), "# 2026-02 Episodes\n\n> Summary: saved again\n")
			}
			return nil
		}
	})
	u := mustUser(t, s, "alice")
	writeFile(t, path(), "")
	if _, err := u.Append("episodes/2026-02.md", "## T\n- Summary: s\n- Date: 2026-02-01\n", "", nil); err != nil {
		t.Fatalf("append after an empty wait and one race = %v", err)
	}
	if got := readFile(t, path()); !strings.Contains(got, "## T") || !strings.HasPrefix(got, "# 2026-02 Episodes\n\n> Summary: s\n") {
		t.Errorf("file = %q", got)
	}
}

// With EditWait unset, a write waits (the default) 3 s for an editor to
// close: an editor that closes 3 s less a nanosecond later is waited for.
func TestDefaultEditWait(t *testing.T) {
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var s *Store
	swap := func() string { return filepath.Join(s.Dir(), "alice/facts/.a.md.swp") }
	clock := &stepClock{at: func(n int) time.Time {
		if n == 1 {
			return t0
		}
		if n == 2 { // the editor closes
			if err := os.Remove(swap()); err != nil {
				t.Error(err)
			}
		}
		return t0.Add(3*time.Second - 1)
	}}
	s = newStore(t, func(o *Options) { o.EditWait = 0; o.Clock = clock })
	u := mustUser(t, s, "alice")
	writeFile(t, swap(), "vim")
	if _, err := u.Write("facts/a.md", fact(t, 50), nil, nil); err != nil {
		t.Errorf("write while an editor closes within the default wait = %v", err)
	}
}

// The version a write returns is the file's version as Version reports it,
// inode included, and the user's folder handle is kept, not reopened.
func TestWriteVersionAndFolderHandle(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	v, err := u.Write("facts/a.md", fact(t, 50), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := u.Version("facts/a.md")
	if err != nil || cur != v || v.Ino == 0 {
		t.Errorf("Write returned %+v; Version says %+v, %v", v, cur, err)
	}
	r1, f1, err1 := u.openRoot(false)
	f1.release()
	r2, f2, err2 := u.openRoot(false)
	f2.release()
	if err1 != nil || err2 != nil || r1 != r2 {
		t.Errorf("the folder handle was reopened: %p %p %v %v", r1, r2, err1, err2)
	}
}

func TestListResultExactFit(t *testing.T) {
	// Each entry is longer than the listOmitted entry the list keeps room
	// for, so with the exact budget every file fits.
	files := []FileInfo{
		{Path: "facts/a.md", Summary: "first " + strings.Repeat("a", 300), Size: 10},
		{Path: "facts/b.md", Summary: "second " + strings.Repeat("b", 300), Size: 20},
		{Path: "episodes/2026-02.md", Summary: "third " + strings.Repeat("c", 300), Size: 30},
	}
	for n := 1; n <= len(files); n++ {
		full := listResult(files[:n], 1<<20)
		if strings.Contains(full, "omitted") {
			t.Fatalf("unbudgeted list: %s", full)
		}
		if got := listResult(files[:n], len(full)); got != full {
			t.Errorf("%d files fitting the budget exactly must all be listed:\n%s", n, got)
		}
		got := listResult(files[:n], len(full)-1)
		if len(got) > len(full)-1 || !strings.Contains(got, `"omitted":1}]`) {
			t.Errorf("%d files, one byte short: the last must be left out:\n%s", n, got)
		}
	}
}

func TestListOmittedNamesOnlyWhatIsLeftOut(t *testing.T) {
	if got := string(omittedEntry(2, 2, 100)); !strings.Contains(got, "Left out: 2 fact files.") || strings.Contains(got, "episode") {
		t.Errorf("only facts left out: %s", got)
	}
	if got := string(omittedEntry(1, 0, 100)); !strings.Contains(got, "Left out: 1 older episode file (episodes/YYYY-MM.md).") || strings.Contains(got, "fact") {
		t.Errorf("only an episode left out: %s", got)
	}
	if got := string(omittedEntry(3, 1, 100)); !strings.Contains(got, "Left out: 1 fact file and 2 older episode files") {
		t.Errorf("both left out: %s", got)
	}
}

// rootWithFile opens, for the test, an os.Root on a new folder holding one
// file.
func rootWithFile(t *testing.T, name, content string) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, name), content)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

// A file that passes the Lstat but cannot be opened, on every try (here:
// no file descriptor left), is tried a bounded number of times, then
// refused with the open's error: a read never loops for ever.
func TestOpenRegularRetriesAreBounded(t *testing.T) {
	_, root := rootWithFile(t, "x.md", "x")
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	restore := sync.OnceFunc(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	})
	defer restore()
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	none := lim
	none.Cur = 0 // every open fails with EMFILE; the Lstat needs no descriptor
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &none); err != nil {
		t.Skipf("cannot lower the open-file limit: %v", err)
	}
	go func() {
		f, _, err := openRegular(root, "x.md")
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		restore()
		if r.f != nil {
			r.f.Close()
		}
		if !errors.Is(r.err, syscall.EMFILE) {
			t.Errorf("openRegular without descriptors = %v; want EMFILE", r.err)
		}
	case <-time.After(10 * time.Second): // a failure bound, not a wait: the answer comes in microseconds
		restore()
		<-done
		t.Fatal("openRegular kept retrying an open that fails every time")
	}
}

// TestOpenNeverFollowsASwappedInLink is TestReadNeverFollowsASwappedInLink
// on openRegular alone, with more tries: the file the open lands on must
// be the one the Lstat checked, also when that one was a plain file and
// the open meets a symlink swapped in since. A stress test: it cannot fail
// when the code is right.
func TestOpenNeverFollowsASwappedInLink(t *testing.T) {
	dir, root := rootWithFile(t, "secret.md", "SECRET")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		plain, link, target := filepath.Join(dir, "plain.tmp"), filepath.Join(dir, "link.tmp"), filepath.Join(dir, "x.md")
		for !stop.Load() {
			os.WriteFile(plain, []byte("plain"), 0o600)
			os.Rename(plain, target)
			os.Symlink("secret.md", link)
			os.Rename(link, target)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	plainOpens := 0
	for i := 0; i < 150000 && plainOpens < 40000; i++ {
		f, _, err := openRegular(root, "x.md")
		if err != nil {
			continue
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err == nil && string(b) == "SECRET" {
			t.Fatalf("open %d landed on the file a swapped-in symlink points to", i)
		}
		plainOpens++
	}
}

// TestGenerationsNeverRepeatAfterALoad: an entry's generation is how the
// history's "as found at start" copy knows the text it read is still the
// entry's (markKept). Entries loaded from the cache and entries read
// later must never share a number, or a file changed after the snapshot
// would be marked kept and its new text never recorded. Which loaded
// entry got which number depends on map order, so each file is changed
// in turn, many times.
func TestGenerationsNeverRepeatAfterALoad(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "ann.idx")
	files := map[string]entry{}
	for _, p := range []string{"facts/a.md", "facts/b.md", "facts/c.md"} {
		files[p] = entry{Summary: p, Size: 1, key: statKey{Size: 1, MTime: 1, Ino: 1}}
	}
	if err := writeCacheFile(nil, cache, encodeCache(files)); err != nil {
		t.Fatal(err)
	}
	for trial := range 32 {
		for p := range files {
			x := newIndex(time.Now, cache)
			x.load()
			x.full = false // scanned, with events arriving
			snap := x.unkept()
			if len(snap) != len(files) {
				t.Fatalf("loaded %d entries, want %d", len(snap), len(files))
			}
			x.put(p, entry{Summary: "changed", Size: 2})
			if x.markKept(p, snap[p]) {
				t.Fatalf("trial %d: %s changed after the snapshot but was marked kept (generations %v)", trial, p, snap)
			}
			for q, gen := range snap {
				if q != p && !x.markKept(q, gen) {
					t.Errorf("trial %d: %s did not change but was not marked kept", trial, q)
				}
			}
		}
	}
}

// TestReadDirNamesClosesTheFolder: listing a folder does not leave its
// descriptor open (a scan runs at every List without a watcher). The
// collector is held off so a finalizer cannot close a leaked one.
func TestReadDirNamesClosesTheFolder(t *testing.T) {
	fds := func() int {
		names, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(names)
	}
	_, root := rootWithFile(t, "a.md", "x")
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := fds()
	for range 64 {
		if names := readDirNames(root, "."); len(names) != 1 || names[0] != "a.md" {
			t.Fatalf("names %q", names)
		}
	}
	if after := fds(); after > before+8 {
		t.Errorf("64 listings left %d descriptors open", after-before)
	}
}
