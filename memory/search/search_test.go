package search

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// today is the day the tests' queries are asked on: a Sunday.
var today = time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)

// entry is one episode entry's text.
func entry(title, summary, date string, body ...string) string {
	s := "## " + title + "\n- Summary: " + summary + "\n- Date: " + date + "\n"
	for _, l := range body {
		s += "- " + l + "\n"
	}
	return s + "\n"
}

// episodes is an episode file of entries.
func episodes(month string, entries ...string) string {
	return "# " + month + " Episodes\n\n> Summary: work\n\n" + strings.Join(entries, "")
}

// headings are the first line of each hit's unit in files.
func headings(t *testing.T, files map[string]string, r Result) []string {
	t.Helper()
	var out []string
	for _, h := range r.Hits {
		text := files[strings.TrimPrefix(h.Path, "channel/")]
		line := strings.Split(text, "\n")[h.Line-1]
		out = append(out, strings.TrimPrefix(line, "## "))
	}
	return out
}

func indexOf(files map[string]string, shared ...string) *Index {
	x := New()
	for p, text := range files {
		x.Put(p, text, slices.Contains(shared, p), 1)
	}
	return x
}

// The first hit of each query is the entry a person means.
func TestRanking(t *testing.T) {
	files := map[string]string{
		"episodes/2026-03.md": episodes("2026-03",
			entry("CI build cache not restored", "CI rebuilt every module → cache keyed on go.sum", "2026-03-24", "Solution: cache key from the go.sum hash"),
			entry("Mark reviewed the release", "release notes checked by Mark", "2026-03-10", "Problem: two notes were missing"),
			entry("Support group", "Caroline went to the LGBTQ support group", "2026-03-02", "She found it helpful"),
		),
		"episodes/2026-05.md": episodes("2026-05",
			entry("Marking stale tickets", "bulk marking of stale issues", "2026-05-12", "marked 40 tickets as stale"),
			entry("Deploy script fixed", "the deploy script failed on ARM → fixed the arch check", "2026-05-20", "Fixing took two hours"),
			entry("Lunch", "lunch with the team", "2026-05-21", "we talked about the cache and the deploy and the release"),
		),
		"episodes/2026-11.md": episodes("2026-11",
			entry("Deploy script again", "deploy script broke on the new runner", "2026-11-24", "fixed the runner label"),
			entry("go-openai upgrade", "moved to go-openai v1.43", "2026-11-25", "streaming now reports usage"),
		),
		"facts/family.md": "# Family\n\n> Summary: family\n\n- Sister: Ana, lives in Lisbon\n- Brother: Tom, a nurse\n\n## Pets\n- A cat called Miso\n",
	}
	x := indexOf(files)
	for _, tc := range []struct {
		name, query, want string
	}{
		{"exact words", "cache key go.sum", "CI build cache not restored"},
		{"stemming", "fixing the deployment scripts in May", "Deploy script fixed"},
		{"a name is not a stem", "Mark", "Mark reviewed the release"},
		{"a stem is not a name", "marking tickets", "Marking stale tickets"},
		{"a name in lower case", "caroline", "Support group"},
		{"a possessive", "Caroline's group", "Support group"},
		{"heading over body", "release", "Mark reviewed the release"},
		{"a compound whole", "go-openai", "go-openai upgrade"},
		{"recently", "deploy script recently", "Deploy script again"},
		{"last time", "when did the deploy script break last time", "Deploy script again"},
		{"the first time", "the first time the deploy script failed", "Deploy script fixed"},
		{"a month", "what happened with the deploy script in May", "Deploy script fixed"},
		{"a season", "deploy script back in the spring", "Deploy script fixed"},
		{"a month and year", "deploy script November 2026", "Deploy script again"},
		{"an ISO month", "deploy 2026-05", "Deploy script fixed"},
		{"a day", "2026-03-10", "Mark reviewed the release"},
		{"last week", "what did we do last week", "go-openai upgrade"},
		{"on a weekday", "what did we do on Tuesday", "Deploy script again"},
		{"a time alone", "in March", "CI build cache not restored"},
		{"a fact line", "where does my sister live", "- Sister: Ana, lives in Lisbon"},
		{"a fact under its section", "pets", "- A cat called Miso"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Search(Query{Text: tc.query, Today: today, Limit: 5}, Part{Index: x})
			got := headings(t, files, r)
			if len(got) == 0 || got[0] != tc.want {
				t.Errorf("%q: hits %q, want %q first", tc.query, got, tc.want)
			}
		})
	}
}

