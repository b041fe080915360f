package memory

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// listEntry is an element of a memory_list result, the last one's
// omitted count included.
type listEntry struct {
	Path    string `json:"path"`
	Summary string `json:"summary"`
	Size    int64  `json:"size"`
	Omitted int    `json:"omitted"`
}

func decodeList(t *testing.T, out string) []listEntry {
	t.Helper()
	var got []listEntry
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("memory_list result is not a JSON array of entries: %v\n%.300s", err, out)
	}
	return got
}

// memory_list of a user with 10,000 files stays within listBudget: facts
// first, then the newest episodes, then an entry saying how many files
// were left out.
func TestMemoryListBudget(t *testing.T) {
	const facts, episodes = 100, 9900
	s := newStore(t, func(o *Options) { o.Watch = false })
	dir := filepath.Join(s.Dir(), "alice")
	for i := range facts {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("facts/topic%03d.md", i)), fmt.Sprintf("# Topic %d\n\n> Summary: what the user said about topic %d\n\n- a fact\n", i, i))
	}
	for i := range episodes {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("episodes/%04d-%02d.md", 1000+i/12, i%12+1)), fmt.Sprintf("# Month %d\n\n> Summary: what happened in month %d\n\n## Something\n", i, i))
	}
	tools := toolMap(ReadTools(mustUser(t, s, "alice").NewSession()))
	out, err := call(t, tools, "memory_list", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > listBudget {
		t.Fatalf("memory_list returned %d bytes, budget %d", len(out), listBudget)
	}
	if len(out) < listBudget-500 {
		t.Errorf("memory_list returned %d bytes: the budget of %d is not used", len(out), listBudget)
	}
	got := decodeList(t, out)
	shown, last := got[:len(got)-1], got[len(got)-1]
	if len(shown) < facts+10 {
		t.Fatalf("only %d files shown", len(shown))
	}
	for i, e := range shown {
		want := fmt.Sprintf("facts/topic%03d.md", i)
		if i >= facts {
			j := episodes - 1 - (i - facts) // newest first
			want = fmt.Sprintf("episodes/%04d-%02d.md", 1000+j/12, j%12+1)
		}
		if e.Path != want || e.Summary == "" || e.Size == 0 || e.Omitted != 0 {
			t.Fatalf("entry %d = %+v; want %s", i, e, want)
		}
	}
	left := facts + episodes - len(shown)
	if last.Path != "" || last.Size != 0 || last.Omitted != left ||
		!strings.Contains(last.Summary, fmt.Sprintf("(%d more files not listed", left)) ||
		!strings.Contains(last.Summary, fmt.Sprintf("Left out: %d older episode files", left)) {
		t.Errorf("last entry %+v; want one saying %d files were left out", last, left)
	}
}

