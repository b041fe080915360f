package recallbench

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/mnemo-agent/mnemo/memory/search"
)

// Ranker ranks a set's units for a query asked on a day, best first, at
// most limit of them.
type Ranker interface {
	Rank(query string, today time.Time, limit int) []Hit
}

// sortedPaths are a set's paths in order.
func sortedPaths(files map[string]string) []string {
	ps := make([]string, 0, len(files))
	for p := range files {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Mnemo is memory/search over a set's files, all private to one person.
type Mnemo struct {
	x *search.Index
}

// NewMnemo indexes the set's files with memory/search.
func NewMnemo(s Set) *Mnemo {
	x := search.New()
	for i, p := range sortedPaths(s.Files) {
		x.Put(p, s.Files[p], false, uint64(i+1))
	}
	return &Mnemo{x: x}
}

// Rank is search.Search's hits.
func (m *Mnemo) Rank(query string, today time.Time, limit int) []Hit {
	res := search.Search(search.Query{Text: query, Today: today, Limit: limit}, search.Part{Index: m.x})
	out := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		out = append(out, Hit{Path: h.Path, Line: h.Line, End: h.End, Lines: slices.Clone(h.Lines)})
	}
	return out
}

// BM25 parameters of the textbook ranker.
const (
	textbookK1 = 1.2
	textbookB  = 0.75
)

// BM25 is a textbook BM25 over a set's units: each episode entry (its "## "
// heading to the next heading) and each line of a fact file (not the file's
// "# " title, "> " header lines or "## " section headings), tokenised by
// lower-casing and splitting on anything not a letter or digit, with no
// stemming and no stop words; k1 1.2, b 0.75, idf ln(1 + (N - df + 0.5) /
// (df + 0.5)), each distinct query term counted once; ties broken by path
// then line.
type BM25 struct {
	units []tbUnit
	post  map[string][]posting // term → units holding it
	avg   float64
}

type tbUnit struct {
	path      string
	line, end int
	length    int
}

type posting struct {
	unit int32
	tf   int32
}

// Textbook builds the textbook BM25 over s's units.
func Textbook(s Set) *BM25 {
	t := &BM25{post: map[string][]posting{}}
	total := 0
	for _, p := range sortedPaths(s.Files) {
		for _, u := range splitUnits(p, s.Files[p]) {
			id := int32(len(t.units))
			tf := map[string]int32{}
			for _, tok := range tokens(u.text) {
				tf[tok]++
			}
			n := 0
			for tok, c := range tf {
				t.post[tok] = append(t.post[tok], posting{unit: id, tf: c})
				n += int(c)
			}
			t.units = append(t.units, tbUnit{path: p, line: u.line, end: u.end, length: n})
			total += n
		}
	}
	if len(t.units) > 0 {
		t.avg = float64(total) / float64(len(t.units))
	}
	return t
}

// Rank is the textbook's best units for query (today is not read).
func (t *BM25) Rank(query string, _ time.Time, limit int) []Hit {
	score := t.scores(query)
	ids := make([]int32, 0, len(score))
	for id, sc := range score {
		if sc > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		ua, ub := t.units[a], t.units[b]
		if c := strings.Compare(ua.path, ub.path); c != 0 {
			return c
		}
		return ua.line - ub.line
	})
	if len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]Hit, 0, len(ids))
	for _, id := range ids {
		u := t.units[id]
		out = append(out, Hit{Path: u.path, Line: u.line, End: u.end, Lines: []int{u.line}})
	}
	return out
}

// scores are the units' scores for query, by unit.
func (t *BM25) scores(query string) map[int32]float64 {
	n := float64(len(t.units))
	score := map[int32]float64{}
	seen := map[string]bool{}
	for _, tok := range tokens(query) {
		if seen[tok] {
			continue
		}
		seen[tok] = true
		ps := t.post[tok]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			dl := float64(t.units[p.unit].length)
			score[p.unit] += idf * tf * (textbookK1 + 1) / (tf + textbookK1*(1-textbookB+textbookB*dl/t.avg))
		}
	}
	return score
}

// tokens are s's textbook terms: lower case, split on anything not a
// letter or digit.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// aUnit is one unit of a file as the textbook sees it.
type aUnit struct {
	line, end int
	text      string
}

// splitUnits cuts a file's text into its units: for an episode file, each
// "## " section from its heading to the line before the next (trailing
// blank lines left out); for a fact file, each line that is not blank, a
// "# " title, a "> " header line or a "## " section heading.
func splitUnits(path, text string) []aUnit {
	lines := strings.Split(text, "\n")
	var out []aUnit
	if isEpisodePath(path) {
		var cur *aUnit
		var body []string
		flush := func() {
			if cur == nil {
				return
			}
			for cur.end > cur.line && strings.TrimSpace(lines[cur.end-1]) == "" {
				cur.end--
			}
			cur.text = strings.Join(body, "\n")
			out = append(out, *cur)
		}
		for i, l := range lines {
			if h, ok := strings.CutPrefix(l, "## "); ok {
				flush()
				cur = &aUnit{line: i + 1, end: i + 1}
				body = []string{h}
				continue
			}
			if cur != nil {
				cur.end = i + 1
				body = append(body, l)
			}
		}
		flush()
		return out
	}
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || t == "#" || strings.HasPrefix(t, "# ") || strings.HasPrefix(t, ">") || strings.HasPrefix(t, "## ") {
			continue
		}
		out = append(out, aUnit{line: i + 1, end: i + 1, text: l})
	}
	return out
}
