package split

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"fmt"
	"strings"
	"testing"
)

// TestSplitLimitBoundaries: Split uses the whole limit and never more,
// in and out of code blocks, and a fence line of exactly limit/4-1
// characters is still a fence.
func TestSplitLimitBoundaries(t *testing.T) {
	for _, c := range []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		// 50 + 1 + 49 = 100 characters: one part at limit 100.
		{"exactly the limit", strings.Repeat("a", 50) + "\n" + strings.Repeat("b", 49), 100,
			[]string{strings.Repeat("a", 50) + "\n" + strings.Repeat("b", 49)}},
		{"one over the limit", strings.Repeat("a", 50) + "\n" + strings.Repeat("b", 50), 100,
			[]string{strings.Repeat("a", 50), strings.Repeat("b", 50)}},
		// A line of limit-8 characters fits with a block's fences (4 each);
		// a longer one is wrapped there even outside a block.
		{"longest unwrapped line", strings.Repeat("c", 92), 100, []string{strings.Repeat("c", 92)}},
		{"wrapped line", strings.Repeat("c", 93), 100, []string{strings.Repeat("c", 92) + "\nc"}},
		// limit 64: fences of up to 15 characters.
		{"fence of limit/4-1 characters", "```abcdefghijkl\ncode", 64, []string{"```abcdefghijkl\ncode\n```"}},
		{"fence of limit/4 characters is text", "```abcdefghijklm\ncode", 64, []string{"```abcdefghijklm\ncode"}},
		// A block of 5-backtick fences cut into parts: each part is the
		// fences (6 characters with their line breaks, each) and 52
		// characters of code, exactly 64.
		{"long fences closed and reopened", "`````\n" + strings.Repeat("x", 104) + "\n`````", 64,
			[]string{"`````\n" + strings.Repeat("x", 52) + "\n`````", "`````\n" + strings.Repeat("x", 52) + "\n`````"}},
		{"long fences with an info string", "`````go\n" + strings.Repeat("x", 100) + "\n`````", 64,
			[]string{"`````go\n" + strings.Repeat("x", 50) + "\n`````", "`````go\n" + strings.Repeat("x", 50) + "\n`````"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			parts := Text(c.text, c.limit)
			checkParts(t, parts, c.limit)
			if fmt.Sprintf("%q", parts) != fmt.Sprintf("%q", c.want) {
				t.Errorf("parts\n got %q\nwant %q", parts, c.want)
			}
		})
	}
}

// TestSplitBlankLines: a text that fits is one part, blank lines or not;
// else a part ends at the last blank line that leaves it at least half
// the limit (exactly half included), never at one inside a code block
// (one just before a block is fine), and a white-space line that starts
// a part is not a place to split (nothing would come before it).
func TestSplitBlankLines(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	b := func(n int) string { return strings.Repeat("b", n) }
	for _, c := range []struct {
		name string
		text string
		want []string
	}{
		{"fits", a(60) + "\n\n" + b(20), []string{a(60) + "\n\n" + b(20)}},
		{"blank line at half", a(49) + "\n\n" + b(20) + "\n" + a(40), []string{a(49), b(20) + "\n" + a(40)}},
		{"blank line before a block", a(60) + "\n\n```\n" + b(30) + "\n" + b(30) + "\n```",
			[]string{a(60), "```\n" + b(30) + "\n" + b(30) + "\n```"}},
		{"blank line in a block", "```\n" + b(50) + "\n\n```\n" + a(60), []string{"```\n" + b(50) + "\n\n```", a(60)}},
		{"white space first", strings.Repeat(" ", 60) + "\n" + a(30) + "\n" + b(30) + "\n" + a(30),
			[]string{strings.Repeat(" ", 60) + "\n" + a(30), b(30) + "\n" + a(30)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			parts := Text(c.text, 100)
			checkParts(t, parts, 100)
			if fmt.Sprintf("%q", parts) != fmt.Sprintf("%q", c.want) {
				t.Errorf("parts\n got %q\nwant %q", parts, c.want)
			}
		})
	}
}

// TestWrapLineBoundaries pins where wrapLine and safeCut may cut: a space
// only in the second half (after max/2), an entity only within 8
// characters before the cut, never at min itself, and a piece of exactly
// three backticks is never left to be read as a fence.
func TestWrapLineBoundaries(t *testing.T) {
	for _, c := range []struct {
		line string
		max  int
		want []string
	}{
		{"aaaaa bbbbbbbbbb", 10, []string{"aaaaa bbbb", "bbbbbb"}}, // the space at max/2 is not used
		{"aaaaaa bbbbbbbbb", 10, []string{"aaaaaa", "bbbbbbbbb"}},  // one after it is
		{"aaaaaaaaa ```", 10, []string{"aaaaaaaaa", " ```"}},       // a space kept before exactly three backticks
		{"aaaaaaaaaa", 10, []string{"aaaaaaaaaa"}},                 // exactly max: not cut
		{"aaaaaaaaaab", 10, []string{"aaaaaaaaaa", "b"}},           // one more is
		{"aaaaaaaaa````", 10, []string{"aaaaaaaaa", "````"}},       // a run going past max: what is left is too long for a fence
		{"aaaaaaaaaaaaaaaaaaaaa", 20, []string{"aaaaaaaaaaaaaaaaaaaa", "a"}},
	} {
		got := wrapLine(c.line, c.max, 3)
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
			t.Errorf("wrapLine(%q, %d) = %q; want %q", c.line, c.max, got, c.want)
		}
		if len(got) > 1 {
			kinds, _ := scanFences(got[1:], 3)
			for i, k := range kinds {
				if k != lineText {
					t.Errorf("wrapLine(%q): piece %q reads as a fence", c.line, got[i+1])
				}
			}
		}
	}
	entity := []rune("aaaa<x>bbbbbbbbbb&amp;cc") // '<' at 4, '&' at 17
	far := []rune("xx&abcdefgh")                 // '&' 8 before the end
	farther := []rune("x&abcdefghi")             // '&' 9 before the end
	for _, c := range []struct {
		r             []rune
		cut, min, out int
	}{
		{entity, 20, 17, 20}, // the entity starts at min: not cut before it
		{entity, 20, 16, 17},
		{entity, 6, 4, 6}, // the sequence starts at min
		{entity, 6, 3, 4},
		{far, 10, 0, 2},      // 8 before the cut: still an entity
		{farther, 10, 0, 10}, // 9 before: too far for one
	} {
		if got := safeCut(c.r, c.cut, c.min); got != c.out {
			t.Errorf("safeCut(%q, %d, %d) = %d; want %d", string(c.r), c.cut, c.min, got, c.out)
		}
	}
}