// Words that are not in the memory, stop words alone, or nothing at all
// find nothing; a time alone finds the entries of that time.
func TestNoHits(t *testing.T) {
	files := map[string]string{"episodes/2026-03.md": episodes("2026-03", entry("Cache", "cache fix", "2026-03-24"))}
	x := indexOf(files)
	for _, q := range []string{"", "   ", "the of and what when", "kubernetes", "in June"} {
		if r := Search(Query{Text: q, Today: today}, Part{Index: x}); len(r.Hits) != 0 || r.Total != 0 {
			t.Errorf("%q found %+v", q, r)
		}
	}
	if r := Search(Query{Text: "cache"}, Part{Index: New()}); len(r.Hits) != 0 {
		t.Errorf("an empty index found %+v", r)
	}
}

// Equal scores: the newer entry first, then by path, then by line.
func TestTies(t *testing.T) {
	files := map[string]string{
		"episodes/2026-01.md": episodes("2026-01", entry("Backup", "backup", "2026-01-05"), entry("Backup", "backup", "2026-01-05")),
		"episodes/2026-02.md": episodes("2026-02", entry("Backup", "backup", "2026-02-05")),
		"facts/a.md":          "# A\n\n- backup\n",
		"facts/b.md":          "# B\n\n- backup\n",
	}
	r := Search(Query{Text: "backup", Today: today, Limit: 10}, Part{Index: indexOf(files)})
	var got []string
	for _, h := range r.Hits {
		got = append(got, fmt.Sprintf("%s:%d", h.Path, h.Line))
	}
	want := []string{"episodes/2026-02.md:5", "episodes/2026-01.md:5", "episodes/2026-01.md:9"}
	if len(got) != 5 || !slices.Equal(got[:3], want) {
		t.Fatalf("order %q, want %q then the two fact files", got, want)
	}
	if got[3] != "facts/a.md:3" || got[4] != "facts/b.md:3" || r.Hits[3].Score != r.Hits[4].Score {
		t.Errorf("two fact files of equal score not in path order: %q", got)
	}
	for i := 1; i < len(r.Hits); i++ {
		if r.Hits[i].Score > r.Hits[i-1].Score {
			t.Errorf("hit %d scores %v after %v", i, r.Hits[i].Score, r.Hits[i-1].Score)
		}
	}
}

// A fact file is one hit, naming its matching lines: the best first,
// then the others in file order.
func TestFactLines(t *testing.T) {
	files := map[string]string{"facts/tools.md": "# Tools\n\n> Summary: tools\n\n- Editor: vim\n- Shell: zsh with vim keys\n- Terminal: kitty\n- Vim plugins: vim-go, vim vim\n"}
	r := Search(Query{Text: "vim", Today: today}, Part{Index: indexOf(files)})
	if len(r.Hits) != 1 || r.Total != 1 {
		t.Fatalf("hits %+v", r)
	}
	h := r.Hits[0]
	if h.Episode || h.Date != "" || h.Line != h.Lines[0] || !slices.Equal(h.Lines, []int{8, 5, 6}) {
		t.Errorf("hit %+v, want lines 8 (most vim), then 5 and 6", h)
	}
}

// Units: an entry runs from its heading to its last non-blank line, with
// its byte range; the file's header is no unit.
func TestUnits(t *testing.T) {
	text := "# 2026-03 Episodes\n\n> Summary: a, b\n\n## A\n- Summary: a\n- Date: 2026-03-01\n\n\n## B\n- Date: not a date\nbody\n"
	us := parseFile("episodes/2026-03.md", text, nil)
	if len(us) != 2 {
		t.Fatalf("%d units", len(us))
	}
	if us[0].line != 5 || us[0].end != 7 || text[us[0].start:us[0].stop] != "## A\n- Summary: a\n- Date: 2026-03-01\n\n\n" || us[0].date != parseDay("2026-03-01") {
		t.Errorf("unit A %+v", us[0])
	}
	if us[1].line != 10 || us[1].end != 12 || us[1].stop != len(text) || us[1].date != noDate || us[1].tf("date") == 0 {
		t.Errorf("unit B %+v (a bad date line is body)", us[1])
	}
	facts := parseFile("channel/facts/x.md", "# X\n> Summary: s\n> Visibility: shared\n\n- the and\n- real fact\n", nil)
	if len(facts) != 1 || facts[0].line != 6 {
		t.Errorf("fact units %+v: want only the line with words", facts)
	}
}

