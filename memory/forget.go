package memory

import (
	"strings"
	"unicode"
)

// A person's "forget that" reaches the memory as a model's patch whose
// newText is empty: what its oldText matched is deleted for real. The
// lines it took away (and, for a current fact, the superseded lines of
// the same fact under "## Earlier") are the change's Forgotten lines:
// Options.Forgetting is told of them before the change is made, so the
// history drops them from every version it keeps, and the roll-ups that
// summarise a month they leave are deleted with their history. Any other
// change keeps what it replaces in the history: that is its undo.

// forgetting is what a model's patches forget: out (the patched plain
// text) without the superseded lines that go with a forgotten fact, and
// the lines forgotten. before and out are plain (no stamps); nothing is
// forgotten unless a patch's newText is blank.
func forgetting(kind Kind, before, out string, patches []Patch) (string, []string) {
	var frags []string
	for _, pt := range patches {
		if strings.TrimSpace(pt.NewText) != "" {
			continue
		}
		for _, l := range strings.Split(pt.OldText, "\n") {
			if l = strings.TrimSpace(l); hasWord(l) {
				frags = append(frags, l)
			}
		}
	}
	if len(frags) == 0 {
		return out, nil
	}
	still := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		still[ForgetKey(l)] = true
	}
	var forgot []string
	keys := map[string]bool{} // keys of current facts forgotten
	earlier := false
	for _, l := range strings.Split(before, "\n") {
		if _, ok := headingText(l, "##"); ok {
			earlier = isEarlier(l)
		}
		k := ForgetKey(l)
		if k == "" || still[k] || isEarlier(l) || !touches(l, frags) { // the section's heading is no memory
			continue
		}
		forgot = append(forgot, strings.TrimSpace(l))
		still[k] = true // once
		if kind == KindFact && !earlier && stampable(kind, l) {
			if fk := factKeyOf(l); fk != "" {
				keys[fk] = true
			}
		}
	}
	if len(keys) == 0 {
		return out, forgot
	}
	// A forgotten fact takes its past with it: the lines it replaced.
	lines := strings.Split(out, "\n")
	kept := lines[:0]
	earlier = false
	for _, l := range lines {
		if _, ok := headingText(l, "##"); ok {
			earlier = isEarlier(l)
		}
		if earlier && stampable(kind, l) && keys[factKeyOf(l)] {
			forgot = append(forgot, strings.TrimSpace(l))
			continue
		}
		kept = append(kept, l)
	}
	return dropEmptyEarlier(strings.Join(kept, "\n")), forgot
}

// dropEmptyEarlier is text without its "## Earlier" heading when nothing
// is left under it.
func dropEmptyEarlier(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !isEarlier(l) {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if _, ok := headingText(lines[j], "##"); ok {
				end = j
				break
			}
			if strings.TrimSpace(lines[j]) != "" {
				return text
			}
		}
		start := i
		for start > 0 && strings.TrimSpace(lines[start-1]) == "" {
			start--
		}
		tail := lines[end:]
		if end < len(lines) { // another section follows: one blank line before it
			tail = append([]string{""}, tail...)
		} else {
			tail = []string{""} // the file's final newline
		}
		return strings.Join(append(lines[:start:start], tail...), "\n")
	}
	return text
}

// touches says whether line held some of what a blank patch removed.
func touches(line string, frags []string) bool {
	for _, f := range frags {
		if strings.Contains(line, f) || strings.Contains(f, strings.TrimSpace(line)) {
			return true
		}
	}
	return false
}

// hasWord says whether s has a letter or a digit: "- " or "---" alone
// names nothing to forget.
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// ForgetKey is how a forgotten line is recognised in the versions the
// history keeps: without its stamp, its "(until DATE)" (the same fact,
// superseded later), case and spacing; "" for a line naming nothing.
func ForgetKey(line string) string {
	p, _ := SplitStamp(line)
	p = strings.TrimSpace(p)
	if i := strings.LastIndex(p, " (until "); i >= 0 && strings.HasSuffix(p, ")") && validDate(p[i+len(" (until "):len(p)-1]) {
		p = p[:i]
	}
	if !hasWord(p) {
		return ""
	}
	return sameFact(p)
}

// Forgets is the test of a line of a kept version against forgotten
// lines: the same line (ForgetKey), or an episode file's "> Summary:"
// line naming a forgotten entry (its title or its own summary).
func Forgets(forgotten []string) func(line string) bool {
	keys := map[string]bool{}
	names := named(forgotten)
	for _, f := range forgotten {
		if k := ForgetKey(f); k != "" {
			keys[k] = true
		}
	}
	return func(line string) bool {
		k := ForgetKey(line)
		return k != "" && (keys[k] || namesAny(line, names))
	}
}

// named are the words a file's summary would name forgotten entries by:
// their titles and their "- Summary:" values, lower case.
func named(forgotten []string) []string {
	var out []string
	for _, f := range forgotten {
		p, _ := SplitStamp(strings.TrimSpace(f))
		t, ok := headingText(p, "##")
		if !ok {
			if k, v, found := strings.Cut(p, ":"); found && strings.EqualFold(strings.TrimSpace(k), "- Summary") {
				t, ok = v, true
			}
		}
		if t = strings.ToLower(strings.TrimSpace(t)); ok && hasWord(t) {
			out = append(out, t)
		}
	}
	return out
}

// namesAny says whether line is a file-level "> Summary:" line that
// names one of names.
func namesAny(line string, names []string) bool {
	v, ok := summaryValue(line)
	if !ok {
		return false
	}
	v = strings.ToLower(v)
	for _, n := range names {
		if strings.Contains(v, n) {
			return true
		}
	}
	return false
}

// resummarised is an episode file's text after a forget: its file-level
// summary made again from the entries left when it named one forgotten.
func resummarised(p, text string, forgot []string) string {
	month, ok := MonthOf(p)
	if !ok {
		return text
	}
	header, entries, _ := parseEpisodes(text)
	names := named(forgot)
	for _, l := range strings.Split(header, "\n") {
		if namesAny(l, names) {
			return setSummary(text, episodeSummary(entries), month+" Episodes")
		}
	}
	return text
}
