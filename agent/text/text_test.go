package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"  \t\n ":                "",
		"Ada":                    "Ada",
		" Ada\n\tLovelace  ":     "Ada Lovelace",
		"a\x00b\x7fc\u0085d\re":  "a b c d e",
		"line one\r\nline two\n": "line one line two",
		"ünï  cødé":              "ünï cødé",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abc", 5, "abc"},
		{"abcd", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},    // é is 2 bytes: not split
		{"aéb", 3, "aé"},  // ends right after it
		{"€uro", 2, ""},   // € is 3 bytes
		{"a€uro", 3, "a"}, // back past both continuation bytes
	} {
		if got := Cut(tt.s, tt.n); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func FuzzCut(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Cut(s, n)
		if !strings.HasPrefix(s, got) || len(got) > max(n, 0) && got != s {
			t.Fatalf("Cut(%q, %d) = %q: not a start of s within n bytes", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d) = %q splits a rune", s, n, got)
		}
		if len(s) > n && n > 0 && utf8.ValidString(s) {
			// the next rune would not have fitted
			_, w := utf8.DecodeRuneInString(s[len(got):])
			if len(got)+w <= n {
				t.Fatalf("Cut(%q, %d) = %q: cut short", s, n, got)
			}
		}
	})
}

func TestLongestRun(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"", 0}, {"abc", 0}, {"`", 1}, {"a``b```c`", 3}, {"````", 4}, {"`é``", 2},
	} {
		if got := LongestRun(tt.s, '`'); got != tt.want {
			t.Errorf("LongestRun(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

// A text that starts with continuation bytes (not valid UTF-8) is cut to
// nothing rather than past its start.
func TestCutInvalidStart(t *testing.T) {
	if got := Cut("\x80\x80abc", 1); got != "" {
		t.Errorf("Cut = %q, want empty", got)
	}
	if got := Cut("\x80\x80abc", 3); got != "\x80\x80a" {
		t.Errorf("Cut = %q", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"model", "modle", 1}, {"model", "model", 0}, {"kitten", "sitting", 3}, {"ab", "ba", 1}} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

func TestNearest(t *testing.T) {
	cmds := []string{"chat", "serve", "memory", "init", "version", "help", "healthcheck"}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"chta", "chat", true}, {"CHAT", "chat", true}, {"serv", "serve", true}, {"memroy", "memory", true},
		{"he", "", false}, // a prefix of two
		{"hea", "healthcheck", true}, {"xyz", "", false}, {"", "", false},
	} {
		got, ok := Nearest(tc.name, cmds)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Nearest("x", nil); ok {
		t.Error("a match among no candidates")
	}
}

func TestClosest(t *testing.T) {
	for _, candidates := range [][]string{{"log", "llm", "level"}, {"llm", "log", "level"}} {
		if best, dist := Closest("LOM", candidates); best != "llm" || dist != 1 {
			t.Errorf("Closest among %q = %q, %d; want llm, 1 (the first in byte order of two as close)", candidates, best, dist)
		}
	}
	if best, dist := Closest("x", nil); best != "" || dist != 0 {
		t.Errorf("Closest among none = %q, %d", best, dist)
	}
}
