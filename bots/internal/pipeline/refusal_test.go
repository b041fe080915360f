package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutIncoming(t *testing.T) {
	tests := []struct {
		text string
		max  int
		want string
		cut  bool
	}{
		{"", 3, "", false},
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"héllo", 4, "héll", true}, // characters, not bytes
		{"héllo", 5, "héllo", false},
		{"日本語", 3, "日本語", false}, // 9 bytes, 3 characters
		{"日本語です", 3, "日本語", true},
		{"a\xffb", 2, "a\xff", true}, // invalid UTF-8 counts a byte a character
	}
	for _, tt := range tests {
		got, cut := CutIncoming(tt.text, tt.max)
		if got != tt.want || cut != tt.cut {
			t.Errorf("CutIncoming(%q, %d) = %q, %v; want %q, %v", tt.text, tt.max, got, cut, tt.want, tt.cut)
		}
	}
	// 8 MB is cut to 40,000 characters.
	big, cut := CutIncoming(strings.Repeat("é", 4<<20), 40000)
	if !cut || utf8.RuneCountInString(big) != 40000 {
		t.Errorf("8 MB: %d characters, cut %v", utf8.RuneCountInString(big), cut)
	}
}

func TestRefusalTexts(t *testing.T) {
	for reason, want := range map[string]string{"rate": "wait a minute", "tokens": "00:00 UTC", "total_tokens": "for everyone", "other": ""} {
		got := RefusalText(reason)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("RefusalText(%q) = %q", reason, got)
		}
	}
	for n, want := range map[int]string{4000: "4,000", 40000: "40,000", 999: "999", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
	if !strings.Contains(CutNoteText(40000), "first 40,000 characters") {
		t.Errorf("CutNoteText = %q", CutNoteText(40000))
	}
}

// CutIncoming keeps a prefix of at most max characters, and cuts exactly
// when there were more.
func FuzzCutIncoming(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Add("", 0)
	f.Add("a\xff\xfeb", 2)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		got, cut := CutIncoming(text, max)
		if !strings.HasPrefix(text, got) {
			t.Fatalf("not a prefix: %q of %q", got, text)
		}
		n, all := utf8.RuneCountInString(got), utf8.RuneCountInString(text)
		if n > max || cut != (all > max) || (cut && n != max) || (!cut && got != text) {
			t.Fatalf("CutIncoming(%q, %d) = %q (%d characters of %d), %v", text, max, got, n, all, cut)
		}
	})
}
