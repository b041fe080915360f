package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	janEpisodes = "# 2026-01 Episodes\n\n> Summary: logger fix\n\n## Logger fix\n- Summary: log rotation lost lines → reopen on SIGHUP\n- Date: 2026-01-12\n"
	febEpisodes = "# 2026-02 Episodes\n\n> Summary: CI cache\n\n## CI build cache not restored\n- Summary: cache keyed on go.sum\n- Date: 2026-02-24\n"
	q1Rollup    = "# 2026-Q1 Roll-up\n\n> Summary: logger fix, CI cache\n\n<!-- mnemo-rollup: sources=2026-01.md,2026-02.md sha256=abc -->\n\n- Fixed log rotation ([2026-01 § Logger fix](2026-01.md#logger-fix))\n- Cached CI builds ([2026-02 § CI build cache not restored](2026-02.md#ci-build-cache-not-restored))\n"
)

func TestRollupNames(t *testing.T) {
	for _, c := range []struct {
		p              string
		rollup         bool
		quarter, year  string
		month          string
		monthOK        bool
		wantKey        string
		wantRank       int
		wantKindRollup bool
	}{
		{p: "episodes/2026-02.md", quarter: "episodes/2026-Q1.md", year: "episodes/2026.md", month: "2026-02", monthOK: true, wantKey: "2026-02"},
		{p: "episodes/2026-12.shared.md", quarter: "episodes/2026-Q4.md", year: "episodes/2026.md", month: "2026-12", monthOK: true, wantKey: "2026-12"},
		{p: "episodes/2026-07.md", quarter: "episodes/2026-Q3.md", year: "episodes/2026.md", month: "2026-07", monthOK: true, wantKey: "2026-07"},
		{p: "episodes/2026-Q2.md", rollup: true, year: "episodes/2026.md", wantKey: "2026-06", wantRank: 1},
		{p: "episodes/2026.md", rollup: true, wantKey: "2026-12", wantRank: 2},
		{p: "facts/user.md"},
		{p: "episodes/2026-Q5.md"},
	} {
		if got := IsRollup(c.p); got != c.rollup {
			t.Errorf("IsRollup(%q) = %v", c.p, got)
		}
		if q, y := coverers(c.p); q != c.quarter || y != c.year {
			t.Errorf("coverers(%q) = %q, %q; want %q, %q", c.p, q, y, c.quarter, c.year)
		}
		if m, ok := MonthOf(c.p); m != c.month || ok != c.monthOK {
			t.Errorf("MonthOf(%q) = %q, %v", c.p, m, ok)
		}
		if c.wantKey != "" {
			if k, r := episodeKey(c.p); k != c.wantKey || r != c.wantRank {
				t.Errorf("episodeKey(%q) = %q, %d", c.p, k, r)
			}
		}
	}
	if QuarterPath("2026", 3) != "episodes/2026-Q3.md" || YearPath("2025") != "episodes/2025.md" {
		t.Error("QuarterPath or YearPath")
	}
}

