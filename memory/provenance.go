package memory

import (
	"slices"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/memory/search"
)

// Provenance. Each fact line and each episode entry's heading the
// reflector writes ends with a stamp saying where it learned it:
//
//	- Lives in: Berlin <!-- src: slack · dm · 2026-11-20 · https://acme.slack.com/archives/D01/p1763… -->
//
// an HTML comment (hidden by every Markdown viewer, one glance in vim)
// whose fields, split by " · ", are the surface, the place, the date, "by
// NAME" (in a channel's memory: who said it) and the message's link. The
// stamp comes from the platform event (Source), never from the model:
// the model reads files without stamps, and a stamp in what it writes is
// dropped. A line without a stamp was added by hand (or before stamps).

// stampOpen starts a stamp; it ends with stampClose at the end of a line.
const (
	stampOpen  = "<!-- src:"
	stampClose = "-->"
	stampSep   = " · "
)

// Source is where a reflection learned what it writes: the platform
// event's (mnemo.Turn), never the model's words.
type Source struct {
	Surface string // "terminal", "slack", "discord"
	Place   string // mnemo.Origin.Place: "dm", "#C03GHI", "#C03GHI thread"; "" on the terminal
	Date    time.Time
	By      string // who said it; a View sets it for the channel's memory only
	Link    string // the message's URL, "" where none
}

// SourceOf is where turn t was said.
func SourceOf(t mnemo.Turn) Source {
	surface := t.Platform
	if surface == "console" || surface == "" {
		surface = "terminal"
	}
	by := t.Speaker
	if by == "" {
		by = t.User
	}
	return Source{Surface: surface, Place: t.Origin.Place, Date: t.Time, By: by, Link: t.Origin.Link}
}

// Stamp is a parsed provenance stamp.
type Stamp struct {
	Surface, Place, Date, By, Link string
}

// stamp renders s as the comment that ends a line.
func (s Source) stamp() string {
	f := []string{stampField(s.Surface)}
	if p := stampField(s.Place); p != "" {
		f = append(f, p)
	}
	if !s.Date.IsZero() {
		f = append(f, s.Date.Format(time.DateOnly))
	}
	if b := stampField(s.By); b != "" {
		f = append(f, "by "+b)
	}
	if l := stampField(s.Link); strings.HasPrefix(l, "https://") && !strings.ContainsAny(l, " ") {
		f = append(f, l)
	}
	return stampOpen + " " + strings.Join(f, stampSep) + " " + stampClose
}

// stampField is v made safe inside a stamp: one line of at most 200
// runes, with nothing that could end the comment or split a field.
func stampField(v string) string {
	v = text.OneLine(v)
	for _, bad := range []string{"-->", "<!--", "·", "<", ">"} {
		v = strings.ReplaceAll(v, bad, "")
	}
	for strings.Contains(v, "--") {
		v = strings.ReplaceAll(v, "--", "-")
	}
	v = strings.Join(strings.Fields(v), " ")
	if r := []rune(v); len(r) > 200 {
		v = strings.TrimSpace(string(r[:200]))
	}
	return v
}

// SplitStamp splits a line into its text and its stamp ("" when it has
// none): a stamp is a "<!-- src: … -->" comment at the line's end.
func SplitStamp(line string) (plain, stamp string) {
	t := strings.TrimRight(line, " \t\r")
	if !strings.HasSuffix(t, stampClose) {
		return line, ""
	}
	i := strings.LastIndex(t, stampOpen)
	if i < 0 || strings.Contains(t[i+len(stampOpen):len(t)-len(stampClose)], stampClose) {
		return line, ""
	}
	return strings.TrimRight(t[:i], " \t"), t[i:]
}

// ParseStamp reads the fields of a stamp (as SplitStamp gives it).
func ParseStamp(stamp string) (Stamp, bool) {
	inner, ok := strings.CutPrefix(stamp, stampOpen)
	if !ok {
		return Stamp{}, false
	}
	inner, ok = strings.CutSuffix(inner, stampClose)
	if !ok {
		return Stamp{}, false
	}
	var s Stamp
	for i, f := range strings.Split(inner, "·") {
		f = strings.TrimSpace(f)
		switch by, isBy := strings.CutPrefix(f, "by "); {
		case f == "":
		case i == 0:
			s.Surface = f
		case validDate(f):
			s.Date = f
		case isBy:
			s.By = by
		case strings.HasPrefix(f, "https://"):
			s.Link = f
		default:
			s.Place = f
		}
	}
	return s, true
}

// StripStamps is text without its stamps: what the model reads. Lines
// keep their numbers.
func StripStamps(s string) string {
	if !strings.Contains(s, stampOpen) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i], _ = SplitStamp(l)
	}
	return strings.Join(lines, "\n")
}

// stamping is how a model's change is stamped: src (nil: no new stamps,
// the kept ones stay) stamps each line it adds or changes with the turn
// that said it (see Attribution), and, in fact files, the lines it names
// again (touched: a patch's newText lines, told again in this
// conversation).
type stamping struct {
	src     *attribution
	touched map[string]bool
}

