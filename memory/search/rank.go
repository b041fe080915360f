package search

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// BM25's parameters (the textbook's): k1 saturates a term's frequency, b
// normalises by the unit's length.
const (
	k1 = 1.2
	b  = 0.75
)

// Part is one memory a search runs over: an index, the prefix its paths
// carry in the caller's view ("channel/" for a channel's memory), and
// whether only its shared files are visible.
type Part struct {
	Index      *Index
	Prefix     string
	SharedOnly bool
}

// Query is a search: its words (at most MaxQuery bytes are read), the day
// it is asked on (for "last week", "in March"), and how many hits to give.
type Query struct {
	Text  string
	Today time.Time
	Limit int
}

// MaxQuery is how much of a query's text is read: a longer one is cut.
const MaxQuery = 1 << 10

// Hit is one unit found: an episode entry (Line its heading, End its last
// line) or the matching lines of a fact file (Lines, best first; Line the
// best). Size is the length of the file as indexed: a caller that reads
// a file of another size reads another version. Date is YYYY-MM-DD or "".
type Hit struct {
	Path      string
	Line, End int
	Lines     []int
	Size      int
	Date      string
	Score     float64
	Episode   bool
	Part      int
}

// Result is a search's hits, best first, and how many units matched in
// all (the hits are the first of them).
type Result struct {
	Hits  []Hit
	Total int
}

