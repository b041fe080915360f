package memory

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/memory/search"
)

const (
	maxSummaryLen    = 200 // bytes of a summary shown in the index
	episodeSumBudget = 120 // bytes of a regenerated episode-file summary
)

// isInvisible reports the characters that can smuggle instructions past a
// person reading the file: Unicode tags, bidi controls and zero-width marks.
func isInvisible(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C: // bidi
		return true
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E: // zero-width
		return true
	}
	return false
}

// StripInvisible removes invisible characters and invalid UTF-8 from text a
// model wants written, so what is stored is what a person sees in an editor.
func StripInvisible(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || isInvisible(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		if (r == utf8.RuneError && n == 1) || isInvisible(r) {
			continue
		}
		b.WriteString(s[i : i+n])
	}
	return b.String()
}

// oneLine makes s a single printable line of at most max bytes.
func oneLine(s string, max int) string {
	return truncate(text.OneLine(StripInvisible(s)), max)
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return text.Cut(s, max-len("…")) + "…"
}

// summaryValue returns the text after "> Summary:" when line is one.
func summaryValue(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, ">") {
		return "", false
	}
	t = strings.TrimSpace(t[1:])
	if len(t) < 8 || !strings.EqualFold(t[:8], "summary:") {
		return "", false
	}
	return strings.TrimSpace(t[8:]), true
}

func headingText(line string, level string) (string, bool) {
	t := strings.TrimRight(line, " \t\r")
	if !strings.HasPrefix(t, level+" ") {
		return "", false
	}
	return strings.TrimSpace(t[len(level)+1:]), true
}

// FileSummary returns the file-level "> Summary:" of a memory file (searched
// above the first "## " entry), falling back to its "# Title", then to its
// first non-blank line, so a hand-written file without a summary still lists.
func FileSummary(text string) string {
	text = strings.TrimPrefix(text, "\ufeff") // a BOM some Windows editors add
	title, first := "", ""
	for _, line := range strings.Split(text, "\n") {
		if _, ok := headingText(line, "##"); ok {
			break
		}
		if v, ok := summaryValue(line); ok {
			if s := oneLine(v, maxSummaryLen); s != "" {
				return s
			}
		}
		if t, ok := headingText(line, "#"); ok && title == "" {
			title = t
		}
		if first == "" && strings.TrimSpace(line) != "" {
			plain, _ := SplitStamp(line) // a line's source is no summary (nor for a channel to see)
			first = strings.TrimLeft(strings.TrimSpace(plain), "#>-* ")
		}
	}
	for _, c := range []string{title, first} {
		if s := oneLine(c, maxSummaryLen); s != "" {
			return s
		}
	}
	// An episode file may have entries but no header at all.
	if _, entries, _ := parseEpisodes(text); len(entries) > 0 {
		if s := episodeSummary(entries); s != "" {
			return s
		}
		if s := oneLine(entries[0].Title, maxSummaryLen); s != "" {
			return s
		}
	}
	return "(empty)"
}

// checkFact refuses fact content a person could not read at a glance.
func checkFact(content string) error {
	var title, summary bool
	for _, line := range strings.Split(content, "\n") {
		if t, ok := headingText(line, "#"); ok && t != "" {
			title = true
		}
		if v, ok := summaryValue(line); ok && v != "" {
			summary = true
		}
	}
	switch {
	case !title && !summary:
		return errors.New(`content needs a "# Title" line and, under it, a "> Summary: ..." line of a few words`)
	case !title:
		return errors.New(`content needs a "# Title" line at the top`)
	case !summary:
		return errors.New(`content needs a "> Summary: ..." line under the title: a few words saying what the file holds`)
	}
	return nil
}

// episode is one "## Title" entry of an episode file.
type episode struct {
	Title   string
	Summary string
	Date    string
	Line    int // 1-based line of the heading
}

const datePrefix = "- date:"
const entrySumPrefix = "- summary:"

func validDate(d string) bool {
	_, err := time.Parse(time.DateOnly, d)
	return err == nil && len(d) == 10
}