// Replacing a file replaces its units; removing it leaves nothing found;
// the removed units and their postings go at compaction, the units left
// numbered anew; the statistics follow.
func TestPutRemoveCompact(t *testing.T) {
	x := New()
	for i := range 600 {
		x.Put(fmt.Sprintf("facts/f%d.md", i), fmt.Sprintf("# F\n\n- apple number%d\n- pear\n", i), i%2 == 0, uint64(i))
	}
	if x.n != 1200 || x.nShared != 600 || x.Len() != 600 {
		t.Fatalf("n %d shared %d files %d", x.n, x.nShared, x.Len())
	}
	if st, ok := x.Stamp("facts/f7.md"); !ok || st != 7 {
		t.Errorf("stamp %d %v", st, ok)
	}
	x.Put("facts/f1.md", "# F\n\n- banana\n", false, 99)
	if r := Search(Query{Text: "number1"}, Part{Index: x}); len(r.Hits) != 0 {
		t.Errorf("the replaced text is still found: %+v", r.Hits)
	}
	if st, _ := x.Stamp("facts/f1.md"); st != 99 {
		t.Errorf("stamp after a replace: %d", st)
	}
	if r := Search(Query{Text: "banana"}, Part{Index: x}); len(r.Hits) != 1 {
		t.Errorf("the new text is not found: %+v", r.Hits)
	}
	for i := range 600 {
		x.Remove(fmt.Sprintf("facts/f%d.md", i))
	}
	x.Remove("facts/nothing.md")
	if x.n != 0 || x.sum != 0 || x.nShared != 0 || x.sumShared != 0 || x.Len() != 0 {
		t.Errorf("statistics after removing everything: %d %d %d %d", x.n, x.sum, x.nShared, x.sumShared)
	}
	postings := 0
	for _, p := range x.post {
		postings += len(p)
	}
	if postings > 4*256 || len(x.terms) > 256 || len(x.units) > 256 {
		t.Errorf("%d bytes of postings, %d terms and %d units kept after removing every file", postings, len(x.terms), len(x.units))
	}
	if r := Search(Query{Text: "apple pear"}, Part{Index: x}); len(r.Hits) != 0 {
		t.Errorf("removed files found: %+v", r.Hits)
	}
	x.Put("facts/new.md", "# N\n\n- apple\n", false, 1)
	if r := Search(Query{Text: "apple"}, Part{Index: x}); len(r.Hits) != 1 || r.Hits[0].Path != "facts/new.md" {
		t.Errorf("after compaction: %+v", r.Hits)
	}
	var paths []string
	x.Paths(func(p string, _ uint64) { paths = append(paths, p) })
	if !slices.Equal(paths, []string{"facts/new.md"}) {
		t.Errorf("paths %q", paths)
	}
	x.Clear()
	if x.Len() != 0 || len(Search(Query{Text: "apple"}, Part{Index: x}).Hits) != 0 {
		t.Error("Clear left something")
	}
}

// What a view may not see changes nothing it is shown: a shared-only
// search gives the same hits, scores and total whatever private files
// hold, and never a private unit.
func TestPrivateFilesChangeNothing(t *testing.T) {
	shared := "# S\n\n> Visibility: shared\n\n- deploy runs on Fridays\n- the deploy key is in the vault\n"
	q := Query{Text: "deploy key", Today: today}
	base := New()
	base.Put("facts/team.md", shared, true, 1)
	want := Search(q, Part{Index: base, SharedOnly: true})
	x := New()
	x.Put("facts/team.md", shared, true, 1)
	for i := range 50 {
		x.Put(fmt.Sprintf("facts/p%d.md", i), "# P\n\n- my deploy key is hunter2 deploy deploy\n- key key key\n", false, 1)
	}
	got := Search(q, Part{Index: x, SharedOnly: true})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("with private files:\n%+v\nwithout:\n%+v", got, want)
	}
	if all := Search(q, Part{Index: x}); all.Total != 51 {
		t.Errorf("a private view sees %d files, want 51", all.Total)
	}
}