// scratch is a search's per-unit arrays, reused.
type scratch struct {
	total, word []float32
	matched     []uint8
	seen        []bool // in touched
	touched     []int32
	wordTouched []int32
	// best is each fact file's best line (by file number), while scoring.
	best     []cand
	bestUsed []int32
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// reset sizes the arrays for n units and files files; they are zero
// (each search sets back what it set).
func (s *scratch) reset(n, files int) {
	s.total = slices.Grow(s.total[:0], n)[:n]
	s.word = slices.Grow(s.word[:0], n)[:n]
	s.matched = slices.Grow(s.matched[:0], n)[:n]
	s.seen = slices.Grow(s.seen[:0], n)[:n]
	s.best = slices.Grow(s.best[:0], files)[:files]
	s.touched, s.bestUsed = s.touched[:0], s.bestUsed[:0]
}

// parseQuery splits a query into its words' forms and what it says of time.
func parseQuery(q Query) ([]queryWord, when) {
	text := strings.ToValidUTF8(q.Text[:min(len(q.Text), MaxQuery)], "") // not a piece of a character
	var raw []string
	var written []word
	words(text, func(w word) {
		raw = append(raw, strings.ToLower(w.text))
		written = append(written, w)
	})
	rest, wh := readWhen(raw, q.Today)
	// Keep the words readWhen left, as they were written (their case says
	// whether they are names).
	var out []queryWord
	seen := map[string]bool{}
	j := 0
	var prev *word
	for _, w := range written {
		if j >= len(rest) || strings.ToLower(w.text) != rest[j] {
			prev = nil // a time word between: no compound across it
			continue
		}
		j++
		add := func(forms []string, weights []float64, extra bool) {
			qw := queryWord{extra: extra}
			for i, f := range forms {
				if !seen[f] {
					seen[f] = true
					qw.forms, qw.weight = append(qw.forms, f), append(qw.weight, weights[i])
				}
			}
			if len(qw.forms) > 0 {
				out = append(out, qw)
			}
		}
		if len(w.parts) > 1 {
			add([]string{strings.ToLower(w.text)}, []float64{1}, true)
		}
		for _, p := range w.parts {
			forms, weights := queryForms(p)
			add(forms, weights, false)
		}
		// Two words may be one compound in the memory: "on call" is on-call.
		if prev != nil && len(prev.parts) == 1 && len(w.parts) == 1 {
			add([]string{strings.ToLower(prev.text + "-" + w.text)}, []float64{1}, true)
		}
		prev = &w
	}
	return out, wh
}

// kinWeight is what a term that shares a stem's beginning counts for.
const kinWeight = 0.6

// withKin adds to each word's forms the terms of parts whose beginning
// its stems share (Index.kin). A term only some part holds is looked up
// in all: it counts only where a visible unit holds it.
func withKin(qws []queryWord, parts []Part) []queryWord {
	out := make([]queryWord, len(qws))
	for i, qw := range qws {
		have := map[string]bool{}
		for _, f := range qw.forms {
			have[f] = true
		}
		out[i] = queryWord{forms: slices.Clone(qw.forms), weight: slices.Clone(qw.weight), extra: qw.extra}
		for j, f := range qw.forms {
			for _, p := range parts {
				p.Index.kin(f, func(t string) {
					if !have[t] {
						have[t] = true
						out[i].forms = append(out[i].forms, t)
						out[i].weight = append(out[i].weight, kinWeight*qw.weight[j])
					}
				})
			}
		}
	}
	return out
}

// Search ranks the visible units of parts for q, best first.
func Search(q Query, parts ...Part) Result {
	qws, wh := parseQuery(q)
	limit := q.Limit
	if limit <= 0 {
		limit = 8
	}
	for _, p := range parts {
		p.Index.mu.RLock()
		defer p.Index.mu.RUnlock()
	}
	qws = withKin(qws, parts)
	// BM25's statistics over what the caller may see, and no more.
	n, sum := 0, 0
	for _, p := range parts {
		if p.SharedOnly {
			n, sum = n+p.Index.nShared, sum+p.Index.sumShared
		} else {
			n, sum = n+p.Index.n, sum+p.Index.sum
		}
	}
	if n == 0 {
		return Result{}
	}
	avg := float64(sum) / float64(n)
	idf := make([][]float64, len(qws))
	matched := false // a visible unit holds a word of the query
	for i, qw := range qws {
		// A word is as rare as its commonest form: "billing" is no rarer
		// for the one heading that starts with "Billing" (indexed whole
		// too), nor is a name for being written in lower case somewhere.
		df := 0
		for _, f := range qw.forms {
			d := 0
			for _, p := range parts {
				d += p.Index.df(f, p.SharedOnly)
			}
			df = max(df, d)
		}
		matched = matched || df > 0
		w := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
		idf[i] = make([]float64, len(qw.forms))
		for j := range qw.forms {
			idf[i][j] = qw.weight[j] * w
		}
	}
	today := dayOf(q.Today)
	var cands []Hit
	total := 0
	for pi, p := range parts {
		hits, n := p.Index.score(pi, p, qws, idf, avg, wh, today, !matched, limit)
		cands, total = append(cands, hits...), total+n
	}
	// Each part's hits are in order already (score's heap): the merge
	// needs no line order, the paths of two parts never being the same.
	slices.SortStableFunc(cands, func(a, b Hit) int {
		switch {
		case a.Score != b.Score:
			return cmp.Compare(b.Score, a.Score)
		case hitDay(a) != hitDay(b):
			return -strings.Compare(hitDay(a), hitDay(b)) // newer first, fact lines first of all
		}
		return strings.Compare(a.Path, b.Path)
	})
	return Result{Hits: slices.Clip(cands[:min(len(cands), limit)]), Total: total}
}

// hitDay is a hit's date for breaking ties, as tieDate: a fact file's
// lines after every date.
func hitDay(h Hit) string {
	if !h.Episode && h.Date == "" {
		return "9999-99-99"
	}
	return h.Date
}

// df is how many visible units hold term t. x.mu is held.
func (x *Index) df(t string, sharedOnly bool) int {
	tid, ok := x.terms[t]
	if !ok {
		return 0
	}
	n := 0
	postings(x.post[tid], func(id uint32, _ byte) {
		if f := x.flags[id]; f&flagLive != 0 && (!sharedOnly || f&flagShared != 0) {
			n++
		}
	})
	return n
}

// cand is a scored unit (for a fact file, its best line) of one part.
type cand struct {
	score float64
	id    int32
}

// order is -1 when unit a of x ranks before unit b, 1 when after, 0 for
// the same unit: higher score, then newer, then by path, then by line.
// It is Search's order.
func (x *Index) order(a, b cand) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	ua, ub := &x.units[a.id], &x.units[b.id]
	fa, fb := x.nums[ua.num], x.nums[ub.num]
	if c := cmp.Compare(tieDate(ub, fb), tieDate(ua, fa)); c != 0 {
		return c
	}
	if c := strings.Compare(fa.path, fb.path); c != 0 {
		return c
	}
	return cmp.Compare(ua.line, ub.line)
}