// parseEpisodes splits an episode file into its entries and reports entries
// that lack a summary or a valid date (what `mnemo memory check` calls torn).
func parseEpisodes(text string) (header string, entries []episode, problems []string) {
	lines := strings.Split(text, "\n")
	var cur *episode
	flush := func() {
		if cur == nil {
			return
		}
		if cur.Summary == "" {
			problems = append(problems, fmt.Sprintf("line %d: entry %q has no \"- Summary:\" line", cur.Line, cur.Title))
		}
		if !validDate(cur.Date) {
			problems = append(problems, fmt.Sprintf("line %d: entry %q has no \"- Date: YYYY-MM-DD\" line", cur.Line, cur.Title))
		}
		entries = append(entries, *cur)
	}
	headerEnd := len(lines)
	for i, line := range lines {
		if t, ok := headingText(line, "##"); ok {
			flush()
			if cur == nil {
				headerEnd = i
			}
			t, _ = SplitStamp(t)
			cur = &episode{Title: t, Line: i + 1}
			continue
		}
		if cur == nil {
			continue
		}
		if v, ok := search.FieldValue(line, entrySumPrefix); ok && cur.Summary == "" {
			cur.Summary = v
		} else if v, ok := search.FieldValue(line, datePrefix); ok && cur.Date == "" {
			cur.Date = v
		}
	}
	flush()
	return strings.Join(lines[:headerEnd], "\n"), entries, problems
}

// parseEntry validates one entry given to memory_append.
func parseEntry(entry string) (episode, error) {
	_, entries, problems := parseEpisodes(entry)
	lead := strings.TrimSpace(entry)
	switch {
	case lead == "":
		return episode{}, errors.New("entry is empty: give a \"## Title\" line, then \"- Summary: ...\" and \"- Date: YYYY-MM-DD\" lines, then details")
	case !strings.HasPrefix(lead, "## "):
		return episode{}, errors.New("entry must start with a \"## Title\" line, then \"- Summary: ...\" and \"- Date: YYYY-MM-DD\" lines")
	case len(entries) != 1:
		return episode{}, fmt.Errorf("entry holds %d \"## \" headings: append one entry per call", len(entries))
	case strings.Contains("\n"+lead, "\n# "):
		return episode{}, errors.New("entry must not contain a \"# \" file title: the file's title is managed by mnemo")
	case len(problems) > 0:
		e := entries[0]
		if e.Summary == "" {
			return e, errors.New("entry needs a \"- Summary: ...\" line under its title: a few words, shorthand welcome")
		}
		return e, fmt.Errorf("entry needs a \"- Date: YYYY-MM-DD\" line (got %q)", e.Date)
	}
	return entries[0], nil
}

// episodeSummary joins the newest entry summaries that fit the budget, in
// date order, marking with "…" that older ones were left out.
func episodeSummary(entries []episode) string {
	var parts []string
	used := 0
	for i := len(entries) - 1; i >= 0; i-- {
		s := oneLine(entries[i].Summary, maxSummaryLen)
		if s == "" {
			continue
		}
		if used > 0 && used+len(s)+2 > episodeSumBudget {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, s)
		used += len(s) + 2
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return truncate(strings.Join(parts, ", "), episodeSumBudget)
}

// setSummary replaces the file-level summary line (adding one under the
// title, or a title and one, when missing) and leaves everything else alone.
func setSummary(text, summary, title string) string {
	line := "> Summary: " + summary
	header, _, _ := parseEpisodes(text)
	lines := strings.Split(text, "\n")
	hlen := len(strings.Split(header, "\n"))
	titleAt := -1
	for i := 0; i < hlen && i < len(lines); i++ {
		if _, ok := summaryValue(lines[i]); ok {
			lines[i] = line
			return strings.Join(lines, "\n")
		}
		if _, ok := headingText(lines[i], "#"); ok && titleAt < 0 {
			titleAt = i
		}
	}
	if titleAt < 0 {
		return "# " + title + "\n\n" + line + "\n\n" + strings.TrimLeft(text, "\n")
	}
	out := append([]string{}, lines[:titleAt+1]...)
	out = append(out, "", line)
	rest := lines[titleAt+1:]
	if len(rest) > 0 && strings.TrimSpace(rest[0]) != "" {
		out = append(out, "")
	}
	return strings.Join(append(out, rest...), "\n")
}