// earlierHeading is the section of a fact file that keeps replaced facts.
const earlierHeading = "## " + search.EarlierSection

// stampable says whether line carries a stamp in a file of kind: a fact
// file's "- " lines, an episode file's "## " headings.
func stampable(kind Kind, line string) bool {
	if kind == KindEpisode {
		_, ok := headingText(line, "##")
		return ok
	}
	return strings.HasPrefix(strings.TrimLeft(line, " \t"), "- ")
}

// isEarlier says whether line is the "## Earlier" heading.
func isEarlier(line string) bool {
	h, ok := headingText(line, "##")
	return ok && strings.EqualFold(strings.TrimSpace(h), search.EarlierSection)
}

// factKeyOf is the key of a "- Key: value" fact line, lower case; "" for
// none.
func factKeyOf(line string) string {
	rest := strings.TrimPrefix(strings.TrimLeft(line, " \t"), "- ")
	key, _, ok := strings.Cut(rest, ":")
	if !ok || len(key) > 60 || strings.TrimSpace(key) == "" {
		return ""
	}
	return strings.ToLower(strings.Join(strings.Fields(key), " "))
}

// sameFact normalises a fact line for duplicate detection: case, spaces
// and a final full stop do not make another fact.
func sameFact(line string) string {
	t := strings.ToLower(strings.Join(strings.Fields(strings.ReplaceAll(line, ":", ": ")), " "))
	return strings.TrimRight(t, ".;, ")
}

// outLine is one line of a change's result.
type outLine struct {
	plain, stamp string
	fresh        bool // stamped by this change: with turn said of its batch
	said         int
	earlier      bool // under "## Earlier"
	drop         bool // a duplicate merged into an earlier line
}

// apply stamps plain, the new text of a file of kind whose text was old
// (with its stamps). A line the change left as it was keeps its stamp (or
// none: by hand); a line it added or changed gets the stamp of the turn
// that said it (an episode heading: the turn that said its entry). In a
// fact file, with a source: a current fact line the change replaced by
// another of the same key ("- Lives in: Lyon" → "- Lives in: Berlin")
// moves under "## Earlier" with "(until DATE)" (the day the new line was
// said) and its stamp, not deleted; and a fact line the change adds
// twice, or adds again beside the same line, is one line with the newest
// stamp.
func (st stamping) apply(kind Kind, old, plain string) string {
	oldLines := strings.Split(old, "\n")
	type oldLine struct {
		plain, stamp string
		current      bool
		used         bool
	}
	olds := make([]oldLine, len(oldLines))
	byText := map[string][]int{}
	earlier := false
	for i, l := range oldLines {
		p, s := SplitStamp(l)
		if _, ok := headingText(p, "##"); ok {
			earlier = isEarlier(p)
		}
		olds[i] = oldLine{plain: p, stamp: s, current: !earlier}
		byText[p] = append(byText[p], i)
	}
	att := st.src
	newLines := strings.Split(plain, "\n")
	out := make([]outLine, len(newLines))
	earlier = false
	stampFresh := func(o *outLine, i int) {
		said := newLines[i]
		if kind == KindEpisode {
			said = entryText(newLines, i)
		}
		o.said = att.pick(said)
		o.stamp, o.fresh = att.stamp(o.said), true
	}
	for i, l := range newLines {
		if _, ok := headingText(l, "##"); ok {
			earlier = isEarlier(l)
		}
		o := outLine{plain: l, earlier: earlier}
		if idx := byText[l]; len(idx) > 0 {
			byText[l] = idx[1:]
			olds[idx[0]].used = true
			o.stamp = olds[idx[0]].stamp
		} else if att != nil && stampable(kind, l) {
			stampFresh(&o, i)
		}
		if att != nil && kind == KindFact && !o.fresh && st.touched[strings.TrimSpace(l)] && stampable(kind, l) {
			stampFresh(&o, i) // told again: the newest source
		}
		out[i] = o
	}
	if att == nil || kind != KindFact {
		return render(out)
	}
	// Duplicates the change made: one line, the newest stamp, on the line
	// that was there (its text and place) when there was one.
	groups := map[string][]int{}
	var order []string
	for i, o := range out {
		if o.earlier || !stampable(kind, o.plain) {
			continue
		}
		k := sameFact(o.plain)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	current := map[string]bool{}
	for _, k := range order {
		current[k] = true
		g := groups[k]
		keep, newest := -1, -1
		for _, i := range g {
			if out[i].fresh {
				if newest < 0 || out[i].said >= out[newest].said {
					newest = i
				}
			} else if keep < 0 {
				keep = i
			}
		}
		if len(g) < 2 || newest < 0 {
			continue // a person's own duplicates stay theirs
		}
		if keep < 0 {
			keep = g[0]
		}
		for _, i := range g {
			if i != keep {
				dropLine(out, i)
			}
		}
		out[keep].stamp, out[keep].fresh, out[keep].said = out[newest].stamp, true, out[newest].said
	}
	// Replaced facts: kept under "## Earlier", until the day the line
	// that replaced them was said.
	changedKeys := map[string]int{}
	for _, o := range out {
		if o.fresh && !o.earlier && !o.drop {
			if k := factKeyOf(o.plain); k != "" {
				if j, ok := changedKeys[k]; !ok || o.said > j {
					changedKeys[k] = o.said
				}
			}
		}
	}
	var superseded []outLine
	for _, ol := range olds {
		said, changed := changedKeys[factKeyOf(ol.plain)]
		if ol.used || !ol.current || !stampable(kind, ol.plain) || !changed || current[sameFact(ol.plain)] {
			continue // kept, not a fact line, not replaced, or still there in other words
		}
		p := strings.TrimRight(ol.plain, " \t")
		if d := att.source(said).Date; !strings.Contains(p, "(until ") && !d.IsZero() {
			p += " (until " + d.Format(time.DateOnly) + ")"
		}
		superseded = append(superseded, outLine{plain: p, stamp: ol.stamp, earlier: true})
	}
	if len(superseded) > 0 {
		out = withEarlier(out, superseded)
	}
	return render(out)
}

// dropLine drops line i of out, and a blank line before it when that
// would leave a gap: another blank after it (or the end), or a list
// continuing on both sides.
func dropLine(out []outLine, i int) {
	out[i].drop = true
	live := func(j int) bool { return j >= 0 && j < len(out) && !out[j].drop }
	blank := func(j int) bool { return live(j) && strings.TrimSpace(out[j].plain) == "" }
	item := func(j int) bool { return live(j) && stampable(KindFact, out[j].plain) }
	if blank(i-1) && (blank(i+1) || i+1 == len(out) || item(i-2) && item(i+1)) {
		out[i-1].drop = true
	}
}

// withEarlier puts lines at the top of out's "## Earlier" section (the
// newest first), making the section at the end when there is none.
func withEarlier(out, lines []outLine) []outLine {
	for i, o := range out {
		if !o.drop && isEarlier(o.plain) {
			at := i + 1
			if at < len(out) && strings.TrimSpace(out[at].plain) == "" {
				at++
			}
			return slices.Insert(out, at, lines...)
		}
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1].plain) == "" {
		out = out[:len(out)-1]
	}
	out = append(out, outLine{}, outLine{plain: earlierHeading}, outLine{})
	out = append(out, lines...)
	return append(out, outLine{})
}

