package clean

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1b[31mred\x1b[0m":       "a[31mred[0m",
		"x\u202eevil\u200b\u2066y":  "xevily",
		"c1\u009b2J tags\U000E0041": "c12J tags",
		"line\r\nnext\rthird\ttab":  "line\nnext\nthird\ttab",
		"bad \xff utf8":             "bad \uFFFD utf8",
		"\ufeffbom and \u061c":      "bom and ",
		"plain **markdown** `code`": "plain **markdown** `code`",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q; want %q", in, got, want)
		}
	}
}

func FuzzCleanText(f *testing.F) {
	f.Add("a\x1b[2J\u202e\u200b\r\nb")
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
		for _, r := range got {
			if r != '\n' && r != '\t' && (unicode.IsControl(r) || Invisible(r)) {
				t.Fatalf("%U left in %q", r, got)
			}
		}
	})
}
