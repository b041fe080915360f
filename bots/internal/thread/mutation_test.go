package thread

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestThreadContextCutBoundary: a text of exactly maxText characters is
// kept whole; one more is cut.
func TestThreadContextCutBoundary(t *testing.T) {
	for _, c := range []struct {
		text, want string
	}{
		{strings.Repeat("é", 10), strings.Repeat("é", 10)},
		{strings.Repeat("é", 11), strings.Repeat("é", 10) + " […]"},
		{strings.Repeat("é", 9), strings.Repeat("é", 9)},
	} {
		got := Context([]Message{{AuthorID: "U", Text: c.text}}, "", "", "b", 5, 10)
		if len(got) != 1 || got[0].Text != c.want {
			t.Errorf("%d characters: %+v; want %q", utf8.RuneCountInString(c.text), got, c.want)
		}
	}
}
