package split

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// checkParts checks Split's promises for each part: at most limit
// characters, not blank, code fences balanced (as Split reads them).
func checkParts(t *testing.T, parts []string, limit int) {
	t.Helper()
	limit = max(limit, MinLimit)
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > limit {
			t.Fatalf("part %d has %d characters (limit %d): %q", i, n, limit, p)
		}
		if strings.TrimSpace(p) == "" {
			t.Fatalf("part %d is blank: %q", i, p)
		}
		if inCodeAtEnd(p, limit) {
			t.Fatalf("part %d has an unclosed code block:\n%s", i, p)
		}
	}
}

// inCodeAtEnd reports whether s ends inside a code block.
func inCodeAtEnd(s string, limit int) bool {
	kinds, _ := scanFences(strings.Split(s, "\n"), limit/4-1)
	in := false
	for _, k := range kinds {
		switch k {
		case lineOpen:
			in = true
		case lineClose:
			in = false
		}
	}
	return in
}

// content is the text of s without fence lines and white space, which
// splitting must keep, in order.
func content(s string, limit int) string {
	lines := strings.Split(s, "\n")
	kinds, _ := scanFences(lines, max(limit, MinLimit)/4-1)
	var b strings.Builder
	for i, l := range lines {
		if kinds[i] == lineText {
			b.WriteString(strings.ToValidUTF8(l, "\uFFFD"))
		}
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, b.String())
}

func contentOf(parts []string, limit int) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(content(p, limit))
	}
	return b.String()
}

func TestSplit(t *testing.T) {
	para := strings.Repeat("word ", 150) // 750 characters
	var paras strings.Builder
	for i := range 12 {
		paras.WriteString(para + "\n")
		if i%3 == 2 {
			paras.WriteString("\n")
		}
	}
	code := "intro\n```python\n" + strings.Repeat("print('a line of code that is long enough')\n", 200) + "```\nafter"
	for _, c := range []struct {
		name  string
		text  string
		limit int
		want  []string                   // exact parts (unless any)
		check func(*testing.T, []string) // more checks
		any   bool                       // only Split's promises are checked
	}{
		{name: "empty", text: "", limit: 100, want: nil},
		{name: "short", text: "hello\nworld", limit: 100, want: []string{"hello\nworld"}},
		{name: "blank parts dropped", text: "\n\n```\n\n```\n\n", limit: 100, want: nil},
		{name: "fence-only parts dropped", text: "```go\n```", limit: 100, want: nil},
		{name: "tiny limit makes progress", text: strings.Repeat("z", 50), limit: 1,
			want: []string{strings.Repeat("z", 8), strings.Repeat("z", 8), strings.Repeat("z", 8), strings.Repeat("z", 8),
				strings.Repeat("z", 8), strings.Repeat("z", 8) + "\nzz"}},
		{name: "paragraphs", text: paras.String(), limit: 3500, check: func(t *testing.T, parts []string) {
			if len(parts) < 3 {
				t.Fatalf("%d parts", len(parts))
			}
			// Each part but the last ends where a blank line was.
			for i, p := range parts[:len(parts)-1] {
				if n := strings.Count(p, "\n") + 1; n%4 != 3 && n%4 != 0 {
					t.Errorf("part %d has %d lines; expected whole paragraphs", i, n)
				}
			}
		}},
		{name: "code block closed and reopened with its info string", text: code, limit: 3500, check: func(t *testing.T, parts []string) {
			if len(parts) < 3 {
				t.Fatalf("%d parts", len(parts))
			}
			for i, p := range parts[1 : len(parts)-1] {
				if !strings.HasPrefix(p, "```python\n") || !strings.HasSuffix(p, "\n```") {
					t.Errorf("middle part %d does not reopen and close the block:\n%.80s…", i+1, p)
				}
			}
			if !strings.HasPrefix(parts[0], "intro\n```python\n") || !strings.HasSuffix(parts[len(parts)-1], "```\nafter") {
				t.Errorf("first/last parts: %.40q … %q", parts[0], parts[len(parts)-1])
			}
		}},
		{name: "unclosed block closed", text: "```\nx", limit: 100, want: []string{"```\nx\n```"}},
		{name: "longer fences", text: "````md\n" + strings.Repeat("```\nin\n", 20) + "````\nout", limit: 40, check: func(t *testing.T, parts []string) {
			for _, p := range parts[:len(parts)-1] {
				if !strings.HasPrefix(p, "````md\n") || !strings.HasSuffix(p, "\n````") {
					t.Errorf("part %q", p)
				}
			}
		}},
		{name: "opening fence does not end a part", text: strings.Repeat("a", 80) + "\n```\n" + strings.Repeat("b", 80) + "\n```", limit: 100,
			want: []string{strings.Repeat("a", 80), "```\n" + strings.Repeat("b", 80) + "\n```"}},
		{name: "long line at spaces", text: strings.Repeat("abcdefghij ", 1000), limit: 3500, check: func(t *testing.T, parts []string) {
			for _, p := range parts[:len(parts)-1] {
				if strings.HasPrefix(p, " ") || strings.HasSuffix(p, " ") || strings.Contains(p, "abcde\n") {
					t.Errorf("cut inside a word or left a space: %.20q…%q", p, p[len(p)-20:])
				}
			}
		}},
		{name: "long line without spaces", text: strings.Repeat("é", 10000), limit: 3500, check: func(t *testing.T, parts []string) {
			if len(parts) != 3 {
				t.Errorf("%d parts", len(parts))
			}
		}},
		{name: "entity not cut", text: strings.Repeat("x", 90) + "&amp;" + strings.Repeat("y", 100), limit: 100, check: func(t *testing.T, parts []string) {
			if !strings.HasSuffix(parts[0], "x") || !strings.HasPrefix(parts[1], "&amp;") {
				t.Errorf("entity cut: %q", parts)
			}
		}},
		{name: "link not cut", text: strings.Repeat("x", 70) + "<https://x.io/aaaaaaaaaa|label>" + strings.Repeat("y", 100), limit: 100,
			check: func(t *testing.T, parts []string) {
				if !strings.HasPrefix(parts[1], "<https://") {
					t.Errorf("link cut: %q", parts)
				}
			}},
		{name: "wrapped pieces do not become fences", text: "text " + strings.Repeat("x", 45) + " ```go and more " + strings.Repeat("y", 60), limit: 64,
			check: func(t *testing.T, parts []string) {
				for _, p := range parts {
					if strings.HasPrefix(p, "```") {
						t.Errorf("part %q starts with a fence", p)
					}
				}
			}},
		{name: "backtick runs in a long line", text: "a" + strings.Repeat("`", 200) + "b", limit: 32, any: true},
		{name: "a line of backticks", text: strings.Repeat("`", 100), limit: 16, any: true},
		{name: "backticks after a cut", text: strings.Repeat("x", 24) + "`````x", limit: 32, any: true},
		{name: "fence-like long line start", text: "```" + strings.Repeat(" ", 30) + strings.Repeat("q", 30), limit: 32, any: true},
		{name: "overlong info string is text", text: "```" + strings.Repeat("i", 40) + "\ncode", limit: 64,
			want: []string{"```" + strings.Repeat("i", 40) + "\ncode"}},
		{name: "invalid UTF-8", text: "a\xde\nb\xff\xfe", limit: 100, want: []string{"a\uFFFD\nb\uFFFD"}},
		{name: "crlf closing fence", text: "```\r\ncode\r\n```\r\nafter", limit: 100, want: []string{"```\r\ncode\r\n```\r\nafter"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			parts := Text(c.text, c.limit)
			checkParts(t, parts, c.limit)
			if got, want := contentOf(parts, c.limit), content(c.text, c.limit); got != want {
				t.Errorf("split lost text:\n got %q\nwant %q", got, want)
			}
			if c.check == nil && !c.any && fmt.Sprintf("%q", parts) != fmt.Sprintf("%q", c.want) {
				t.Errorf("parts\n got %q\nwant %q", parts, c.want)
			}
			if c.check != nil {
				c.check(t, parts)
			}
		})
	}
}

