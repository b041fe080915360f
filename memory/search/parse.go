package search

import (
	"strconv"
	"strings"
	"time"
)

// A unit is what a search ranks and a hit names: an episode file's "## "
// entry (its heading, "- Summary:" and "- Date:" lines and what follows,
// up to the next heading), or one line of a fact file (under the "## "
// section it sits in, if any). A file's "# Title", "> Summary:" and
// "> Visibility:" lines are the index's, not units.

// The weights of a unit's fields, in half terms (a posting holds a
// weighted term frequency in half units): a heading word counts three
// times a body word, a summary word twice, a fact's section heading once.
const (
	weightBody    = 2
	weightSummary = 4
	weightHeading = 6
	weightSection = 2
)

// parsedUnit is one unit of a file as parsed.
type parsedUnit struct {
	line, end   int // 1-based lines: the heading (or fact line) and the last
	start, stop int // byte range in the file
	date        int32
	terms       []termTF // each term once, with its weighted frequency
	length      int      // words
	earlier     bool     // a fact line under "## Earlier": superseded
	rollup      bool     // a line of a roll-up (isRollup): ranked after entries
}

// termTF is a term of a unit and its weighted frequency (half units).
type termTF struct {
	term string
	tf   int
}

// parser holds what parsing a file reuses from unit to unit: the terms
// of the unit being read, by position in its terms, so a file's parse
// makes one small map, not one per unit.
type parser struct {
	at    map[string]int
	stems *stemCache // nil: none
}

// noDate is the date of a unit without one.
const noDate int32 = -1 << 31

// dayOf is t's day number (days since 1970-01-01, UTC).
func dayOf(t time.Time) int32 {
	y, m, d := t.Date()
	return int32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// parseDay is the day number of a YYYY-MM-DD date, or noDate.
func parseDay(s string) int32 {
	if len(s) != 10 {
		return noDate
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return noDate
	}
	return dayOf(t)
}

// FormatDay is day's YYYY-MM-DD, or "" for none.
func formatDay(day int32) string {
	if day == noDate {
		return ""
	}
	return time.Unix(int64(day)*86400, 0).UTC().Format(time.DateOnly)
}

// isEpisodes reports whether path names an episode file (its units are
// entries) rather than a fact file (its units are lines).
func isEpisodes(path string) bool {
	return strings.HasPrefix(path, "episodes/") || strings.Contains(path, "/episodes/")
}

// FieldValue is the value of a "- Key: value" line when its key is key
// (any case, "- Date:" for example), trimmed.
func FieldValue(line, key string) (string, bool) {
	t := strings.TrimSpace(line)
	if len(t) < len(key) || !strings.EqualFold(t[:len(key)], key) {
		return "", false
	}
	return strings.TrimSpace(t[len(key):]), true
}

// headerLine reports whether a line is the file's own (title, summary,
// visibility), never a unit's.
func headerLine(t string) bool {
	return strings.HasPrefix(t, "# ") || t == "#" || strings.HasPrefix(t, "> Summary:") || strings.HasPrefix(t, "> Visibility:")
}

// parseFile splits a file's text into its units.
func parseFile(path, text string, stems *stemCache) []parsedUnit {
	ps := &parser{at: map[string]int{}, stems: stems}
	if end, ok := rollupEnd(path); ok {
		return ps.rollup(text, end)
	}
	if isEpisodes(path) {
		return ps.entries(text)
	}
	return ps.facts(text)
}

// lines calls fn with each line of text (without its newline; the last
// may have none), its 1-based number and byte offset.
func lines(text string, fn func(line string, n, off int)) {
	off := 0
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		fn(line, n, off)
		off += len(text) - len(rest)
		text = rest
	}
}

// add adds the terms of line s to u, each counting weight.
func (ps *parser) add(u *parsedUnit, s string, weight int) {
	if len(u.terms) == 0 {
		clear(ps.at) // a new unit
	}
	docTerms(s, ps.stems, func(t string) {
		if i, ok := ps.at[t]; ok {
			u.terms[i].tf += weight
		} else {
			ps.at[t] = len(u.terms)
			u.terms = append(u.terms, termTF{t, weight})
		}
		u.length++
	})
}

