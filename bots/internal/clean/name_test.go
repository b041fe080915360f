package clean

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Alice", "Alice"},
		{"  Alice \t A.\n\nB  ", "Alice A. B"},
		{"line\r\nbreak\u2028sep\u2029para\u0085nel", "line break sep para nel"},
		{"ctl\x00\x07\x1b[31m\x7f", "ctl[31m"},
		{"c1\u0080\u009f", "c1"},
		{"bidi\u202eevil\u202c \u2066iso\u2069 \u200emark\u200f \u061c", "bidievil iso mark"},
		{"zero\u200b\u200c\u200d\u2060\ufeffwidth", "zerowidth"},
		{"tags\U000E0041\U000E007F", "tags"},
		{"fill\u3164\u115f\u1160\uffa0\u2800er \u034f", "filler"},
		{"vs\ufe0f\U000E0100", "vs"},
		{"soft\u00adhyphen", "softhyphen"},
		{"bad\xffutf8", "badutf8"},
		{"\u200b \u200b", ""},
		{"日本語の名前", "日本語の名前"},
		{strings.Repeat("é", 100), strings.Repeat("é", 80)},
		{strings.Repeat("a", 79) + " b", strings.Repeat("a", 79) + " "}, // cut after trimming
	} {
		if got := Name(c.in); got != c.want {
			t.Errorf("Name(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"Alice", "a\nb", "\u202eevil", "\U000E0041", strings.Repeat("x ", 100), "\xff", " \u200b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Name(s)
		if utf8.RuneCountInString(got) > MaxNameRunes || !utf8.ValidString(got) {
			t.Fatalf("Name(%q) = %q: too long or invalid", s, got)
		}
		if strings.TrimLeft(got, " ") != got || strings.Contains(got, "  ") ||
			strings.HasSuffix(got, " ") && utf8.RuneCountInString(got) != MaxNameRunes {
			t.Fatalf("Name(%q) = %q: untrimmed or double spaces", s, got)
		}
		for _, r := range got {
			if r != ' ' && unicode.IsSpace(r) || invisible(r) || unicode.In(r, unicode.Cc, unicode.Cf) {
				t.Fatalf("Name(%q) = %q holds %U", s, got, r)
			}
		}
		if Name(got) != strings.TrimRight(got, " ") {
			t.Fatalf("Name is not idempotent on %q", s)
		}
	})
}
