package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// cutNote ends a reply cut by cutReply.
func cutNote(limit int) string {
	return fmt.Sprintf("\n\n*(reply cut: it was longer than maxReplyChars, %d characters)*", limit)
}

// cutReply shortens text to at most limit characters (runes) when it is
// longer, and reports whether it did: the text is cut at the last line
// break in the second half of what fits, else the last space there, else
// anywhere; a code block left open is closed; cutNote follows.
func cutReply(text string, limit int) (string, bool) {
	if utf8.RuneCountInString(text) <= limit {
		return text, false
	}
	r := []rune(text)
	note := cutNote(limit)
	room := limit - utf8.RuneCountInString(note)
	for {
		head := cutRunes(r, room)
		if mark := openFence(head); mark != "" {
			head += "\n" + mark
		}
		over := utf8.RuneCountInString(head) + utf8.RuneCountInString(note) - limit
		if over <= 0 {
			return head + note, true
		}
		room -= over // the closing fence did not fit: cut earlier
	}
}

// cutRunes is at most n runes of r (n < len(r)), cut at a line break or a
// space in the second half when there is one, without trailing space.
func cutRunes(r []rune, n int) string {
	if n <= 0 {
		return ""
	}
	cut := n
	for _, sep := range []rune{'\n', ' '} {
		if k := lastIndex(r[n/2:n+1], sep); k >= 0 { // a break just past n is fine: it is not kept
			cut = n/2 + k
			break
		}
	}
	return strings.TrimRight(string(r[:cut]), " \t\n")
}

func lastIndex(r []rune, c rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == c {
			return i
		}
	}
	return -1
}

// openFence returns the fence ("```", "~~~~", ...) of a Markdown code
// block that md leaves open, or "".
func openFence(md string) string {
	mark := ""
	for _, l := range strings.Split(md, "\n") {
		t := strings.TrimLeft(l, " \t")
		switch {
		case mark == "":
			if run := fenceRun(t); len(run) >= 3 && !(run[0] == '`' && strings.Contains(t[len(run):], "`")) {
				mark = run
			}
		case len(fenceRun(t)) >= len(mark) && t[0] == mark[0] && strings.TrimSpace(t[len(fenceRun(t)):]) == "":
			mark = ""
		}
	}
	return mark
}

// fenceRun is the run of backticks or tildes l starts with.
func fenceRun(l string) string {
	if l == "" || (l[0] != '`' && l[0] != '~') {
		return ""
	}
	return l[:len(l)-len(strings.TrimLeft(l, l[:1]))]
}