// parseEntries is an episode file's "## " entries.
func (ps *parser) entries(text string) []parsedUnit {
	var out []parsedUnit
	var cur *parsedUnit
	lines(text, func(line string, n, off int) {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			if cur != nil {
				cur.stop = off
				out = append(out, *cur)
			}
			cur = &parsedUnit{line: n, end: n, start: off, date: noDate}
			ps.add(cur, h, weightHeading)
			return
		}
		if cur == nil {
			return
		}
		if strings.TrimSpace(line) != "" {
			cur.end = n // trailing blank lines are not the entry's
		}
		if v, ok := FieldValue(line, "- Date:"); ok {
			if d := parseDay(v); d != noDate && cur.date == noDate {
				cur.date = d
				return
			}
		}
		if v, ok := FieldValue(line, "- Summary:"); ok {
			ps.add(cur, v, weightSummary)
			return
		}
		ps.add(cur, line, weightBody)
	})
	if cur != nil {
		cur.stop = len(text)
		out = append(out, *cur)
	}
	return out
}

// EarlierSection is the "## " section of a fact file that keeps the
// facts that were replaced: its lines rank after the current ones.
const EarlierSection = "Earlier"

// factKey splits a "- Key: value" line (a key of at most five words).
func factKey(t string) (key, value string, ok bool) {
	rest, ok := strings.CutPrefix(t, "- ")
	if !ok {
		return "", "", false
	}
	key, value, ok = strings.Cut(rest, ": ")
	if !ok || strings.Count(key, " ") > 4 {
		return "", "", false
	}
	return key, value, true
}

// parseFacts is a fact file's lines, each with the "## " section it is in.
func (ps *parser) facts(text string) []parsedUnit {
	var out []parsedUnit
	section := ""
	lines(text, func(line string, n, off int) {
		t := strings.TrimSpace(line)
		if t == "" || headerLine(t) {
			return
		}
		if h, ok := strings.CutPrefix(t, "## "); ok {
			section = h
			return
		}
		u := parsedUnit{line: n, end: n, start: off, stop: off + len(line), date: noDate, earlier: strings.EqualFold(section, EarlierSection)}
		// "- Dentist: Dr. Bakker": the key names what the line is about,
		// as a heading names an entry.
		if key, value, ok := factKey(t); ok {
			ps.add(&u, key, weightHeading)
			ps.add(&u, value, weightBody)
		} else {
			ps.add(&u, line, weightBody)
		}
		if u.length == 0 {
			return // only stop words or punctuation
		}
		if section != "" {
			n := u.length
			ps.add(&u, section, weightSection)
			u.length = n // context, not the line's length
		}
		out = append(out, u)
	})
	return out
}

// rollupEnd is the last day of the period a roll-up path covers
// (episodes/2026-Q1.md: 2026-03-31; episodes/2026.md: 2026-12-31);
// ok is false for any other path.
func rollupEnd(path string) (int32, bool) {
	i := strings.LastIndex(path, "episodes/")
	if i < 0 || (i > 0 && path[i-1] != '/') {
		return noDate, false
	}
	name, ok := strings.CutSuffix(path[i+len("episodes/"):], ".md")
	if !ok || len(name) < 4 {
		return noDate, false
	}
	year, err := strconv.Atoi(name[:4])
	if err != nil || year < 0 || name[0] == '+' || name[0] == '-' {
		return noDate, false
	}
	month := 12
	switch {
	case len(name) == 4:
	case len(name) == 7 && name[4:6] == "-Q" && name[6] >= '1' && name[6] <= '4':
		month = 3 * int(name[6]-'0')
	default:
		return noDate, false
	}
	// The day before the first of the next month.
	return dayOf(time.Date(year, time.Month(month)+1, 1, 0, 0, 0, 0, time.UTC)) - 1, true
}

// rollup is a roll-up file's lines, each a unit dated end (the period's
// last day) and ranked after the entries it summarises: the month files
// stay the authority. Its hidden lines (the fingerprint) are no units.
func (ps *parser) rollup(text string, end int32) []parsedUnit {
	var out []parsedUnit
	lines(text, func(line string, n, off int) {
		t := strings.TrimSpace(line)
		if t == "" || headerLine(t) || strings.HasPrefix(t, "<!--") || strings.HasPrefix(t, "## ") {
			return
		}
		u := parsedUnit{line: n, end: n, start: off, stop: off + len(line), date: end, rollup: true}
		ps.add(&u, line, weightBody)
		if u.length > 0 {
			out = append(out, u)
		}
	})
	return out
}
