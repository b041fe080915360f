package recallbench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The generated memory's span and the day its questions are asked on (a
// Sunday).
var (
	genFirst = day("2025-06-01")
	genLast  = day("2026-11-28")
	genToday = day("2026-11-29")
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// entry is one generated episode entry; path and line are set when its
// file is written.
type entry struct {
	date           time.Time
	title, summary string
	body           []string
	host           bool // may carry other entries' planted lines and noise
	path           string
	line           int
}

// instances are a topic's entries, in date order.
type instances struct {
	t       *topic
	entries []*entry
}

// gen is one generation's state.
type gen struct {
	r       *rand.Rand
	entries []*entry
}

// Generate builds the memory of one person over a year and a half (June
// 2025 to November 2026, asked on 29 November 2026) and the questions
// about it, the same for the same seed.
func Generate(seed int64) Set {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x6d6e656d6f))}
	s := Set{Name: fmt.Sprintf("generated (seed %d)", seed), Files: map[string]string{}, Today: genToday}

	// Topics that recur.
	var recurring []instances
	for i := range topics {
		t := &topics[i]
		recurring = append(recurring, instances{t: t, entries: g.topic(t)})
	}
	// One-off scenarios.
	scen := make([]*entry, len(scenarios))
	for i, sc := range scenarios {
		e := &entry{date: g.scenarioDate(sc.date), title: sc.title, summary: sc.summary, body: slices.Clone(sc.body)}
		pool := workDetails
		if i >= len(workScenarios) {
			pool = lifeDetails
		}
		for _, k := range g.r.Perm(len(pool))[:3+g.r.IntN(5)] {
			e.body = append(e.body, g.detailLine(pool[k]))
		}
		scen[i] = e
		g.entries = append(g.entries, e)
	}
	// Ordinary days up to 560–620 entries.
	seen := map[string]bool{} // a month's ordinary days are not the same twice
	for target := 560 + g.r.IntN(61); len(g.entries) < target; {
		e := g.filler()
		if k := e.date.Format("2006-01") + e.title + e.summary; !seen[k] {
			seen[k] = true
			g.entries = append(g.entries, e)
		}
	}
	// Lines in other senses, in the ordinary days and the topics' entries.
	var hosts []*entry
	for _, e := range g.entries {
		if e.host {
			hosts = append(hosts, e)
		}
	}
	for i, sc := range scenarios {
		for j, k := range g.r.Perm(len(hosts))[:len(sc.plant)] {
			hosts[k].body = append(hosts[k].body, sc.plant[j])
		}
		// Later entries mention it again.
		var later []*entry
		for _, h := range hosts {
			if h.date.After(scen[i].date) {
				later = append(later, h)
			}
		}
		ls := echoes[sc.title]
		for j, k := range g.r.Perm(len(later))[:min(len(ls), len(later))] {
			later[k].body = append(later[k].body, ls[j])
		}
	}
	g.writeEpisodes(s.Files)
	factLines := g.writeFacts(s.Files)

	// Questions, by kind.
	var qs []Question
	add := func(kind, query string, ev ...Evidence) {
		qs = append(qs, Question{Kind: kind, Query: query, Evidence: ev})
	}
	for i, sc := range scenarios {
		for _, a := range sc.asks {
			add(a.kind, a.query, Evidence{scen[i].path, scen[i].line})
		}
	}
	for _, f := range factLines {
		for _, a := range f.asks {
			add(a.kind, a.query, f.ev)
		}
	}
	used := map[string]int{}
	for _, in := range recurring {
		for _, q := range g.temporal(in, used) {
			add("temporal", q.query, q.ev...)
		}
	}
	// Other places that answer the same question.
	for i := range qs {
		for _, ref := range also[qs[i].Query] {
			ev, ok := g.find(ref, s.Files)
			if !ok {
				panic("recallbench: no " + ref)
			}
			qs[i].Evidence = append(qs[i].Evidence, ev)
		}
	}
	n := map[string]int{}
	for _, k := range Kinds {
		for _, q := range qs {
			if q.Kind == k {
				n[k]++
				q.ID = fmt.Sprintf("%s-%02d", k, n[k])
				s.Questions = append(s.Questions, q)
			}
		}
	}
	return s
}

// pick is one of xs.
func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

