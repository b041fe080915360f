package clean

import (
	"strings"
	"unicode"
)

// Text removes from model output what must not reach a terminal or a
// chat: control characters other than newline and tab (ESC sequences, C1
// controls; "\r\n" and a lone "\r" become "\n"), bidi controls,
// zero-width characters and Unicode tags. Invalid UTF-8 becomes U+FFFD.
func Text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r':
			return '\n'
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), Invisible(r):
			return -1
		}
		return r
	}, s)
}

// Invisible reports bidi controls, zero-width characters and Unicode tags.
func Invisible(r rune) bool {
	return r >= 0x200B && r <= 0x200F || r >= 0x202A && r <= 0x202E || r >= 0x2060 && r <= 0x2069 ||
		r == 0xFEFF || r >= 0xE0000 && r <= 0xE007F || r == 0x061C
}