func TestWrapLineAndSafeCut(t *testing.T) {
	r := []rune("aaaa<x>bbbbbbbbbb&amp;cc")
	for _, c := range []struct{ cut, min, want int }{
		{20, 2, 17}, // before the entity
		{12, 2, 12}, // after a closed sequence
		{6, 2, 4},   // before an open sequence
		{6, 5, 6},   // not below min
		{23, 2, 23}, // after a whole entity and a closed sequence
	} {
		if got := safeCut(r, c.cut, c.min); got != c.want {
			t.Errorf("safeCut(%d, %d) = %d; want %d", c.cut, c.min, got, c.want)
		}
	}
	for _, c := range []struct {
		line string
		max  int
		want []string
	}{
		{"short", 10, []string{"short"}},
		{"aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"aaaaaaa ```x", 10, []string{"aaaaaaa", " ```x"}},                           // a space kept before backticks
		{"aaaaaaaaa```x", 10, []string{"aaaaaaaaa`", "``x"}},                         // the cut moves into the run
		{"```aaaaaa    b", 10, []string{"```aaaaaa ", "b"}},                          // trailing spaces kept after a fence start
		{"aaaaaa" + strings.Repeat("`", 12), 10, []string{"aaaaaa````", "````````"}}, // what is left is too long for a fence
	} {
		if got := wrapLine(c.line, c.max, 3); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
			t.Errorf("wrapLine(%q, %d) = %q; want %q", c.line, c.max, got, c.want)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"hello world", "```go\ncode\n```", "```\nunclosed", "a ```b``` c ```` d", "````\n```\n````",
		strings.Repeat("line of text\n", 400), "```\n" + strings.Repeat("x ", 3000) + "\n```", "&amp; <x> &",
		"```" + strings.Repeat(" ", 40) + "x", strings.Repeat("`", 300), "\n\n\n", "```py\r\nx\r\n```\r\n",
	} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, text string, small int) {
		limit := MinLimit + (small&0xff)*3
		if small < 0 {
			limit = 2000
		}
		parts := Text(text, limit)
		checkParts(t, parts, limit)
		if got, want := contentOf(parts, limit), content(text, limit); got != want {
			t.Fatalf("split lost text:\n got %q\nwant %q", got, want)
		}
	})
}

// TestSplitIsLinear: pathological text does not stall a reply.
func TestSplitAdversarialInputs(t *testing.T) {
	// Inputs that made a quadratic splitter crawl; how fast Split is, is
	// BenchmarkSplitAdversarial's figure (no timed assertion here).
	for _, unit := range splitUnits {
		for _, limit := range []int{MinLimit, 100, 2000} {
			checkParts(t, Text(strings.Repeat(unit, 200000/len(unit)), limit), limit)
		}
	}
}

var splitUnits = []string{"`", "``` ", "```\n", "````go\n", " ", "\n", "a ", "<", "&", "x", "``` x\n"}

// BenchmarkSplitAdversarial: 200,000 characters of each unit at limit
// 2000; time per op grows linearly with the size when Split is linear.
func BenchmarkSplitAdversarial(b *testing.B) {
	for _, unit := range splitUnits {
		in := strings.Repeat(unit, 200000/len(unit))
		b.Run(strconv.Quote(unit), func(b *testing.B) {
			for b.Loop() {
				Text(in, 2000)
			}
		})
	}
}