// before reports whether unit a of x ranks before unit b.
func (x *Index) before(a, b cand) bool { return x.order(a, b) < 0 }

// tieDate is the day a unit counts as of when scores tie: its date; a
// fact line, which says what is true now, after every dated entry.
func tieDate(u *unit, f *file) int32 {
	if !f.episode && u.date == noDate {
		return math.MaxInt32
	}
	return u.date
}

// score returns the best limit hits of part p (number pi), in Search's
// order, and how many units (a fact file's lines: one) matched. x.mu is
// held. Only the best are made into hits: a common word may match every
// unit.
//
// timeOnly: no word of the query is in a visible unit (or it has none),
// so a time it names finds every unit of that time.
func (x *Index) score(pi int, p Part, qws []queryWord, idf [][]float64, avg float64, wh when, today int32, timeOnly bool, limit int) ([]Hit, int) {
	s := scratches.Get().(*scratch)
	defer scratches.Put(s)
	s.reset(len(x.units), len(x.nums))
	need := uint8(flagLive) // what a visible unit's flags hold
	if p.SharedOnly {
		need |= flagShared
	}
	visible := func(id int32) bool { return x.flags[id]&need == need }
	for i, qw := range qws {
		touched := s.wordTouched[:0]
		for j, f := range qw.forms {
			tid, ok := x.terms[f]
			if !ok {
				continue
			}
			ps, uid, flags, lens := x.post[tid], uint32(0), x.flags, x.lens
			for k := 0; k < len(ps); {
				d, tfb, next := nextPosting(ps, k) // postings(), without a call per posting: this loop is the search's cost
				uid += d
				id := int32(uid)
				k = next
				if flags[id]&need != need {
					continue // removed, or private in a shared view
				}
				tf := float64(tfb) / 2
				dl := float64(lens[id])
				c := float32(idf[i][j] * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avg)))
				if s.word[id] == 0 {
					touched = append(touched, id)
				}
				s.word[id] = max(s.word[id], c) // one word's forms count once
			}
		}
		for _, id := range touched {
			if !s.seen[id] {
				s.seen[id] = true
				s.touched = append(s.touched, id)
			}
			s.total[id] += s.word[id]
			if !qw.extra {
				s.matched[id]++
			}
			s.word[id] = 0
		}
		s.wordTouched = touched
	}
	if timeOnly && (wh.ranged() || wh.recent || wh.first) {
		// Only a time: every dated unit of it.
		for id := range x.units {
			if d := x.units[id].date; visible(int32(id)) && d != noDate && (!wh.ranged() || d >= wh.from && d <= wh.to) {
				s.touched = append(s.touched, int32(id))
				s.total[id], s.seen[id] = 1, true
			}
		}
	}
	// Each unit's final score (kept in s.score); a fact file counts once,
	// by its best line.
	words := 0 // the query's own words, not the compounds they may make
	for _, qw := range qws {
		if !qw.extra {
			words++
		}
	}
	var top []cand // the best limit, worst first once full (a heap)
	push := func(c cand) {
		if len(top) < limit {
			top = append(top, c)
			for i := len(top) - 1; i > 0 && x.before(top[(i-1)/2], top[i]); i = (i - 1) / 2 {
				top[i], top[(i-1)/2] = top[(i-1)/2], top[i]
			}
			return
		}
		if !x.before(c, top[0]) {
			return
		}
		top[0] = c
		for i := 0; ; {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(top) && x.before(top[w], top[l]) {
				w = l
			}
			if r < len(top) && x.before(top[w], top[r]) {
				w = r
			}
			if w == i {
				break
			}
			top[i], top[w] = top[w], top[i]
			i = w
		}
	}
	total := 0
	for _, id := range s.touched {
		u := &x.units[id]
		uf := x.nums[u.num]
		sc := float64(s.total[id]) * timeFactor(wh, u.date, today)
		if x.flags[id]&flagEarlier != 0 {
			sc *= earlierWeight // a replaced fact: after the current ones
		}
		if x.flags[id]&flagRollup != 0 {
			sc *= rollupWeight // a summary: after the entries it summarises
		}
		if !timeOnly && s.matched[id] > 1 { // so words > 1 too
			sc *= 1 + 0.25*float64(s.matched[id]-1)/float64(words-1) // more of the query's words
		}
		s.total[id] = float32(sc)
		s.matched[id], s.seen[id] = 0, false
		if sc <= 0 {
			continue
		}
		if !uf.episode {
			b := &s.best[u.num]
			if b.score == 0 {
				s.bestUsed = append(s.bestUsed, u.num)
				*b = cand{sc, id}
			} else if x.before(cand{sc, id}, *b) {
				*b = cand{sc, id}
			}
			continue
		}
		total++
		push(cand{sc, id})
	}
	total += len(s.bestUsed)
	for _, n := range s.bestUsed {
		push(s.best[n])
		s.best[n] = cand{}
	}
	slices.SortFunc(top, x.order)
	hits := make([]Hit, len(top))
	for i, c := range top {
		u := &x.units[c.id]
		f := x.nums[u.num]
		h := Hit{
			Path: p.Prefix + f.path, Line: int(u.line), End: int(u.end), Lines: []int{int(u.line)},
			Size: f.size, Date: formatDay(u.date),
			Score: c.score, Episode: f.episode, Part: pi,
		}
		if !h.Episode {
			// The file's other matching lines, in file order.
			for id := f.first; id < f.first+f.count; id++ {
				if int32(id) != c.id && s.total[id] > 0 {
					h.Lines = append(h.Lines, int(x.units[id].line))
				}
			}
		}
		hits[i] = h
	}
	for _, id := range s.touched {
		s.total[id] = 0
	}
	return hits, total
}

