package memory

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mnemo-agent/mnemo/memory/search"
)

// userSearch is a user's search index (memory/search), made at the
// first search and brought in step with the user's file index (idx) at
// each: the watcher marks what changed there, so a hand edit, a new
// file, a delete or a restore is found (or gone) at the next search, and
// only the files whose index entry changed are read again.
type userSearch struct {
	mu sync.Mutex // one sync at a time
	x  *search.Index
	// gen and drops are idx's counters when x was last in step.
	gen, drops uint64
	synced     bool
}

// forget drops path's entries from the index (all of them: path "").
func (s *userSearch) forget(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.x == nil:
	case path == "":
		s.x.Clear()
	default:
		s.x.Forget(path)
	}
	s.synced = false // the next search compares every file again
}

// ForgetSearch drops what the search index holds of an owner's memory
// (of one file, with path): a forget leaves nothing in it, even where
// the files' removal failed. The next search reads what is on disk.
func (s *Store) ForgetSearch(name, path string) error {
	u, err := s.User(name)
	if err != nil {
		return err
	}
	u.found.forget(path)
	return nil
}

// searchIndex is the user's search index, in step with the files.
func (u *User) searchIndex() (*search.Index, error) {
	f := &u.found
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.x == nil {
		f.x = search.New()
	}
	if u.idx.starting() {
		u.checkLazy(func() bool { return false }) // a start's cache, checked
	}
	if _, err := u.List(); err != nil {
		return nil, err
	}
	x := u.idx
	x.mu.Lock()
	gen, drops := x.gen, x.drops
	if f.synced && gen == f.gen && drops == f.drops {
		x.mu.Unlock()
		return f.x, nil // nothing changed since the last search
	}
	want := make(map[string]uint64, len(x.files))
	for p, e := range x.files {
		want[p] = e.gen
	}
	x.mu.Unlock()
	var gone []string
	f.x.Paths(func(p string, _ uint64) {
		if _, ok := want[p]; !ok {
			gone = append(gone, p)
		}
	})
	for _, p := range gone {
		f.x.Remove(p)
	}
	if len(want) > 0 {
		root, ref, err := u.openRoot(false)
		if err != nil {
			return nil, err
		}
		if root != nil {
			defer ref.release()
		}
		for p, g := range want {
			if st, ok := f.x.Stamp(p); ok && st == g {
				continue
			}
			var data []byte
			if root != nil {
				data, _, err = readRegular(root, p)
			}
			if root == nil || err != nil {
				f.x.Remove(p) // gone or unreadable: the file index will say so
				continue
			}
			text := string(data)
			f.x.Put(p, StripStamps(text), IsShared(text), g) // stamps are no words of the memory
		}
	}
	f.gen, f.drops, f.synced = gen, drops, true
	return f.x, nil
}

// Found is what a search found: its hits, best first, and how many
// entries matched in all.
type Found struct {
	Query string
	Hits  []Hit
	Total int
	// budget is Options.SearchBudget, for the tool's Render.
	budget int
}

// Hit is one entry found: the path as the view names it, the entry's
// heading ("" for a fact file's lines) and its line, its date (or ""),
// its whole text (the entry; a fact file's matching lines), and its score.
type Hit struct {
	Path    string  `json:"path"`
	Heading string  `json:"heading"`
	Line    int     `json:"line"`
	Date    string  `json:"date"`
	Text    string  `json:"text"`
	Score   float64 `json:"score"`
	// match counts a line's query words, to cut Text around the best.
	match func(string) int
}

// searchPart is one memory a search runs over.
type searchPart struct {
	u          *User
	prefix     string
	sharedOnly bool
}

// MaxSearchLimit is the most hits one search gives.
const MaxSearchLimit = 20

// DefaultSearchLimit is how many hits a search gives when not told.
const DefaultSearchLimit = 8

// runSearch searches parts for query, reading the text of each hit.
func (s *Store) runSearch(query string, limit int, parts ...searchPart) (Found, error) {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	q := search.Query{Text: query, Today: s.clock.Now(), Limit: limit}
	for try := 0; ; try++ {
		sp := make([]search.Part, len(parts))
		for i, p := range parts {
			x, err := p.u.searchIndex()
			if err != nil {
				return Found{}, err
			}
			sp[i] = search.Part{Index: x, Prefix: p.prefix, SharedOnly: p.sharedOnly}
		}
		res := search.Search(q, sp...)
		found, stale := s.hitTexts(q, res, parts, sp)
		if !stale || try == 1 {
			return found, nil
		}
		// A file changed between its indexing and its reading (an edit
		// the watcher has not reported yet): search once more.
	}
}

