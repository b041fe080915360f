package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// OneLine squeezes s into one line: every run of white space and control
// characters (line breaks included) becomes one space, and none is left at
// either end.
func OneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
}

// Cut is the longest start of s of at most n bytes that ends on a rune
// boundary: s itself when it is that short, "" when n is not positive.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// LongestRun is the length of the longest run of c in s: a fence of one
// more c than that cannot be closed by anything s holds.
func LongestRun(s string, c rune) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
