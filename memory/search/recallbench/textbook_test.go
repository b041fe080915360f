package recallbench

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// tinySet is a hand-written memory whose textbook ranking is worked out
// below.
func tinySet() Set {
	return Set{Files: map[string]string{
		"facts/a.md": "# A\n\n> Summary: apple apple apple\n\n- apple banana\n- apple\n- cherry\n## Section apple\n- Apple's pie\n",
		"facts/b.md": "# B\n\n- kiwi\n",
		"facts/c.md": "# C\n\n- kiwi\n",
		"episodes/2026-01.md": "# 2026-01 Episodes\n\n> Summary: banana\n\n" +
			"## Banana bread\n- Summary: baked banana bread\n- Date: 2026-01-03\n- apples were not used\n\n" +
			"## Cherry pie\n- Summary: cherry\n- Date: 2026-01-05\n",
	}}
}

func hitLines(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Path+":"+strconv.Itoa(h.Line)+"-"+strconv.Itoa(h.End))
	}
	return out
}

func TestTextbookRanking(t *testing.T) {
	tb := Textbook(tinySet())
	// Units: a.md lines 5 (2 terms), 6 (1), 7 (1), 9 (3: apple, s, pie);
	// b.md and c.md line 3 (1 each); the two entries (14 and 8 terms).
	if len(tb.units) != 8 {
		t.Fatalf("%d units, want 8", len(tb.units))
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		// Shorter units first; "apples" is not "apple" (no stemming);
		// the header line and the "## " heading are no units.
		{"apple", []string{"facts/a.md:6-6", "facts/a.md:5-5", "facts/a.md:9-9"}},
		{"APPLE apple", []string{"facts/a.md:6-6", "facts/a.md:5-5", "facts/a.md:9-9"}},
		// A short line with banana once beats the entry with it twice.
		{"banana", []string{"facts/a.md:5-5", "episodes/2026-01.md:5-8"}},
		// An entry runs from its heading to its last non-blank line.
		// Cherry and pie have one df: the shorter line of the two first.
		{"cherry pie", []string{"episodes/2026-01.md:10-12", "facts/a.md:7-7", "facts/a.md:9-9"}},
		// Ties: by path, then line.
		{"kiwi", []string{"facts/b.md:3-3", "facts/c.md:3-3"}},
		{"durian", nil},
	} {
		got := hitLines(tb.Rank(c.query, time.Time{}, 10))
		if len(got) != len(c.want) {
			t.Errorf("%q: %v, want %v", c.query, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: %v, want %v", c.query, got, c.want)
				break
			}
		}
	}
	if got := tb.Rank("apple", time.Time{}, 2); len(got) != 2 {
		t.Errorf("limit 2: %d hits", len(got))
	}
	// The score of "banana" in a.md line 5, by the book: N 8 units of 31
	// terms, df 2, tf 1, length 2.
	avg := 31.0 / 8
	idf := math.Log(1 + (8-2+0.5)/(2+0.5))
	want := idf * 1 * 2.2 / (1 + 1.2*(0.25+0.75*2/avg))
	if math.Abs(tb.avg-avg) > 1e-9 {
		t.Errorf("average length %v, want %v", tb.avg, avg)
	}
	id := -1
	for i, u := range tb.units {
		if u.path == "facts/a.md" && u.line == 5 {
			id = i
		}
	}
	if got := tb.scores("banana")[int32(id)]; math.Abs(got-want) > 1e-9 {
		t.Errorf("score %v, want %v", got, want)
	}
}

func TestTokens(t *testing.T) {
	got := tokens("Fixed go-openai's v1.36 bug — Tomás's café, 2026-03-07!")
	want := []string{"fixed", "go", "openai", "s", "v1", "36", "bug", "tomás", "s", "café", "2026", "03", "07"}
	if len(got) != len(want) {
		t.Fatalf("%q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q, want %q", got, want)
		}
	}
}

func TestCovers(t *testing.T) {
	ep := Hit{Path: "episodes/2026-01.md", Line: 5, End: 8}
	fact := Hit{Path: "facts/a.md", Line: 6, End: 6, Lines: []int{6, 9}}
	for _, c := range []struct {
		h    Hit
		e    Evidence
		want bool
	}{
		{ep, Evidence{"episodes/2026-01.md", 5}, true},
		{ep, Evidence{"episodes/2026-01.md", 8}, true},
		{ep, Evidence{"episodes/2026-01.md", 9}, false},
		{ep, Evidence{"episodes/2026-01.md", 4}, false},
		{ep, Evidence{"episodes/2026-02.md", 5}, false},
		{fact, Evidence{"facts/a.md", 6}, true},
		{fact, Evidence{"facts/a.md", 9}, true},
		{fact, Evidence{"facts/a.md", 7}, false},
		{fact, Evidence{"facts/b.md", 6}, false},
	} {
		if got := c.h.Covers(c.e); got != c.want {
			t.Errorf("%+v covers %+v: %v, want %v", c.h, c.e, got, c.want)
		}
	}
}

func TestRanks(t *testing.T) {
	hits := []Hit{{Path: "facts/a.md", Line: 1, Lines: []int{1}}, {Path: "facts/a.md", Line: 2, Lines: []int{2}}, {Path: "facts/a.md", Line: 3, Lines: []int{3}}}
	for _, c := range []struct {
		ev       []Evidence
		any, all int
	}{
		{[]Evidence{{"facts/a.md", 2}}, 2, 2},
		{[]Evidence{{"facts/a.md", 3}, {"facts/a.md", 1}}, 1, 3},
		{[]Evidence{{"facts/a.md", 2}, {"facts/a.md", 9}}, 2, 0},
		{[]Evidence{{"facts/b.md", 2}}, 0, 0},
	} {
		a, all := ranks(hits, c.ev)
		if a != c.any || all != c.all {
			t.Errorf("%v: ranks %d %d, want %d %d", c.ev, a, all, c.any, c.all)
		}
	}
}