func render(out []outLine) string {
	var b strings.Builder
	n := 0
	for _, o := range out {
		if o.drop {
			continue
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		n++
		b.WriteString(o.plain)
		if o.stamp != "" {
			if o.plain != "" {
				b.WriteByte(' ')
			}
			b.WriteString(o.stamp)
		}
	}
	return b.String()
}

// touchedLines are the lines a patch tells again: in a fact file their
// source becomes this conversation's. A patch whose newText is its
// oldText confirms those lines; otherwise the lines its newText adds
// (not the ones it repeats from oldText to anchor itself).
func touchedLines(patches []Patch) map[string]bool {
	t := map[string]bool{}
	for _, p := range patches {
		anchor := map[string]bool{}
		if strings.TrimSpace(p.OldText) != strings.TrimSpace(p.NewText) {
			for _, l := range strings.Split(p.OldText, "\n") {
				anchor[strings.TrimSpace(l)] = true
			}
		}
		for _, l := range strings.Split(p.NewText, "\n") {
			if l = strings.TrimSpace(l); l != "" && !anchor[l] {
				t[l] = true
			}
		}
	}
	return t
}

// stampEntry stamps the heading of an episode entry with the turn of
// src that said it (its whole text); and finds, in cur, an entry that is
// the same (its heading's text, without case and spacing, and its date):
// then it returns cur with that heading's stamp renewed instead, and dup
// true, so an entry told twice is one.
func stampEntry(cur, entry string, e episode, src *attribution) (stamped string, renewed string, dup bool) {
	if src == nil {
		return entry, "", false
	}
	fresh := src.stamp(src.pick(entry))
	_, entries, _ := parseEpisodes(StripStamps(cur))
	lines := strings.Split(cur, "\n")
	for _, x := range entries {
		if x.Date == e.Date && sameFact(x.Title) == sameFact(e.Title) && x.Line-1 < len(lines) {
			plain, _ := SplitStamp(lines[x.Line-1])
			lines[x.Line-1] = plain + " " + fresh
			return "", strings.Join(lines, "\n"), true
		}
	}
	el := strings.Split(entry, "\n")
	for i, l := range el {
		if _, ok := headingText(l, "##"); ok {
			el[i] = strings.TrimRight(l, " \t") + " " + fresh
			break
		}
	}
	return strings.Join(el, "\n"), "", false
}