// Two parts: the channel's hits carry its prefix and part number, and the
// statistics are over both.
func TestParts(t *testing.T) {
	own, ch := New(), New()
	own.Put("facts/me.md", "# Me\n\n> Visibility: shared\n\n- I own the billing service\n", true, 1)
	ch.Put("facts/team.md", "# Team\n\n- billing service deploys on Monday\n", false, 2)
	r := Search(Query{Text: "billing deploys", Today: today}, Part{Index: own, SharedOnly: true}, Part{Index: ch, Prefix: "channel/"})
	if len(r.Hits) != 2 || r.Hits[0].Path != "channel/facts/team.md" || r.Hits[0].Part != 1 || r.Hits[1].Path != "facts/me.md" || r.Hits[1].Part != 0 {
		t.Errorf("hits %+v", r.Hits)
	}
}

// The limit: 8 when not given, and Total counts every match.
func TestLimit(t *testing.T) {
	x := New()
	for i := range 30 {
		x.Put(fmt.Sprintf("facts/f%02d.md", i), "# F\n\n- kiwi\n", false, 1)
	}
	if r := Search(Query{Text: "kiwi"}, Part{Index: x}); len(r.Hits) != 8 || r.Total != 30 {
		t.Errorf("default: %d hits of %d", len(r.Hits), r.Total)
	}
	if r := Search(Query{Text: "kiwi", Limit: 3}, Part{Index: x}); len(r.Hits) != 3 {
		t.Errorf("limit 3: %d hits", len(r.Hits))
	}
}

// A query longer than MaxQuery is cut, on a character boundary.
func TestLongQuery(t *testing.T) {
	x := New()
	x.Put("facts/f.md", "# F\n\n- zebra\n- yak\n", false, 1)
	long := strings.Repeat("é", MaxQuery) + " zebra"
	if r := Search(Query{Text: long}, Part{Index: x}); len(r.Hits) != 0 {
		t.Errorf("a word past the cut was read: %+v", r.Hits)
	}
	if r := Search(Query{Text: "zebra " + strings.Repeat("x", 10*MaxQuery)}, Part{Index: x}); len(r.Hits) != 1 {
		t.Errorf("a word before the cut was lost: %+v", r.Hits)
	}
}

// The terms of a line: stems, names kept whole (a capital word that
// starts a sentence both ways), compounds whole and by parts, stop words
// and possessives gone.
func TestTerms(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"Fixed the deployments", "fix =fixed deploy"},
		{"then Mark fixed it", "=mark fix"},
		{"Mark fixed it", "mark =mark fix"},
		{"Caroline's support", "carolin =caroline support"},
		{"we met Caroline's sister", "met =caroline sister"},
		{"the CI and the API", "=ci =api"},
		{"go-openai v1.43", "go-openai go openai v1.43 =v1 =43"},
		{"cache_key", "cache_key cach key"},
		{"don't won't", "won"},
		{"Zürich café", "=zürich =café"},
		{"a b 7", "=7"},
		// What starts a sentence: a capital after it may be a plain word.
		{"x. Mark", "mark =mark"},
		{"x! Mark", "mark =mark"},
		{"x? Mark", "mark =mark"},
		{"x: Mark", "mark =mark"},
		{"x; Mark", "mark =mark"},
		{"x\nMark", "mark =mark"},
		{"x (Mark", "mark =mark"},
		{"x \"Mark", "mark =mark"},
		{"x “Mark", "mark =mark"},
		{"x, Mark", "=mark"},
		// A joiner at the end, or before no word, joins nothing.
		{"go- go-. go-openai-", "go go go-openai go openai"},
		// Contractions of up to two letters go; a longer tail is a word.
		{"they'll fix it, they’re Tom's", "fix =tom"},
		{"x Tom' 7", "=tom =7"},
		{"x Tom'abc", "=tom abc"},
		// Snowball stems a-z words; any other letter keeps a word whole.
		{"zoo lazy", "zoo lazi"},
		{"naïve", "=naïve"},
		// One capital alone is no acronym: it starts a sentence too.
		{"É", "é =é"},
		// An acronym is kept whole even where a sentence starts; a name
		// with two capitals is not an acronym.
		{"CI runs", "=ci run"},
		{"McDonald runs", "mcdonald =mcdonald run"},
	} {
		var got []string
		docTerms(tc.line, nil, func(t string) { got = append(got, t) })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: terms %q, want %q", tc.line, strings.Join(got, " "), tc.want)
		}
	}
}

