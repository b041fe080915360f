package search

// Edge tests found by mutation testing (gremlins): each pins a boundary
// or a rule exactly at its edge, so a shifted comparison fails a test.
// The mutants no test can kill are listed in .gremlins-equivalent.md.

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// A "- Key:" line with nothing after the key is still the key's field,
// its value empty; one shorter than the key is not.
func TestFieldValueEdges(t *testing.T) {
	for _, tc := range []struct {
		line, key, want string
		ok              bool
	}{
		{"- Date: 2026-03-01", "- Date:", "2026-03-01", true},
		{"  - date:   x  ", "- Date:", "x", true},
		{"- Date:", "- Date:", "", true},
		{"- Date", "- Date:", "", false},
		{"- Summary: a", "- Date:", "", false},
	} {
		v, ok := FieldValue(tc.line, tc.key)
		if v != tc.want || ok != tc.ok {
			t.Errorf("FieldValue(%q, %q) = %q, %v; want %q, %v", tc.line, tc.key, v, ok, tc.want, tc.ok)
		}
	}
	// An entry's bare "- Summary:" line is an empty summary, not a body
	// line holding the word "summary".
	text := episodes("2026-03", entry("Kiwi", "", "2026-03-01"))
	us := parseFile("episodes/2026-03.md", text, nil)
	if len(us) != 1 || us[0].tf("summari") != 0 || us[0].length != 2 {
		t.Errorf("units %+v: want the heading's word (kiwi, =kiwi) and nothing of the bare summary line", us)
	}
}

// A fact's key is at most five words: one of five names the line (its
// words weigh as a heading's), one of six is the line's text.
func TestFactKeyWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		tf   int // of "dentist"
	}{
		{"- Dentist: Dr. Bakker", weightHeading},
		{"- my old dentist near work: Dr. Bakker", weightHeading},
		{"- my old dentist near home work: Dr. Bakker", weightBody},
	} {
		us := parseFile("facts/health.md", "# Health\n\n"+tc.line+"\n", nil)
		if len(us) != 1 || us[0].tf("dentist") != tc.tf {
			t.Errorf("%q: units %+v, want dentist weighing %d", tc.line, us, tc.tf)
		}
	}
}

// lines gives each line once, with its number and offset: a text ending
// in a newline has no empty line after it.
func TestLines(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", ""},
		{"a", "1@0:a"},
		{"a\n", "1@0:a"},
		{"a\n\nbc\n", "1@0:a 2@2: 3@3:bc"},
		{"\n", "1@0:"},
	} {
		var got []string
		lines(tc.text, func(line string, n, off int) { got = append(got, fmt.Sprintf("%d@%d:%s", n, off, line)) })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("lines(%q) = %q, want %q", tc.text, strings.Join(got, " "), tc.want)
		}
	}
}