// earlierWeight scales a superseded fact line's score (EarlierSection):
// the current value of a fact comes first, its past still found.
const earlierWeight = 0.25

// rollupWeight scales a roll-up line's score: the month entries it
// summarises are the authority and come first; the roll-up is still
// found (TestRollupRanksAfterItsEntries measures the order).
const rollupWeight = 0.5

// inRange is the weight of a unit of the time a query names, against at
// most 1 for one outside it: the time a person names is nearly a filter.
var inRange = 3.0

// timeFactor weighs a unit of day d by what the query says of time.
func timeFactor(wh when, d int32, today int32) float64 {
	f := 1.0
	if wh.ranged() {
		switch {
		case d == noDate:
			f = 0.5
		case d >= wh.from && d <= wh.to:
			f = inRange
		default:
			// Near the range is better than far from it.
			dist := max(wh.from-d, d-wh.to) // days outside it: the other is negative
			span := max(float64(wh.to-wh.from+1), 7)
			f = 0.5 + 0.5*math.Exp(-float64(dist)/span)
		}
	}
	if wh.recent && d != noDate {
		age := float64(max(today-d, 0))
		f *= 1 + math.Exp(-age/45)
	}
	if wh.first && d != noDate {
		age := float64(max(today-d, 0))
		f *= 2 - math.Exp(-age/365) // older is better
	}
	return f
}

// Matcher reports how many of q's words a line of memory holds: what a
// caller cutting a long entry around its match looks for.
func Matcher(q Query) func(line string) int {
	qws, _ := parseQuery(q)
	form := map[string]int{}
	for i, qw := range qws {
		for _, f := range qw.forms {
			form[f] = i
		}
	}
	return func(line string) int {
		seen := map[int]bool{}
		docTerms(line, nil, func(t string) {
			if i, ok := form[t]; ok {
				seen[i] = true
			}
		})
		return len(seen)
	}
}