// Matcher counts the query's words in a line, in any of their forms.
func TestMatcher(t *testing.T) {
	m := Matcher(Query{Text: "fixing deploy scripts Mark"})
	for _, tc := range []struct {
		line string
		want int
	}{{"fixed the deploy script", 3}, {"nothing here", 0}, {"and then Mark deployed", 2}} {
		if got := m(tc.line); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.line, got, tc.want)
		}
	}
}

// A compaction renumbers the units left without changing what a search
// finds: an index from which half the files were removed answers as one
// that only ever held the other half, and new files added after it too.
func TestCompactionKeepsAnswers(t *testing.T) {
	text := func(i int) string {
		return episodes("2026-03", entry(fmt.Sprintf("Entry %d", i), fmt.Sprintf("apple number%d pear", i%7), fmt.Sprintf("2026-03-%02d", 1+i%28), "kiwi banana"))
	}
	x, fresh := New(), New()
	for i := range 800 {
		x.Put(fmt.Sprintf("episodes/f%d.md", i), text(i), i%3 == 0, uint64(i))
	}
	for i := range 800 {
		if i%2 == 0 {
			x.Remove(fmt.Sprintf("episodes/f%d.md", i))
		} else {
			fresh.Put(fmt.Sprintf("episodes/f%d.md", i), text(i), i%3 == 0, uint64(i))
		}
	}
	if x.dead >= 400 {
		t.Fatalf("no compaction: %d dead units", x.dead)
	}
	for i := 800; i < 810; i++ {
		x.Put(fmt.Sprintf("episodes/f%d.md", i), text(i), false, uint64(i))
		fresh.Put(fmt.Sprintf("episodes/f%d.md", i), text(i), false, uint64(i))
	}
	for _, q := range []string{"apple number3", "kiwi", "pear in March", "number5 banana"} {
		for _, shared := range []bool{false, true} {
			got := Search(Query{Text: q, Today: today, Limit: 20}, Part{Index: x, SharedOnly: shared})
			want := Search(Query{Text: q, Today: today, Limit: 20}, Part{Index: fresh, SharedOnly: shared})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q (shared %v) after compaction:\n%v\nwant\n%v", q, shared, got, want)
			}
		}
	}
}

// On a tie a fact line, which says what is true now, comes before any
// dated entry.
func TestTieFactFirst(t *testing.T) {
	files := map[string]string{
		"facts/health.md":     "# Health\n\n- Dentist: Bakker\n",
		"episodes/2026-01.md": "# 2026-01\n\n## Dentist\n- Date: 2026-01-20\n- Bakker\n",
	}
	r := Search(Query{Text: "dentist", Today: today}, Part{Index: indexOf(files)})
	if len(r.Hits) != 2 || r.Hits[0].Score != r.Hits[1].Score || r.Hits[0].Path != "facts/health.md" {
		t.Errorf("hits %+v: want a tie, the fact line first", r.Hits)
	}
	if one := Search(Query{Text: "dentist", Today: today, Limit: 1}, Part{Index: indexOf(files)}); len(one.Hits) != 1 || one.Hits[0].Path != "facts/health.md" {
		t.Errorf("limit 1: %+v, want the fact line", one.Hits)
	}
}