// hitTexts reads the text of each hit. A file whose size or visibility
// is not what was indexed is indexed again and its hits left out; stale
// says so.
func (s *Store) hitTexts(q search.Query, res search.Result, parts []searchPart, sp []search.Part) (Found, bool) {
	out := Found{Query: q.Text, Total: res.Total, Hits: make([]Hit, 0, len(res.Hits)), budget: s.opts.SearchBudget}
	match := search.Matcher(q)
	files := map[string][]string{} // each hit file's lines, read once; nil: changed since indexed
	stale := false
	for _, h := range res.Hits {
		all, ok := files[h.Path]
		if !ok {
			p := parts[h.Part]
			rel := strings.TrimPrefix(h.Path, p.prefix)
			d, err := p.u.Read(rel)
			plain := StripStamps(d.Text)
			switch {
			case err != nil:
				sp[h.Part].Index.Remove(rel)
			case len(plain) != h.Size || p.sharedOnly && !IsShared(d.Text):
				sp[h.Part].Index.Put(rel, plain, IsShared(d.Text), 0)
			default:
				all = strings.Split(plain, "\n")
			}
			stale = stale || all == nil
			files[h.Path] = all
		}
		if all == nil {
			continue
		}
		hit := Hit{Path: h.Path, Line: h.Line, Date: h.Date, Score: h.Score, match: match}
		if h.Episode {
			entry := strings.Join(all[min(h.Line, len(all))-1:min(h.End, len(all))], "\n")
			first, _, _ := strings.Cut(entry, "\n")
			hit.Heading = strings.TrimSpace(strings.TrimPrefix(first, "## "))
			hit.Text = strings.TrimRight(entry, "\n\r ")
		} else {
			lines := make([]string, 0, len(h.Lines))
			for _, n := range slices.Sorted(slices.Values(h.Lines)) { // in file order
				if n-1 < len(all) {
					lines = append(lines, strings.TrimRight(all[n-1], " \r"))
				}
			}
			hit.Text = strings.Join(lines, "\n")
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, stale
}

// Search finds entries of the session's memory (all of it).
func (s *Session) Search(query string, limit int) (Found, error) {
	return s.u.s.runSearch(query, limit, searchPart{u: s.u, sharedOnly: s.vis == visShared})
}

// Search finds entries of what the view may see: in a channel only the
// speaker's shared files and the channel's memory; no private file
// counts towards a hit, a score or a total.
func (v *View) Search(query string, limit int) (Found, error) {
	parts := []searchPart{{u: v.own.u, sharedOnly: v.shared}}
	if v.ch != nil {
		parts = append(parts, searchPart{u: v.ch.u, prefix: ChannelDir})
	}
	return v.own.u.s.runSearch(query, limit, parts...)
}

// Search finds entries of a user's (or a channel's) whole memory, as an
// admin sees it.
func (s *Store) Search(name, query string, limit int) (Found, error) {
	u, err := s.User(name)
	if err != nil {
		return Found{}, err
	}
	return s.runSearch(query, limit, searchPart{u: u})
}

// hitCut is how much of an entry's text a memory_search result shows.
const hitCut = 400

// DefaultSearchBudget bounds the bytes of a memory_search result.
const DefaultSearchBudget = 4 << 10

// Render is the result the model reads: each hit as "path:line · heading
// · date" and its text cut around the match, best first, within budget
// bytes, and a last line saying how many more matched.
func (f Found) Render(budget int) string {
	if budget <= 0 {
		budget = DefaultSearchBudget
	}
	if len(f.Hits) == 0 {
		return fmt.Sprintf("No entries match %s. memory_list shows the files; try other words or no time.", quote(f.Query))
	}
	var b strings.Builder
	shown := 0
	for _, h := range f.Hits {
		block := h.block()
		if b.Len()+len(block) > budget-120 && shown > 0 {
			break
		}
		if b.Len()+len(block) > budget-120 {
			block = cut(block, budget-120)
		}
		b.WriteString(block)
		shown++
	}
	if more := f.Total - shown; more > 0 {
		what := "1 more entry matches"
		if more > 1 {
			what = fmt.Sprintf("%d more entries match", more)
		}
		fmt.Fprintf(&b, "(%s; search with other words or a time to narrow it, or memory_read a file above for all of it.)\n", what)
	}
	return strings.TrimRight(b.String(), "\n")
}

// block is one hit as the model reads it.
func (h Hit) block() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d", h.Path, h.Line)
	if h.Heading != "" {
		b.WriteString(" · " + h.Heading)
	}
	if h.Date != "" {
		b.WriteString(" · " + h.Date)
	}
	b.WriteByte('\n')
	body := h.Text
	if h.Heading != "" {
		_, body, _ = strings.Cut(body, "\n") // the heading is above
	}
	var keep []string
	for _, l := range strings.Split(body, "\n") {
		if t := strings.TrimSpace(l); t == "" || (h.Date != "" && strings.HasPrefix(strings.ToLower(t), "- date:")) {
			continue
		}
		keep = append(keep, "  "+strings.TrimSpace(l))
	}
	b.WriteString(around(keep, h.match, hitCut))
	b.WriteByte('\n')
	return b.String()
}

// around is lines joined, cut to about max bytes around the line that
// holds most of the query's words, with "…" where lines were left out.
func around(lines []string, match func(string) int, max int) string {
	all := strings.Join(lines, "\n")
	if len(all) <= max {
		return all
	}
	best, bestN := 0, 0
	for i, l := range lines {
		if n := match(l); n > bestN {
			best, bestN = i, n
		}
	}
	lo, hi := best, best+1
	size := len(lines[best])
	for size < max {
		grew := false
		if hi < len(lines) && size+len(lines[hi])+1 <= max {
			size += len(lines[hi]) + 1
			hi++
			grew = true
		}
		if lo > 0 && size+len(lines[lo-1])+1 <= max {
			lo--
			size += len(lines[lo]) + 1
			grew = true
		}
		if !grew {
			break
		}
	}
	out := cut(strings.Join(lines[lo:hi], "\n"), max)
	if lo > 0 {
		out = "  …\n" + out
	}
	if hi < len(lines) {
		out += "\n  …"
	}
	return out
}

// cut is s in at most max bytes, ending on a whole character, "…" after
// what was cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return truncate(s, max)
}

// quote is the query as the model wrote it, in quotes, cut short.
func quote(q string) string {
	b, _ := json.Marshal(cut(q, 200))
	return string(b)
}
