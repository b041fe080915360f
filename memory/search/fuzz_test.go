package search

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzQuery: any query, on any day, over a small memory, gives at most
// the limit of hits, best first, each a unit of a file that is in the
// index with positive score, within the file's bytes; and never panics.
func FuzzQuery(f *testing.F) {
	for _, q := range []string{"", "cache key fix", "in March", "last week on Tuesday", "a couple of weeks ago", "Mark's 2026-03-04",
		"around Christmas last year", "first time", "go-openai v1.2", "ÄÖ ß ǅ", "\x00\xff", "last", "ago ago", "2026-13", "in may 2025", "three days ago"} {
		f.Add(q, int64(0), 5)
	}
	files := map[string]string{
		"facts/a.md":          "# A\n\n> Summary: a\n\n- Name: Mark\n- Likes: cache keys\n## Section\n- CI: fixed\n",
		"episodes/2026-03.md": episodes("2026-03", entry("Cache key", "fixed the cache key", "2026-03-04", "go-openai v1.2 on Tuesday"), entry("Christmas", "party", "2025-12-24")),
		"episodes/2026-11.md": "# x\n## no date\nbody words\n## \n- Date: 2026-11-01\n",
	}
	x := indexOf(files)
	f.Fuzz(func(t *testing.T, q string, days int64, limit int) {
		day := today.Add(time.Duration(days%4000) * 24 * time.Hour)
		r := Search(Query{Text: q, Today: day, Limit: limit}, Part{Index: x}, Part{Index: x, Prefix: "channel/", SharedOnly: true})
		want := limit
		if want <= 0 {
			want = 8
		}
		if len(r.Hits) > want || r.Total < len(r.Hits) {
			t.Fatalf("%d hits of %d, limit %d", len(r.Hits), r.Total, limit)
		}
		for i, h := range r.Hits {
			text, ok := files[strings.TrimPrefix(h.Path, "channel/")]
			if !ok || h.Score <= 0 || h.End > strings.Count(text, "\n")+1 || h.Line < 1 || h.End < h.Line || h.Size != len(text) {
				t.Fatalf("hit %+v", h)
			}
			if i > 0 && h.Score > r.Hits[i-1].Score {
				t.Fatalf("hit %d scores %v after %v", i, h.Score, r.Hits[i-1].Score)
			}
			if strings.HasPrefix(h.Path, "channel/") {
				t.Fatalf("a private file in a shared part: %+v", h)
			}
		}
		// A line holds at most each of the query's words (and the
		// compounds they make) once.
		m, qws := Matcher(Query{Text: q}), len(parseQueryWords(q))
		for l := range strings.SplitSeq(files["facts/a.md"], "\n") {
			if n := m(l); n > qws {
				t.Fatalf("%q matches %d of the %d words of %q", l, n, qws, q)
			}
		}
	})
}

// FuzzParse: any text of any file gives units inside it: lines in order,
// byte ranges within the text that start at their heading, dates valid.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "## a\n- Date: 2026-01-01\nx", "# T\n> Summary: s\n- k: v\n## S\n- l\n", "\n\n## \n## x\r\n", "- Date: 2026-02-30"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, episode bool) {
		path := "facts/x.md"
		if episode {
			path = "episodes/2026-01.md"
		}
		prev := 0
		for _, u := range parseFile(path, text, nil) {
			if u.line <= prev || u.end < u.line || u.start < 0 || u.stop > len(text) || u.start > u.stop {
				t.Fatalf("unit %+v after line %d in %q", u, prev, text)
			}
			if episode && !strings.HasPrefix(text[u.start:], "## ") {
				t.Fatalf("entry %+v does not start at its heading in %q", u, text)
			}
			if u.date != noDate && parseDay(formatDay(u.date)) != u.date {
				t.Fatalf("date %d", u.date)
			}
			for _, e := range u.terms {
				if term := e.term; term == "" || !utf8.ValidString(term) && utf8.ValidString(text) {
					t.Fatalf("term %q of %q", term, text)
				}
			}
			prev = u.end
		}
		x := New()
		x.Put(path, text, false, 1)
		x.Put(path, text+"\n## more\n- extra words", true, 2)
		x.Remove(path)
		if x.n != 0 || x.sum != 0 || x.Len() != 0 {
			t.Fatalf("statistics after remove: %d %d", x.n, x.sum)
		}
	})
}

// parseQueryWords is the words parseQuery makes of q.
func parseQueryWords(q string) []queryWord {
	qws, _ := parseQuery(Query{Text: q})
	return qws
}