// A stem finds the terms it begins, or that begin it, of five bytes or
// more: "print" finds "printer"; a shorter stem finds only itself.
func TestKin(t *testing.T) {
	files := map[string]string{
		"facts/a.md": "# A\n\n- the printer jammed\n",
		"facts/b.md": "# B\n\n- the cards were dealt\n",
	}
	x := indexOf(files)
	if r := Search(Query{Text: "print"}, Part{Index: x}); len(r.Hits) != 1 || r.Hits[0].Path != "facts/a.md" {
		t.Errorf("print: %+v", r.Hits)
	}
	if r := Search(Query{Text: "car"}, Part{Index: x}); len(r.Hits) != 0 {
		t.Errorf("car found %+v: a stem under five bytes has no kin", r.Hits)
	}
	var got []string
	x.kin("printe", func(o string) { got = append(got, o) })
	if len(got) != 1 || got[0] != "printer" {
		t.Errorf("kin of printe: %q", got)
	}
	got = nil
	x.kin("printer", func(o string) { got = append(got, o) })
	if len(got) != 0 {
		t.Errorf("a term is its own kin: %q", got)
	}
}

// Removed units are compacted once there are more than 256 of them and
// they are more than a quarter of all; a file with no units (put last)
// survives it.
func TestCompactionThreshold(t *testing.T) {
	x := New()
	line := strings.Repeat("- kiwi\n", 1)
	for i := range 1032 {
		x.Put(fmt.Sprintf("facts/f%04d.md", i), "# F\n\n"+line, false, 1)
	}
	x.Put("facts/empty.md", "# Empty\n", false, 1) // no units, numbered after all
	for i := range 258 {
		x.Remove(fmt.Sprintf("facts/f%04d.md", i))
	}
	if x.dead != 258 {
		t.Fatalf("258 of 1032 removed (exactly a quarter): compacted already, %d dead", x.dead)
	}
	x.Remove("facts/f0258.md")
	if x.dead != 0 || len(x.units) != 1032-259 {
		t.Fatalf("259 of 1032 removed: %d dead, %d units", x.dead, len(x.units))
	}
	y := New()
	for i := range 250 {
		y.Put(fmt.Sprintf("facts/f%04d.md", i), "# F\n\n"+line+line+line+line, false, 1)
	}
	for i := range 64 {
		y.Remove(fmt.Sprintf("facts/f%04d.md", i))
	}
	if y.dead != 256 {
		t.Fatalf("exactly 256 of 1000 removed: %d dead (compacted)", y.dead)
	}
	if r := Search(Query{Text: "kiwi"}, Part{Index: x}); r.Total != 1032-259 {
		t.Errorf("after compaction %d found", r.Total)
	}
	if st, ok := x.Stamp("facts/empty.md"); !ok || st != 1 {
		t.Error("the empty file is gone")
	}
}

// tf is the weighted frequency of term t in u (0: not in it).
func (u *parsedUnit) tf(t string) int {
	for _, x := range u.terms {
		if x.term == t {
			return x.tf
		}
	}
	return 0
}

// Kin are within three bytes of the stem's length, either way.
func TestKinLength(t *testing.T) {
	x := indexOf(map[string]string{"facts/a.md": "# A\n\n- print printable printwork\n"})
	kin := func(s string) string {
		var got []string
		x.kin(s, func(o string) { got = append(got, o) })
		slices.Sort(got)
		return strings.Join(got, " ")
	}
	for s, want := range map[string]string{"print": "printabl", "printabl": "print", "printwork": "", "printab": "print printabl"} {
		if got := kin(s); got != want {
			t.Errorf("kin of %s: %q, want %q", s, got, want)
		}
	}
}

// The last line counts without a newline after it, and a file of blank
// lines has no unit.
func TestLastLine(t *testing.T) {
	x := indexOf(map[string]string{"facts/a.md": "# A\n\n- kiwi", "episodes/2026-01.md": "## Kiwi trip\n- Date: 2026-01-02\n- pear", "facts/b.md": "\n\n\n"})
	r := Search(Query{Text: "kiwi pear"}, Part{Index: x})
	if len(r.Hits) != 2 || r.Hits[0].Path != "episodes/2026-01.md" || r.Hits[0].End != 3 || r.Hits[1].Line != 3 {
		t.Errorf("hits %+v", r.Hits)
	}
	if len(parseFile("facts/b.md", "\n\n\n", nil)) != 0 {
		t.Error("blank lines made a unit")
	}
}