// find is the evidence a reference of also names.
func (g *gen) find(ref string, files map[string]string) (Evidence, bool) {
	kind, rest, _ := strings.Cut(ref, "|")
	switch kind {
	case "title", "summary":
		for _, e := range g.entries {
			if kind == "title" && e.title == rest || kind == "summary" && strings.HasPrefix(e.summary, rest) {
				return Evidence{e.path, e.line}, true
			}
		}
	case "fact":
		path, start, _ := strings.Cut(rest, "|")
		for i, l := range strings.Split(files[path], "\n") {
			if strings.HasPrefix(l, start) {
				return Evidence{path, i + 1}, true
			}
		}
	}
	return Evidence{}, false
}

// detailLine fills a detail line's number or colleague.
func (g *gen) detailLine(l string) string {
	if i := strings.IndexByte(l, '{'); i >= 0 {
		j := strings.IndexByte(l, '}')
		var lo, hi int
		fmt.Sscanf(l[i+1:j], "%d-%d", &lo, &hi)
		return l[:i] + strconv.Itoa(lo+g.r.IntN(hi-lo+1)) + l[j+1:]
	}
	if strings.Contains(l, "%s") {
		return fmt.Sprintf(l, g.pick(colleagues))
	}
	return l
}

// scenarioDate is a day for a scenario's date: a day, some day of a month,
// or any day.
func (g *gen) scenarioDate(s string) time.Time {
	switch len(s) {
	case 10:
		return day(s)
	case 7:
		first := day(s + "-01")
		return first.AddDate(0, 0, g.r.IntN(28))
	}
	return g.anyDay()
}

func (g *gen) anyDay() time.Time {
	span := int(genLast.Sub(genFirst).Hours() / 24)
	return genFirst.AddDate(0, 0, g.r.IntN(span+1))
}