// Within the budget the result is what it always was: the plain array.
func TestMemoryListSmall(t *testing.T) {
	files := []FileInfo{
		{Path: "facts/a.md", Summary: "a <b> & c", Size: 10},
		{Path: "episodes/2026-02.md", Summary: "feb", Size: 20},
	}
	want, _ := json.Marshal(files)
	if got := listResult(files, listBudget); got != string(want) {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got := listResult(nil, listBudget); got != "[]" {
		t.Errorf("no files: %s", got)
	}
}

// Facts are left out too when they alone pass the budget; the counts say
// which kinds; every cut stays within the budget.
func TestMemoryListOmittedCounts(t *testing.T) {
	var files []FileInfo
	for i := range 50 {
		files = append(files, FileInfo{Path: fmt.Sprintf("facts/f%02d.md", i), Summary: strings.Repeat("s", 100), Size: 100})
	}
	files = append(files, FileInfo{Path: "episodes/2026-01.md", Summary: strings.Repeat("e", 200), Size: 5})
	seen := map[int]bool{} // omitted counts met
	for budget := 300; ; budget += 11 {
		out := listResult(files, budget)
		if len(out) > budget {
			t.Fatalf("budget %d: %d bytes", budget, len(out))
		}
		got := decodeList(t, out)
		last := got[len(got)-1]
		if len(got) == len(files) && last.Omitted == 0 {
			break // all fit
		}
		if last.Omitted != len(files)-(len(got)-1) {
			t.Fatalf("budget %d: %d shown, omitted %d", budget, len(got)-1, last.Omitted)
		}
		seen[last.Omitted] = true
		want := fmt.Sprintf("(%d more files not listed: the list is limited to %d bytes. Left out: %s and 1 older episode file (episodes/YYYY-MM.md). memory_read",
			last.Omitted, budget, plural(last.Omitted-1, "fact file"))
		if last.Omitted == 1 {
			want = fmt.Sprintf("(1 more file not listed: the list is limited to %d bytes. Left out: 1 older episode file (episodes/YYYY-MM.md). memory_read", budget)
		}
		if !strings.HasPrefix(last.Summary, want) {
			t.Errorf("budget %d: %s\nwant %s", budget, last.Summary, want)
		}
	}
	if !seen[1] || !seen[2] || !seen[len(files)] {
		t.Errorf("omitted counts met: %v", seen)
	}
}

// The reflector's pre-load does not grow with the memory: each index is
// cut at its budget, the newest episodes and the first facts kept, and a
// last line counts what was left out.
func TestPreloadIndexesBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	for i := range 300 {
		writeFile(t, filepath.Join(dir, "alice", fmt.Sprintf("facts/topic-%03d.md", i)), fmt.Sprintf("# T\n\n> Summary: topic %d\n", i))
		writeFile(t, filepath.Join(dir, "alice", fmt.Sprintf("episodes/%04d-01.md", 1700+i)), fmt.Sprintf("# E\n\n> Summary: year %d\n", 1700+i))
	}
	s := newStore(t, func(o *Options) { o.Dir = dir })
	for _, budget := range []int{100, DefaultIndexBudget, 6000} {
		facts, eps, err := mustUser(t, s, "alice").NewSession().Preload(budget)
		if err != nil {
			t.Fatal(err)
		}
		if limit := max(budget/4, DefaultIndexBudget); len(facts) > limit {
			t.Errorf("budget %d: facts part is %d bytes, over %d", budget, len(facts), limit)
		}
		if len(eps) > DefaultIndexBudget {
			t.Errorf("budget %d: episodes part is %d bytes", budget, len(eps))
		}
		for part, text := range map[string]string{"facts": facts, "episodes": eps} {
			lines := strings.Split(text, "\n")
			shown := strings.Count(text, ".md (")
			if part == "facts" {
				lines = lines[1:] // the note that the facts are indexed
			}
			if want := fmt.Sprintf("- (%d more files not shown; see memory_list)", 300-shown); lines[len(lines)-1] != want {
				t.Errorf("budget %d: %s ends %q, want %q", budget, part, lines[len(lines)-1], want)
			}
			if shown < 10 {
				t.Errorf("budget %d: only %d %s shown", budget, shown, part)
			}
		}
		if !strings.HasPrefix(eps, "- episodes/1999-01.md (") || !strings.Contains(facts, "\n- facts/topic-000.md (") {
			t.Errorf("budget %d: not the newest episodes and first facts:\n%s\n%s", budget, facts, eps)
		}
	}
	// One file over the budget on its own is still shown.
	if got := boundedIndexOf([]FileInfo{{Path: "facts/a.md", Summary: "a"}, {Path: "facts/b.md", Summary: "b"}}, 1); got != "- facts/a.md (0B): a\n- (1 more file not shown; see memory_list)" {
		t.Errorf("tiny budget = %q", got)
	}
	if got := boundedIndexOf([]FileInfo{{Path: "facts/a.md", Summary: "a"}}, 1); got != "- facts/a.md (0B): a" {
		t.Errorf("one file = %q", got)
	}
	// The last file needs no room kept for a "more files" line: two files
	// whose lines just fit are both shown, one byte less and the second
	// is not.
	two := []FileInfo{{Path: "facts/a.md", Summary: "a"}, {Path: "facts/b.md", Summary: "b"}}
	both := "- facts/a.md (0B): a\n- facts/b.md (0B): b"
	if got := boundedIndexOf(two, len(both)); got != both {
		t.Errorf("a budget both just fit in = %q", got)
	}
	if got := boundedIndexOf(two, len(both)-1); got != "- facts/a.md (0B): a\n- (1 more file not shown; see memory_list)" {
		t.Errorf("a byte less = %q", got)
	}
}