// Scores are BM25 (k1 1.2, b 0.75) as the textbook writes it, over the
// visible units, times the bonus for the query's words a unit holds:
// worked out here apart from the index, each fact line a file of its own.
func TestScoresAreBM25(t *testing.T) {
	lines := []string{"kiwi pear plum", "kiwi lime", "pear", "kiwi kiwi fig fig fig fig", "lime fig", "plum plum plum", "fig plum kiwi"}
	x := New()
	for i, l := range lines {
		x.Put(fmt.Sprintf("facts/f%d.md", i), "# F\n\n- "+l+"\n", i%2 == 0, 1)
	}
	for _, tc := range []struct {
		shared bool
		query  string
	}{{false, "kiwi plum"}, {true, "kiwi plum"}, {false, "fig"}, {true, "kiwi plum fig"}, {false, "kiwi plum fig"}} {
		shared := tc.shared
		var units [][]string
		for i, l := range lines {
			if !shared || i%2 == 0 {
				units = append(units, strings.Fields(l))
			}
		}
		n, sum := float64(len(units)), 0.0
		for _, u := range units {
			sum += float64(len(u))
		}
		avg := sum / n
		query := strings.Fields(tc.query)
		words := float64(len(query)) // not the compounds kiwi-plum, plum-fig
		want := map[string]float64{}
		for i, l := range lines {
			if shared && i%2 != 0 {
				continue
			}
			u := strings.Fields(l)
			score, matched := 0.0, 0
			for _, q := range query {
				df := 0.0
				for _, v := range units {
					if slices.Contains(v, q) {
						df++
					}
				}
				tf := 0.0
				for _, w := range u {
					if w == q {
						tf++
					}
				}
				if tf == 0 {
					continue
				}
				matched++
				idf := math.Log(1 + (n-df+0.5)/(df+0.5))
				score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(len(u))/avg))
			}
			if matched > 0 {
				if matched > 1 {
					score *= 1 + 0.25*float64(matched-1)/(words-1)
				}
				want[fmt.Sprintf("facts/f%d.md", i)] = score
			}
		}
		r := Search(Query{Text: tc.query, Limit: 20}, Part{Index: x, SharedOnly: shared})
		if len(r.Hits) != len(want) || r.Total != len(want) {
			t.Errorf("%+v: %d hits (%d in all), want %d", tc, len(r.Hits), r.Total, len(want))
		}
		for _, h := range r.Hits {
			if w, ok := want[h.Path]; !ok || !(math.Abs(h.Score-w) <= 1e-5*w) {
				t.Errorf("%+v: %s scores %.6f, want %.6f", tc, h.Path, h.Score, w)
			}
		}
	}
}

// The best limit hits are the first limit of all of them, in the same
// order, whatever the limit: ties broken by date, then path, then line.
func TestLimitKeepsTheOrder(t *testing.T) {
	files := map[string]string{}
	for i := range 40 {
		var b strings.Builder
		for j := range 3 {
			fmt.Fprintf(&b, "## Entry %d\n- Date: 2026-0%d-1%d\n- %s\n\n", j, 1+i%3, j, strings.Repeat("kiwi ", 1+(i*7+j)%4))
		}
		files[fmt.Sprintf("episodes/2026-%02d.md", i)] = b.String()
		files[fmt.Sprintf("facts/f%02d.md", i)] = fmt.Sprintf("# F\n\n- %s\n- %s pear\n", strings.Repeat("kiwi ", 1+i%3), strings.Repeat("kiwi ", 1+i%2))
	}
	x := indexOf(files)
	all := Search(Query{Text: "kiwi", Limit: 1000}, Part{Index: x})
	if all.Total != 160 || len(all.Hits) != 160 {
		t.Fatalf("%d hits of %d", len(all.Hits), all.Total)
	}
	for i := 1; i < len(all.Hits); i++ {
		a, b := all.Hits[i-1], all.Hits[i]
		if a.Score < b.Score || a.Score == b.Score && hitDay(a) < hitDay(b) ||
			a.Score == b.Score && hitDay(a) == hitDay(b) && (a.Path > b.Path || a.Path == b.Path && a.Line > b.Line) {
			t.Fatalf("out of order at %d: %+v before %+v", i, a, b)
		}
	}
	for _, k := range []int{1, 2, 3, 7, 20, 64, 159} {
		got := Search(Query{Text: "kiwi", Limit: k}, Part{Index: x})
		if fmt.Sprint(got.Hits) != fmt.Sprint(all.Hits[:k]) || got.Total != 160 {
			t.Errorf("limit %d: %v\nwant %v", k, got.Hits, all.Hits[:k])
		}
	}
}