// topic makes a topic's entries on its schedule.
func (g *gen) topic(t *topic) []*entry {
	sc := t.sched
	var dates []time.Time
	for d := day(sc.first); !d.After(day(sc.until)); d = d.AddDate(0, 0, sc.step) {
		if g.r.Float64() < sc.keep {
			dates = append(dates, d)
		}
	}
	for _, f := range sc.force {
		if d := day(f); !slices.ContainsFunc(dates, d.Equal) {
			dates = append(dates, d)
		}
	}
	slices.SortFunc(dates, func(a, b time.Time) int { return a.Compare(b) })
	order := make([]int, len(t.details))
	for i := range order {
		order[i] = i
	}
	if !t.ordered {
		g.r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var out []*entry
	for i, d := range dates {
		// Ordered details follow the dates, stretched over them.
		k := i % len(order)
		if t.ordered {
			k = i * len(order) / len(dates)
			if len(dates) <= len(order) {
				k = i
			}
		}
		det := t.details[order[k]]
		label := det.short
		if t.key == "nimbus" {
			label = nimbusVersion(i)
		}
		var titles []string
		for _, ti := range t.titles {
			if label != "" || !strings.Contains(ti, "%s") {
				titles = append(titles, ti)
			}
		}
		title := g.pick(titles)
		if strings.Contains(title, "%s") {
			title = fmt.Sprintf(title, label)
		}
		e := &entry{date: d, title: title, summary: det.summary, body: slices.Clone(det.body), host: true}
		if len(t.lines) > 0 && g.r.IntN(2) == 0 {
			e.body = append(e.body, g.pick(t.lines))
		}
		if g.r.IntN(4) == 0 {
			e.body = append(e.body, g.pick(noise))
		}
		out = append(out, e)
		g.entries = append(g.entries, e)
	}
	return out
}

// nimbusVersion is the i-th release's version: 2.4 on, 3.0 from the tenth.
func nimbusVersion(i int) string {
	if i < 9 {
		return fmt.Sprintf("2.%d", 4+i)
	}
	return fmt.Sprintf("3.%d", i-9)
}

// filler is an ordinary day's entry.
func (g *gen) filler() *entry {
	f := fillers[g.r.IntN(len(fillers))]
	title := f.title
	if len(f.subs) > 0 {
		title = fmt.Sprintf(title, g.pick(f.subs))
	}
	e := &entry{date: g.anyDay(), title: title, summary: g.pick(f.summaries), host: true}
	for range g.r.IntN(3) {
		if l := g.pick(noise); !slices.Contains(e.body, l) {
			e.body = append(e.body, l)
		}
	}
	return e
}

// writeEpisodes writes the entries into their month's files, noting each
// entry's path and heading line.
func (g *gen) writeEpisodes(files map[string]string) {
	slices.SortStableFunc(g.entries, func(a, b *entry) int { return a.date.Compare(b.date) })
	byMonth := map[string][]*entry{}
	var months []string
	for _, e := range g.entries {
		m := e.date.Format("2006-01")
		if _, ok := byMonth[m]; !ok {
			months = append(months, m)
		}
		byMonth[m] = append(byMonth[m], e)
	}
	for _, m := range months {
		es := byMonth[m]
		var heads []string
		for _, e := range es[:min(3, len(es))] {
			heads = append(heads, e.title)
		}
		path := "episodes/" + m + ".md"
		lines := []string{"# " + m + " Episodes", "", "> Summary: " + strings.Join(heads, "; "), ""}
		for _, e := range es {
			e.path, e.line = path, len(lines)+1
			lines = append(lines, "## "+e.title, "- Summary: "+e.summary, "- Date: "+e.date.Format(time.DateOnly))
			lines = append(lines, e.body...)
			lines = append(lines, "")
		}
		files[path] = strings.Join(lines, "\n")
	}
}

// factEvidence is a fact line's place and the questions it answers.
type factEvidence struct {
	ev   Evidence
	asks []ask
}

// writeFacts writes the fact files and returns their asked lines.
func (g *gen) writeFacts(files map[string]string) []factEvidence {
	var out []factEvidence
	for _, f := range factFiles {
		path := "facts/" + f.name + ".md"
		lines := []string{"# " + f.title, "", "> Summary: " + f.summary, ""}
		for _, l := range f.lines {
			if strings.HasPrefix(l.text, "## ") && len(lines) > 4 && lines[len(lines)-1] != "" {
				lines = append(lines, "")
			}
			lines = append(lines, l.text)
			if len(l.asks) > 0 {
				out = append(out, factEvidence{Evidence{path, len(lines)}, l.asks})
			}
		}
		files[path] = strings.Join(lines, "\n") + "\n"
	}
	return out
}

// tq is a temporal question and its evidence.
type tq struct {
	query string
	ev    []Evidence
}

// cue is a way a person says when: its words, the days it means (from,
// to inclusive) or the latest or earliest occurrence.
type cue struct {
	kind, phrase     string
	from, to         time.Time
	latest, earliest bool
}

// temporal writes a topic's questions about its occurrences told apart by
// time; used counts the cues' kinds over the whole set, to vary them.
func (g *gen) temporal(in instances, used map[string]int) []tq {
	t := in.t
	var cands []cue
	seen := map[string]bool{}
	addCue := func(c cue) {
		if !seen[c.phrase] {
			seen[c.phrase] = true
			cands = append(cands, c)
		}
	}
	for _, e := range in.entries {
		for _, c := range cuesFor(e.date, genToday) {
			addCue(c)
		}
	}
	if len(t.last) > 0 {
		addCue(cue{kind: "latest", phrase: "latest", latest: true})
	}
	if len(t.first) > 0 {
		addCue(cue{kind: "earliest", phrase: "earliest", earliest: true})
	}
	g.r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	slices.SortStableFunc(cands, func(a, b cue) int { return used[a.kind] - used[b.kind] })
	var out []tq
	kinds := map[string]bool{}
	for _, c := range cands {
		if len(out) == t.n {
			break
		}
		if kinds[c.kind] {
			continue
		}
		var ev []Evidence
		switch {
		case c.latest:
			e := in.entries[len(in.entries)-1]
			ev = []Evidence{{e.path, e.line}}
		case c.earliest:
			e := in.entries[0]
			ev = []Evidence{{e.path, e.line}}
		default:
			for _, e := range in.entries {
				if !e.date.Before(c.from) && !e.date.After(c.to) {
					ev = append(ev, Evidence{e.path, e.line})
				}
			}
		}
		if len(ev) == 0 || len(ev) > 3 {
			continue
		}
		var q string
		switch {
		case c.latest:
			q = g.pick(t.last)
		case c.earliest:
			q = g.pick(t.first)
		default:
			q = strings.Replace(g.pick(t.asks), "{when}", c.phrase, 1)
		}
		kinds[c.kind] = true
		used[c.kind]++
		out = append(out, tq{q, ev})
	}
	return out
}

// cuesFor are the ways a person asking on today could point at day d, with
// the days each means.
func cuesFor(d, today time.Time) []cue {
	var out []cue
	y, m := d.Year(), d.Month()
	monthFrom := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	monthTo := monthFrom.AddDate(0, 1, -1)
	ago := int(today.Sub(d).Hours() / 24)
	name := m.String()
	prev := today.AddDate(0, -1, 0)
	switch {
	case y == today.Year() && m == today.Month():
		out = append(out, cue{kind: "thismonth", phrase: "earlier this month", from: monthFrom, to: today})
	case y == prev.Year() && m == prev.Month():
		out = append(out, cue{kind: "lastmonth", phrase: "last month", from: monthFrom, to: monthTo})
	case monthFrom.AddDate(1, 0, 0).After(today): // the latest month of that name
		out = append(out, cue{kind: "month", phrase: "in " + name, from: monthFrom, to: monthTo},
			cue{kind: "month", phrase: "back in " + name, from: monthFrom, to: monthTo})
	default:
		out = append(out, cue{kind: "monthyear", phrase: fmt.Sprintf("in %s %d", name, y), from: monthFrom, to: monthTo},
			cue{kind: "monthyear", phrase: "in " + name + " last year", from: monthFrom, to: monthTo})
	}
	// Seasons (northern): the one d is in, as said on today.
	sy, sm := y, m
	if m <= 2 {
		sy-- // January and February are the winter that began in December
	}
	var season string
	var sFrom time.Time
	switch {
	case sm >= 3 && sm <= 5:
		season, sFrom = "spring", time.Date(sy, 3, 1, 0, 0, 0, 0, time.UTC)
	case sm >= 6 && sm <= 8:
		season, sFrom = "summer", time.Date(sy, 6, 1, 0, 0, 0, 0, time.UTC)
	case sm >= 9 && sm <= 11:
		season, sFrom = "autumn", time.Date(sy, 9, 1, 0, 0, 0, 0, time.UTC)
	default:
		season, sFrom = "winter", time.Date(sy, 12, 1, 0, 0, 0, 0, time.UTC)
	}
	sTo := sFrom.AddDate(0, 3, -1)
	var phrases []string
	switch {
	case !today.Before(sFrom) && !today.After(sTo):
		phrases = []string{"this " + season}
		if season == "autumn" {
			phrases = append(phrases, "this fall")
		}
	case today.Sub(sTo) < 300*24*time.Hour:
		switch season {
		case "spring":
			phrases = []string{"back in the spring", "in the spring"}
		case "summer":
			phrases = []string{"over the summer", "this summer"}
		case "winter":
			phrases = []string{"over the winter", "last winter"}
		default:
			phrases = []string{"last " + season}
		}
	default:
		phrases = []string{fmt.Sprintf("in the %s of %d", season, sy)}
		if season == "autumn" {
			phrases = append(phrases, "in the fall last year")
		}
	}
	for _, p := range phrases {
		out = append(out, cue{kind: "season", phrase: p, from: sFrom, to: sTo})
	}
	// Days just past.
	monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
	switch {
	case ago == 1:
		out = append(out, cue{kind: "yesterday", phrase: "yesterday", from: d, to: d})
	case ago >= 2 && ago <= 6:
		out = append(out, cue{kind: "weekday", phrase: "on " + d.Weekday().String(), from: d, to: d})
	}
	if !d.Before(monday.AddDate(0, 0, -7)) && d.Before(monday) {
		out = append(out, cue{kind: "lastweek", phrase: "last week", from: monday.AddDate(0, 0, -7), to: monday.AddDate(0, 0, -1)})
	}
	if ago >= 10 && ago <= 18 {
		out = append(out, cue{kind: "fortnight", phrase: "a couple of weeks ago", from: today.AddDate(0, 0, -18), to: today.AddDate(0, 0, -10)})
	}
	if ago >= 50 && ago <= 70 {
		out = append(out, cue{kind: "ago", phrase: "two months ago", from: today.AddDate(0, 0, -75), to: today.AddDate(0, 0, -45)})
	}
	if y == 2025 && m == 12 && d.Day() >= 20 {
		out = append(out, cue{kind: "holiday", phrase: "around Christmas", from: day("2025-12-20"), to: day("2026-01-02")})
	}
	return out
}
