package clean

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes is the longest name Name returns.
const MaxNameRunes = 80

// Name neutralises a display or channel name before it reaches a
// prompt: one line (any run of white space, newlines included, becomes
// one space), control characters (C0, C1), format characters (bidi
// overrides and isolates, zero-width characters, Unicode tag characters,
// soft hyphens …) and blank fillers removed, invalid UTF-8 dropped,
// trimmed, and then cut to MaxNameRunes characters.
func Name(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if invisible(r) {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > MaxNameRunes {
		s = string([]rune(s)[:MaxNameRunes]) // may end in a space, as it always did
	}
	return s
}

// invisible: control and format characters (Cc, Cf: C0, C1, bidi
// controls, zero-width characters, tags, BOM) and characters that render
// as nothing (Hangul fillers, the braille blank, variation selectors).
func invisible(r rune) bool {
	switch {
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r):
		return true
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800, r == 0x034F:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return false
}