// The index order puts a roll-up where its newest month would be: the
// newest work first however it is rolled up.
func TestRollupOrder(t *testing.T) {
	files := []string{"episodes/2026-01.md", "episodes/2026-Q1.md", "episodes/2026.md", "episodes/2026-11.md", "episodes/2025.md",
		"episodes/2026-Q3.md", "episodes/2026-09.md", "episodes/2026-03.shared.md", "episodes/2026-03.md", "facts/user.md", "episodes/2025-12.md"}
	slices.SortFunc(files, comparePaths)
	want := []string{"facts/user.md", "episodes/2026.md", "episodes/2026-11.md", "episodes/2026-Q3.md", "episodes/2026-09.md",
		"episodes/2026-Q1.md", "episodes/2026-03.shared.md", "episodes/2026-03.md", "episodes/2026-01.md", "episodes/2025.md", "episodes/2025-12.md"}
	if !slices.Equal(files, want) {
		t.Errorf("order:\n%s\nwant\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
}

func TestFoldRollups(t *testing.T) {
	in := func(paths ...string) []FileInfo {
		out := make([]FileInfo, len(paths))
		for i, p := range paths {
			out[i] = FileInfo{Path: p}
		}
		return out
	}
	paths := func(fs []FileInfo) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	none := in("facts/user.md", "episodes/2026-02.md")
	if got := foldRollups(none); &got[0] != &none[0] {
		t.Error("a list without roll-ups was copied")
	}
	got := paths(foldRollups(in("facts/user.md", "episodes/2026-11.md", "episodes/2026-Q1.md", "episodes/2026-03.md",
		"episodes/2026-02.shared.md", "episodes/2026-01.md", "episodes/2025.md", "episodes/2025-Q4.md", "episodes/2025-12.md", "episodes/2024-05.md")))
	want := []string{"facts/user.md", "episodes/2026-11.md", "episodes/2026-Q1.md", "episodes/2025.md", "episodes/2024-05.md"}
	if !slices.Equal(got, want) {
		t.Errorf("fold = %v; want %v", got, want)
	}
}

// The model's tools read and search a roll-up but never change it; the
// index and memory_list show it in place of its months, which stay
// readable; an admin's List shows everything.
func TestRollupThroughTheTools(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(t, filepath.Join(dir, "facts/user.md"), userFact)
	writeFile(t, filepath.Join(dir, "episodes/2026-01.md"), janEpisodes)
	writeFile(t, filepath.Join(dir, "episodes/2026-02.md"), febEpisodes)
	writeFile(t, filepath.Join(dir, "episodes/2026-Q1.md"), q1Rollup)
	writeFile(t, filepath.Join(dir, "episodes/2026-11.md"), strings.ReplaceAll(janEpisodes, "2026-01", "2026-11"))
	writeFile(t, filepath.Join(dir, "episodes/2026-02.shared.md"), SetVisibility(febEpisodes, true))

	v := NewView(u, false, nil)
	idx, err := v.Index(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"episodes/2026-Q1.md", "logger fix, CI cache", "episodes/2026-11.md"} {
		if !strings.Contains(idx, w) {
			t.Errorf("index lacks %q:\n%s", w, idx)
		}
	}
	for _, no := range []string{"episodes/2026-01.md", "episodes/2026-02.md"} {
		if strings.Contains(idx, no) {
			t.Errorf("index shows %s, which the roll-up covers:\n%s", no, idx)
		}
	}
	tools := map[string]func(string) (string, error){}
	for _, tl := range AllTools(v) {
		tools[tl.Name] = func(args string) (string, error) { return tl.Call(context.Background(), []byte(args)) }
	}
	list, err := tools["memory_list"](`{}`)
	if err != nil || strings.Contains(list, "2026-01.md") || !strings.Contains(list, "2026-Q1.md") {
		t.Errorf("memory_list = %s, %v", list, err)
	}
	if text, err := tools["memory_read"](`{"path":"episodes/2026-01.md"}`); err != nil || !strings.Contains(text, "Logger fix") {
		t.Errorf("a covered month does not read: %q, %v", text, err)
	}
	if text, err := tools["memory_read"](`{"path":"episodes/2026-Q1.md"}`); err != nil || !strings.Contains(text, "Fixed log rotation") {
		t.Errorf("the roll-up does not read: %q, %v", text, err)
	}
	for name, args := range map[string]string{
		"memory_write":  `{"path":"episodes/2026-Q1.md","content":"# x\n> Summary: x\n- a: b\n"}`,
		"memory_patch":  `{"path":"episodes/2026-Q1.md","patches":[{"oldText":"Fixed","newText":"Broke"}]}`,
		"memory_append": `{"path":"episodes/2026.md","entry":"## X\n- Summary: x\n- Date: 2026-01-02\n"}`,
	} {
		res, err := tools[name](args)
		msg := res
		if err != nil {
			msg = err.Error()
		}
		if !strings.Contains(msg, "roll-ups are written by mnemo; append to episodes/YYYY-MM.md") {
			t.Errorf("%s on a roll-up = %q, %v; want the roll-up refusal", name, res, err)
		}
	}
	if got := readFile(t, filepath.Join(dir, "episodes/2026-Q1.md")); got != q1Rollup {
		t.Errorf("the roll-up changed:\n%s", got)
	}
	all, err := u.List()
	if err != nil || len(all) != 6 {
		t.Errorf("admin List = %v, %v; want all 6 files", all, err)
	}
	// A shared view (a channel) does not see the private roll-up, and so
	// folds nothing.
	sv := NewView(u, true, nil)
	sidx, err := sv.Index(0)
	if err != nil || strings.Contains(sidx, "Q1") || !strings.Contains(sidx, "episodes/2026-02.shared.md") {
		t.Errorf("channel index = %s, %v", sidx, err)
	}
	if err := sv.Write("episodes/2026-Q1.md", "x"); !errors.Is(err, ErrRollup) {
		t.Errorf("a channel's write to a roll-up: %v", err)
	}
}

// The month entries are the authority: a search finds both the entry and
// the roll-up line that summarises it, the entry first.
func TestRollupRanksAfterItsEntries(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(t, filepath.Join(dir, "episodes/2026-01.md"), janEpisodes)
	writeFile(t, filepath.Join(dir, "episodes/2026-02.md"), febEpisodes)
	writeFile(t, filepath.Join(dir, "episodes/2026-Q1.md"), q1Rollup)
	for _, q := range []string{"log rotation", "CI cache", "logger", "cache builds"} {
		found, err := NewView(u, false, nil).Search(q, 8)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, h := range found.Hits {
			order = append(order, h.Path)
		}
		month := slices.IndexFunc(order, func(p string) bool { return !IsRollup(p) })
		roll := slices.Index(order, "episodes/2026-Q1.md")
		if month < 0 || roll < 0 || roll < month {
			t.Errorf("search %q: hits %v; want the month entry, then the roll-up", q, order)
		}
	}
}

func TestWriteRollup(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	var commits []Commit
	hook := func(c Commit) error { commits = append(commits, c); return nil }
	if _, err := u.WriteRollup("episodes/2026-01.md", "x", Version{}, hook); !errors.Is(err, ErrBadPath) {
		t.Errorf("WriteRollup of a month: %v", err)
	}
	if _, err := u.WriteRollup("episodes/2026-Q1.md", strings.Repeat("x", 1<<20), Version{}, hook); !errors.Is(err, ErrTooLarge) {
		t.Errorf("WriteRollup over the cap: %v", err)
	}
	v, err := u.WriteRollup("episodes/2026-Q1.md", q1Rollup, Version{}, hook)
	if err != nil || len(commits) != 1 || commits[0].Path != "episodes/2026-Q1.md" {
		t.Fatalf("WriteRollup: %v, %v", err, commits)
	}
	// A person's edit after the plan: refused, the edit kept.
	edited := q1Rollup + "- my own note\n"
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-Q1.md"), edited)
	var c *ConflictError
	if _, err := u.WriteRollup("episodes/2026-Q1.md", "new", v, hook); !errors.As(err, &c) {
		t.Errorf("WriteRollup over an edit: %v", err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-Q1.md")); got != edited {
		t.Errorf("the edit was lost: %q", got)
	}
}

func TestRollupHash(t *testing.T) {
	a := RollupHash([]string{"2026-01.md", "2026-02.md"}, []string{"a", "b"})
	if a == RollupHash([]string{"2026-01.md", "2026-02.md"}, []string{"a", "b "}) ||
		a == RollupHash([]string{"2026-01.md", "2026-03.md"}, []string{"a", "b"}) ||
		a == RollupHash([]string{"2026-01.md", "2026-02.md"}, []string{"ab", ""}) {
		t.Error("different sources, same fingerprint")
	}
	if a != RollupHash([]string{"2026-01.md", "2026-02.md"}, []string{"a", "b"}) {
		t.Error("same sources, different fingerprints")
	}
	for text, want := range map[string]string{
		q1Rollup: "abc",
		"# x\n<!-- mnemo-rollup: sources=a sha256=ff00 -->\n": "ff00",
		"# x\n":                                 "",
		"<!-- mnemo-rollup: sha256=ff":          "",
		"<!-- mnemo-rollup: sources=a.md -->\n": "",
	} {
		if got := RollupHashOf(text); got != want {
			t.Errorf("RollupHashOf(%q) = %q; want %q", text, got, want)
		}
	}
}

// FuzzRollupNames: a path is a roll-up exactly when the grammar says so,
// and a month's coverers are roll-ups.
func FuzzRollupNames(f *testing.F) {
	for _, s := range []string{"episodes/2026-Q1.md", "episodes/2026.md", "episodes/2026-02.md", "episodes/2026-Q5.md", "episodes/02026.md", "episodes/2026-q1.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		k, err := ParsePath(p)
		if IsRollup(p) != (err == nil && k == KindRollup) {
			t.Fatalf("IsRollup(%q) = %v; ParsePath: %v, %v", p, IsRollup(p), k, err)
		}
		q, y := coverers(p)
		for _, c := range []string{q, y} {
			if c != "" && !IsRollup(c) {
				t.Fatalf("coverer %q of %q is no roll-up", c, p)
			}
		}
		if (q != "" || y != "") && err != nil {
			t.Fatalf("%q is covered but not a valid path", p)
		}
	})
}

// A start's index checks the files it shows: with roll-ups in place, the
// head it checks reaches past the months they cover.
func TestHeadOfWithRollups(t *testing.T) {
	var sorted []FileInfo
	for _, p := range []string{"facts/user.md", "episodes/2026-11.md", "episodes/2026-Q1.md", "episodes/2026-03.md", "episodes/2026-02.md", "episodes/2026-01.md", "episodes/2025-12.md"} {
		sorted = append(sorted, FileInfo{Path: p})
	}
	for n, want := range map[int]int{-1: 7, 0: 0, 2: 2, 3: 3, 4: 7, 9: 7} {
		if got := len(headOf(sorted, n)); got != want {
			t.Errorf("headOf(%d) = %d files; want %d", n, got, want)
		}
	}
	plain := sorted[:2]
	if got := headOf(plain, 1); len(got) != 1 {
		t.Errorf("without roll-ups: %d", len(got))
	}
	if got := headOf(sorted[:5], 3); len(got) != 5 { // 2026-03 and -02 covered: all five for three shown
		t.Errorf("covered tail: %d", len(got))
	}
}

// A roll-up is private: in a channel it answers as a missing file to
// every tool, is not searched, and its months' DM links never show.
func TestRollupNeverReachesAChannel(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	dir := filepath.Join(s.Dir(), "alice")
	dm := "# 2026-01 Episodes\n\n> Summary: logger fix\n\n## Logger fix <!-- src: slack · dm · 2026-01-12 · https://acme.slack.com/archives/D01/p1 -->\n- Summary: reopen on SIGHUP\n- Date: 2026-01-12\n"
	writeFile(t, filepath.Join(dir, "episodes/2026-01.md"), dm)
	writeFile(t, filepath.Join(dir, "episodes/2026-Q1.md"), q1Rollup)
	ch := mustUser(t, s, "#slack-T1-C1")
	v := NewView(u, true, ch)
	if _, err := v.Read("episodes/2026-Q1.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a channel reads the roll-up: %v", err)
	}
	idx, _ := v.Index(0)
	list, _ := v.List()
	found, _ := v.Search("log rotation logger", 8)
	text := idx + fmt.Sprint(list, found.Hits)
	for _, no := range []string{"2026-Q1", "D01", "slack.com", "Logger"} {
		if strings.Contains(text, no) {
			t.Errorf("a channel sees %q: %s", no, text)
		}
	}
}