// A query cut at MaxQuery keeps a whole last character, and one of
// exactly MaxQuery bytes is not cut.
func TestQueryCutOnACharacter(t *testing.T) {
	x := New()
	x.Put("facts/a.md", "# A\n\n- the café\n", false, 1)
	exact := strings.Repeat("x ", (MaxQuery-len(" café"))/2) + " café"
	exact = strings.Repeat("x", MaxQuery-len(exact)) + exact
	if len(exact) != MaxQuery {
		t.Fatalf("query of %d bytes", len(exact))
	}
	if r := Search(Query{Text: exact}, Part{Index: x}); len(r.Hits) != 1 {
		t.Errorf("a query of MaxQuery bytes lost its last word: %+v", r.Hits)
	}
	if r := Search(Query{Text: exact + "é"}, Part{Index: x}); len(r.Hits) != 1 {
		t.Errorf("a query cut after MaxQuery lost its last whole word: %+v", r.Hits)
	}
}

// A word said twice counts once, and a capitalised word's kin count half
// as much as a lower-case one's (its stem already does).
func TestQueryWords(t *testing.T) {
	x := indexOf(map[string]string{"facts/a.md": "# A\n\n- the printer jammed\n- kiwi pear\n"})
	once := Search(Query{Text: "kiwi pear"}, Part{Index: x})
	twice := Search(Query{Text: "kiwi kiwi pear"}, Part{Index: x})
	if fmt.Sprint(once) != fmt.Sprint(twice) {
		t.Errorf("a word said twice: %+v, once: %+v", twice, once)
	}
	lower := Search(Query{Text: "print"}, Part{Index: x})
	upper := Search(Query{Text: "Print"}, Part{Index: x})
	if len(lower.Hits) != 1 || len(upper.Hits) != 1 || math.Abs(upper.Hits[0].Score*2-lower.Hits[0].Score) > 1e-6 {
		t.Errorf("kin of Print %+v, of print %+v: want half", upper.Hits, lower.Hits)
	}
}

// A forget keeps none of the memory's words: the stems remembered for
// speed go with one file forgotten, or with the whole index cleared.
func TestForgetKeepsNoWords(t *testing.T) {
	x := New()
	x.Put("facts/a.md", "# A\n\n- tangerine codename\n", false, 1)
	x.Put("facts/b.md", "# B\n\n- kiwi\n", false, 1)
	words := func() int {
		x.stemmed.mu.RLock()
		defer x.stemmed.mu.RUnlock()
		return len(x.stemmed.m)
	}
	if words() == 0 {
		t.Fatal("no stems remembered")
	}
	x.Forget("facts/a.md")
	if words() != 0 || x.Len() != 1 {
		t.Errorf("after forgetting a file: %d words, %d files", words(), x.Len())
	}
	x.Put("facts/c.md", "# C\n\n- lime\n", false, 1)
	x.Clear()
	if words() != 0 {
		t.Errorf("after Clear: %d words", words())
	}
}

// A fact line under "## Earlier" (replaced) ranks after the current
// ones, in its file and against other files, and is still found.
func TestEarlierFactsRankAfterCurrent(t *testing.T) {
	files := map[string]string{
		"facts/home.md":   "# Home\n\n> Summary: home\n\n- Lives in: Berlin\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-20)\n- Lyon flat: rue Lyon, Lyon\n",
		"facts/travel.md": "# Travel\n\n> Summary: trips\n\n- Trip: Lyon in spring\n",
	}
	r := Search(Query{Text: "Lyon", Today: today}, Part{Index: indexOf(files)})
	if len(r.Hits) != 2 || r.Hits[0].Path != "facts/travel.md" || r.Hits[1].Path != "facts/home.md" {
		t.Errorf("hits %+v: want the current fact first, the earlier ones after", r.Hits)
	}
	r = Search(Query{Text: "lives", Today: today}, Part{Index: indexOf(files)})
	if len(r.Hits) != 1 || !slices.Equal(r.Hits[0].Lines, []int{5, 9}) {
		t.Errorf("hits %+v: want line 5 (current) as the hit, then 9 (earlier)", r.Hits)
	}
}