// listResultExact is listResult as it was before its shortcut: the exact
// omitted entry computed for every file. The two must agree everywhere.
func listResultExact(files []FileInfo, budget int) string {
	facts := 0
	for _, f := range files {
		if strings.HasPrefix(f.Path, factsDir+"/") {
			facts++
		}
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, f := range files {
		entry, _ := json.Marshal(f)
		room := budget - b.Len() - len("]")
		if i > 0 {
			room--
		}
		if rest := len(files) - i - 1; rest > 0 {
			room -= len(",") + len(omittedEntry(rest, max(facts-i-1, 0), budget))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		if len(entry) > room {
			b.Write(omittedEntry(len(files)-i, max(facts-i, 0), budget))
			break
		}
		b.Write(entry)
	}
	b.WriteByte(']')
	return b.String()
}

func TestListResultShortcutExact(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 9, 10, 11, 12, 99, 100, 101, 150} {
		for _, facts := range []int{0, 1, 2, n / 2, n} {
			if facts > n {
				continue
			}
			var files []FileInfo
			for i := range n {
				p := fmt.Sprintf("episodes/%04d-01.md", 2999-i)
				if i < facts {
					p = fmt.Sprintf("facts/f%03d.md", i)
				}
				files = append(files, FileInfo{Path: p, Summary: strings.Repeat("s", i*7%40), Size: int64(i * 97)})
			}
			for budget := 2; budget < 6000; budget += 37 {
				if got, want := listResult(files, budget), listResultExact(files, budget); got != want {
					t.Fatalf("%d files (%d facts), budget %d:\n got %s\nwant %s", n, facts, budget, got, want)
				}
			}
		}
	}
}

// TestPreloadFactIndexQuarterBudget: past the facts budget the fact
// index, its heading included, takes just under a quarter of the budget
// and never more, whatever the lengths: one summary grows a byte at a
// time over more than a line's length, so some length fills the index to
// the byte.
func TestPreloadFactIndexQuarterBudget(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	for i := 1; i < 300; i++ {
		writeFile(t, filepath.Join(dir, "alice", fmt.Sprintf("facts/topic-%03d.md", i)), fmt.Sprintf("# T\n\n> Summary: topic %d\n\n%s\n", i, strings.Repeat("x", 100)))
	}
	exact := false
	for pad := range 64 {
		writeFile(t, filepath.Join(dir, "alice", "facts/topic-000.md"), fmt.Sprintf("# T\n\n> Summary: topic %s\n\n%s\n", strings.Repeat("0", pad+1), strings.Repeat("x", 100)))
		s := newStore(t, func(o *Options) { o.Dir = dir })
		facts, _, err := mustUser(t, s, "alice").NewSession().Preload(24000)
		if err != nil {
			t.Fatal(err)
		}
		if len(facts) > 6000 || len(facts) < 6000-200 {
			t.Fatalf("summary padded by %d: the fact index is %d bytes, want just under 6000 (a quarter of the budget)", pad, len(facts))
		}
		if !strings.HasPrefix(facts, "(The fact files hold") {
			t.Fatalf("not an index:\n%.200s", facts)
		}
		exact = exact || len(facts) == 6000
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !exact {
		t.Error("no length filled the index to the byte: the test does not reach the boundary")
	}
}

// A channel's fact files count as fact files in what memory_list says it
// left out, like the speaker's.
func TestListResultCountsChannelFacts(t *testing.T) {
	var files []FileInfo
	for i := range 300 {
		files = append(files, FileInfo{Path: fmt.Sprintf("channel/facts/decision-%03d.md", i), Summary: strings.Repeat("x", 60), Size: 100})
	}
	out := listResult(files, listBudget)
	if !strings.Contains(out, "fact file") || strings.Contains(out, "older episode file") {
		t.Errorf("left-out note: %s", out[strings.LastIndex(out, "{"):])
	}
}

// boundedIndexOf is boundedIndex of a slice.
func boundedIndexOf(files []FileInfo, budget int) string {
	return boundedIndex(len(files), func(i int) FileInfo { return files[i] }, budget)
}
