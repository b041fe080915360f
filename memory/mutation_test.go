package memory

// Boundary tests found by mutation testing (gremlins): each pins a limit or
// an edge exactly at and one past it, so a shifted comparison fails a test.

import (
	"strings"
	"testing"
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
	mk := func(ss ...string) []episode {
		var es []episode
		for _, s := range ss {
			es = append(es, episode{Summary: s})
		}
		return es
	}
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

func TestSetSummaryEdges(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"title is the last line", "# T", "# T\n\n> Summary: new"},
		{"summary in the first entry of a file without header", "## E\n> Summary: inner\n- Date: 2026-02-01\n",
			"# 2026-02 Episodes\n\n> Summary: new\n\n## E\n> Summary: inner\n- Date: 2026-02-01\n"},
		{"two titles: under the first", "# A\n\n# B\n\n## E\n", "# A\n\n> Summary: new\n\n# B\n\n## E\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := setSummary(c.text, "new", "2026-02 Episodes"); got != c.want {
				t.Errorf("setSummary = %q; want %q", got, c.want)
			}
		})
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