// queryText is q's words as parseQuery makes them: each word's forms with
// their weights, a compound the words may make marked "+".
func queryText(q string) string {
	var out []string
	for _, qw := range parseQueryWords(q) {
		var forms []string
		for i, f := range qw.forms {
			forms = append(forms, fmt.Sprintf("%s/%g", f, qw.weight[i]))
		}
		s := strings.Join(forms, ",")
		if qw.extra {
			s = "+" + s
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// A query's words: a name both whole and (at half weight when written
// with a capital) by its stem, a compound whole and by its parts, and
// two simple words side by side as the compound they may be written as
// ("on call", on-call); a compound and a word next to it make none, nor
// do words with a time word between them.
func TestQueryParse(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"on call", "=call/1,call/1 +on-call/1"},
		{"ab cd", "=ab/1,ab/1 =cd/1,cd/1 +ab-cd/1"},
		{"Mark fixing", "=mark/1,mark/0.5 =fixing/1,fix/1 +mark-fixing/1"},
		{"go-openai client", "+go-openai/1 =go/1,go/1 =openai/1,openai/1 =client/1,client/1"},
		{"client go-openai", "=client/1,client/1 +go-openai/1 =go/1,go/1 =openai/1,openai/1"},
		{"deploy in March script", "=deploy/1,deploy/1 +deploy-in/1 =script/1,script/1"},
		// One letter is no word, one digit is; a stop word is one only as
		// a name; a word with digits or letters past z is only whole.
		{"x", ""},
		{"7", "=7/1"},
		{"go", "=go/1,go/1"},
		{"will", ""},
		{"Will", "=will/1"},
		{"v2", "=v2/1"},
		{"naïve", "=naïve/1"},
		{"CI", "=ci/1,ci/0.5"},
	} {
		if got := queryText(tc.query); got != tc.want {
			t.Errorf("%q: words %q, want %q", tc.query, got, tc.want)
		}
	}
}

// The stems a memory's words share are remembered up to maxStems, no
// more: past it a word is stemmed each time, and still stemmed right.
func TestStemCacheBound(t *testing.T) {
	var c stemCache
	for i := range maxStems + 2 {
		c.stem(fmt.Sprintf("walking%d", i))
	}
	if len(c.m) != maxStems {
		t.Errorf("%d stems remembered, want maxStems (%d)", len(c.m), maxStems)
	}
	if got := c.stem("walking"); got != "walk" {
		t.Errorf("a word past the bound stemmed %q", got)
	}
}

// timeFactor's weights exactly: a range's own days (both ends in) three
// times, a day near it between 0.5 and 1 by its distance over the range's
// length (a week at least), an undated unit half; "recently" up to twice
// by an age of days over 45, "the first time" up to twice by an age over
// 365, a day after today as of today.
func TestTimeFactorExact(t *testing.T) {
	d := func(s string) int32 { return parseDay(s) }
	now := d("2026-11-29")
	march := when{from: d("2026-03-01"), to: d("2026-03-31")}
	day := when{from: d("2026-03-10"), to: d("2026-03-10")}
	recent := when{from: noDate, to: noDate, recent: true}
	first := when{from: noDate, to: noDate, first: true}
	marchRecent := march
	marchRecent.recent = true
	near := func(dist, span float64) float64 { return 0.5 + 0.5*math.Exp(-dist/span) }
	for _, tc := range []struct {
		name string
		wh   when
		day  string
		want float64
	}{
		{"first day of the range", march, "2026-03-01", 3},
		{"last day of the range", march, "2026-03-31", 3},
		{"after the range", march, "2026-04-03", near(3, 31)},
		{"before the range", march, "2026-02-19", near(10, 31)},
		{"near a one-day range", day, "2026-03-12", near(2, 7)},
		{"undated, in a ranged query", march, "", 0.5},
		{"recently, 9 days ago", recent, "2026-11-20", 1 + math.Exp(-9.0/45)},
		{"recently, today", recent, "2026-11-29", 2},
		{"recently, tomorrow", recent, "2026-11-30", 2},
		{"recently, undated", recent, "", 1},
		{"first, 400 days ago", first, "2025-10-25", 2 - math.Exp(-400.0/365)},
		{"first, tomorrow", first, "2026-11-30", 1},
		{"first, undated", first, "", 1},
		{"in the range and recently", marchRecent, "2026-03-31", 3 * (1 + math.Exp(-243.0/45))},
	} {
		got := timeFactor(tc.wh, parseDay(tc.day), now) // "": noDate
		if !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A part's score gives its best limit hits and no more, while counting
// every unit that matched.
func TestScoreKeepsLimit(t *testing.T) {
	var es []string
	for i := range 5 {
		es = append(es, entry(fmt.Sprintf("Kiwi %d", i), "kiwi", fmt.Sprintf("2026-03-0%d", i+1)))
	}
	x := indexOf(map[string]string{"episodes/2026-03.md": episodes("2026-03", es...)})
	qws, wh := parseQuery(Query{Text: "kiwi", Today: today})
	var idf [][]float64
	for _, qw := range qws {
		idf = append(idf, qw.weight)
	}
	for _, limit := range []int{1, 2, 4, 5, 6} {
		x.mu.RLock()
		hits, total := x.score(0, Part{Index: x}, qws, idf, float64(x.sum)/float64(x.n), wh, dayOf(today), false, limit)
		x.mu.RUnlock()
		if len(hits) != min(limit, 5) || total != 5 {
			t.Errorf("limit %d: %d hits of %d, want %d of 5", limit, len(hits), total, min(limit, 5))
		}
		for i, h := range hits {
			if want := fmt.Sprintf("2026-03-0%d", 5-i); h.Date != want {
				t.Errorf("limit %d: hit %d of %s, want %s (newest first)", limit, i, h.Date, want)
			}
		}
	}
}
