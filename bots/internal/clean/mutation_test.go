package clean

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"testing"
)

// TestInvisibleRanges: each range of invisible characters is removed from
// its first to its last character, and the characters around it are kept.
func TestInvisibleRanges(t *testing.T) {
	for _, r := range []struct{ first, last rune }{
		{0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2069}, {0xFEFF, 0xFEFF}, {0xE0000, 0xE007F}, {0x061C, 0x061C},
	} {
		for c := r.first; c <= r.last; c++ {
			if !Invisible(c) || Text("a"+string(c)+"b") != "ab" {
				t.Errorf("%U is kept", c)
			}
		}
		for _, c := range []rune{r.first - 1, r.last + 1} {
			if Invisible(c) {
				t.Errorf("%U (next to %U-%U) is invisible", c, r.first, r.last)
			}
		}
	}
}
