package split

import (
	"strings"
	"unicode/utf8"
)

// MinLimit is the smallest limit Split honours; a smaller one is
// raised to it.
const MinLimit = 16

// Kinds of lines Split sees.
const (
	lineText = iota
	lineOpen
	lineClose
)

// fenceTicks is the shortest code fence.
const fenceTicks = "```"

// Split splits text into parts of at most limit characters (runes), in
// order: at a blank line when one is in the second half of the part, else
// at a line break, and inside a single overlong line at a space (never
// inside a <...> sequence or an &...; entity when it can be helped). A
// code block cut by a split is closed at the end of the part and reopened,
// with the same info string, at the start of the next; an unclosed block
// is closed at the end. Parts that would be empty (white space and fence
// lines only) are dropped. A limit below MinLimit is raised to it.
// Invalid UTF-8 becomes U+FFFD.
//
// A fence line starts at the beginning of its line with three or more
// backticks: an opening one has an optional info string without backticks
// ("```go"), a closing one has nothing but at least as many backticks as
// its opening one (and trailing white space). A fence line longer than
// limit/4-1 characters is treated as text, so that closing and reopening
// a block always fits.
func Text(text string, limit int) []string {
	limit = max(limit, MinLimit)
	text = strings.ToValidUTF8(text, "\uFFFD") // as any platform would
	maxFence := limit/4 - 1
	raw := strings.Split(text, "\n")
	kinds, marks := scanFences(raw, maxFence)
	// Closing and reopening a block costs at most these; lines longer than
	// what is left are wrapped. (Bare fences: 4 each.)
	openCost, closeCost := len(fenceTicks)+1, len(fenceTicks)+1
	for i, k := range kinds {
		if k == lineOpen {
			openCost = max(openCost, utf8.RuneCountInString(raw[i])+1)
			closeCost = max(closeCost, len(marks[i])+1)
		}
	}
	width := limit - openCost - closeCost

	var lines []string
	var kind []int
	for i, l := range raw {
		if kinds[i] != lineText {
			lines, kind = append(lines, l), append(kind, kinds[i])
			continue
		}
		for _, p := range wrapLine(l, width, maxFence) {
			lines, kind = append(lines, p), append(kind, lineText)
		}
	}
	n := len(lines)
	// inCode[i]: inside a code block just before line i; blockAt[i]: the
	// opening fence of that block.
	inCode := make([]bool, n+1)
	blockAt := make([]int, n+1)
	for i := range lines {
		switch kind[i] {
		case lineOpen:
			inCode[i+1], blockAt[i+1] = true, i
		case lineClose:
		default:
			inCode[i+1], blockAt[i+1] = inCode[i], blockAt[i]
		}
	}
	sum := make([]int, n+1) // sum[i]: characters in lines[:i]
	for i, l := range lines {
		sum[i+1] = sum[i] + utf8.RuneCountInString(l)
	}
	reopen := func(i int) string { return lines[blockAt[i]] }
	closer := func(i int) string { return leadingTicks(lines[blockAt[i]]) }
	size := func(i, j int) int { // the rendered length of lines[i:j]
		s := j - i - 1 + sum[j] - sum[i]
		if inCode[i] {
			s += utf8.RuneCountInString(reopen(i)) + 1
		}
		if inCode[j] {
			s += len(closer(j)) + 1
		}
		return s
	}
	var parts []string
	for i := 0; i < n; {
		j := i + 1
		for j < n && size(i, j+1) <= limit {
			j++
		}
		if j < n {
			best := j
			for k := j; k > i+1; k-- {
				if size(i, k) < limit/2 {
					break
				}
				if !inCode[k-1] && strings.TrimSpace(lines[k-1]) == "" {
					best = k
					break
				}
			}
			if best == j && kind[j-1] == lineOpen && j-1 > i {
				best = j - 1 // do not end a part with an opening fence
			}
			j = best
		}
		if !emptyPart(lines[i:j], kind[i:j]) {
			var b strings.Builder
			if inCode[i] {
				b.WriteString(reopen(i) + "\n")
			}
			b.WriteString(strings.Join(lines[i:j], "\n"))
			if inCode[j] {
				b.WriteString("\n" + closer(j))
			}
			parts = append(parts, strings.Trim(b.String(), "\n"))
		}
		i = j
	}
	return parts
}

// emptyPart: nothing but white space and fence lines.
func emptyPart(lines []string, kind []int) bool {
	for i, l := range lines {
		if kind[i] == lineText && strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

// scanFences classifies lines as text, opening or closing fences (of at
// most maxFence characters), and gives each opening fence its backticks.
func scanFences(lines []string, maxFence int) (kinds []int, marks []string) {
	kinds, marks = make([]int, len(lines)), make([]string, len(lines))
	mark := ""
	for i, l := range lines {
		if !strings.HasPrefix(l, fenceTicks) || utf8.RuneCountInString(l) > maxFence {
			continue
		}
		ticks := leadingTicks(l)
		rest := l[len(ticks):]
		switch {
		case mark == "" && !strings.Contains(rest, "`"):
			kinds[i], marks[i], mark = lineOpen, ticks, ticks
		case mark != "" && len(ticks) >= len(mark) && strings.TrimRight(rest, " \t\r") == "":
			kinds[i], mark = lineClose, ""
		}
	}
	return kinds, marks
}

// leadingTicks is the run of backticks l starts with.
func leadingTicks(l string) string {
	return l[:len(l)-len(strings.TrimLeft(l, "`"))]
}

// wrapLine cuts a text line longer than max characters into pieces, at a
// space when there is one in the second half of a piece, never inside a
// <…> sequence or an &…; entity when it can be helped. No piece can be
// read as a fence line (of at most maxFence characters): a piece other
// than the first does not start with ``` (a space is kept before one) or
// is longer than maxFence, and a piece starting with ``` keeps its trailing spaces,
// so it stays longer than maxFence.
func wrapLine(l string, max, maxFence int) []string {
	if utf8.RuneCountInString(l) <= max {
		return []string{l}
	}
	var out []string
	r := []rune(l)
	for len(r) > max {
		cut := max
		for k := max; k > max/2; k-- {
			if r[k] == ' ' {
				cut = k
				break
			}
		}
		cut = safeCut(r, cut, max/2)
		next := cut
		for next < len(r) && r[next] == ' ' {
			next++
		}
		if startsFence(r[next:]) {
			switch {
			case next > cut:
				next-- // keep one space before it
			default:
				// The cut is at max (a space or a safe cut would be
				// before it), inside or before a run of backticks that
				// goes on past max: what is left is kept too long to be a
				// fence line.
				cut = min(max, len(r)-maxFence-1)
				next = cut
			}
		}
		piece := string(r[:cut])
		if t := strings.TrimRight(piece, " "); !strings.HasPrefix(t, fenceTicks) {
			piece = t
		}
		out = append(out, piece)
		r = r[next:]
	}
	return append(out, string(r))
}

func startsFence(r []rune) bool {
	return len(r) >= 3 && r[0] == '`' && r[1] == '`' && r[2] == '`'
}

// safeCut moves cut back (not below min) so it is not inside a <…>
// sequence or an entity.
func safeCut(r []rune, cut, min int) int {
	for k := cut - 1; k > min && k >= cut-8; k-- { // entities are short: &amp; &lt; &gt;
		if r[k] == ';' {
			break
		}
		if r[k] == '&' {
			cut = k
			break
		}
	}
	for k := cut - 1; k > min; k-- {
		if r[k] == '>' {
			break
		}
		if r[k] == '<' {
			cut = k
			break
		}
	}
	return cut
}
