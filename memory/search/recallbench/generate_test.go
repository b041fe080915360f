package recallbench

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(7), Generate(7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two sets of seed 7 differ")
	}
	if c := Generate(8); reflect.DeepEqual(a.Files, c.Files) {
		t.Error("seeds 7 and 8 give the same files")
	}
}

func TestGenerateShape(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		s := Generate(seed)
		if !s.Today.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("seed %d: today %v", seed, s.Today)
		}
		entries, facts := 0, 0
		var months []string
		for _, p := range sortedPaths(s.Files) {
			text := s.Files[p]
			lines := strings.Split(text, "\n")
			if !strings.HasPrefix(lines[0], "# ") || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "> Summary: ") }) {
				t.Errorf("seed %d: %s has no title or no summary", seed, p)
			}
			switch {
			case strings.HasPrefix(p, "episodes/"):
				month := strings.TrimSuffix(strings.TrimPrefix(p, "episodes/"), ".md")
				months = append(months, month)
				for i, l := range lines {
					if !strings.HasPrefix(l, "## ") {
						continue
					}
					entries++
					if i+2 >= len(lines) || !strings.HasPrefix(lines[i+1], "- Summary: ") || !strings.HasPrefix(lines[i+2], "- Date: "+month+"-") {
						t.Errorf("seed %d: %s:%d: an entry without its summary and date of the month", seed, p, i+1)
					}
				}
			case strings.HasPrefix(p, "facts/"):
				facts++
				n := len(splitUnits(p, text))
				if n < 5 || n > 30 {
					t.Errorf("seed %d: %s has %d fact lines", seed, p, n)
				}
			default:
				t.Errorf("seed %d: file %s", seed, p)
			}
		}
		if entries < 400 || entries > 700 {
			t.Errorf("seed %d: %d entries", seed, entries)
		}
		if facts < 8 || facts > 12 {
			t.Errorf("seed %d: %d fact files", seed, facts)
		}
		var want []string
		for m := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC); m.Before(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); m = m.AddDate(0, 1, 0) {
			want = append(want, m.Format("2006-01"))
		}
		if !slices.Equal(months, want) {
			t.Errorf("seed %d: months %v", seed, months)
		}
		checkQuestions(t, s)
	}
}

// checkQuestions checks that a set's questions are well formed: unique ids,
// every kind at least 25 times, every evidence line an entry's heading or
// a fact line.
func checkQuestions(t *testing.T, s Set) {
	t.Helper()
	ids := map[string]bool{}
	kinds := map[string]int{}
	for _, q := range s.Questions {
		if ids[q.ID] {
			t.Errorf("%s: id twice", q.ID)
		}
		ids[q.ID] = true
		kinds[q.Kind]++
		if strings.TrimSpace(q.Query) == "" || len(q.Evidence) == 0 {
			t.Errorf("%s: no query or no evidence", q.ID)
		}
		if strings.Contains(q.Query, "{") {
			t.Errorf("%s: %q has a placeholder left", q.ID, q.Query)
		}
		for _, e := range q.Evidence {
			text, ok := s.Files[e.Path]
			if !ok {
				t.Errorf("%s: evidence in no file %s", q.ID, e.Path)
				continue
			}
			l := lineOf(text, e.Line)
			if isEpisodePath(e.Path) {
				if !strings.HasPrefix(l, "## ") {
					t.Errorf("%s: %s:%d is %q, not an entry's heading", q.ID, e.Path, e.Line, l)
				}
				// An entry of a day before the question's.
				for _, u := range splitUnits(e.Path, text) {
					if u.line == e.Line {
						_, date, _ := strings.Cut(u.text, "- Date: ")
						if d, err := time.Parse(time.DateOnly, date[:min(10, len(date))]); err != nil || !d.Before(s.today(q)) {
							t.Errorf("%s: %s:%d is not dated before the question", q.ID, e.Path, e.Line)
						}
					}
				}
				continue
			}
			if !slices.ContainsFunc(splitUnits(e.Path, text), func(u aUnit) bool { return u.line == e.Line }) || !strings.HasPrefix(l, "- ") {
				t.Errorf("%s: %s:%d is %q, not a fact line", q.ID, e.Path, e.Line, l)
			}
		}
	}
	for _, k := range Kinds {
		if kinds[k] < 25 {
			t.Errorf("%d questions of kind %s, want 25 or more", kinds[k], k)
		}
	}
	if len(kinds) != len(Kinds) {
		t.Errorf("kinds %v", kinds)
	}
}

// TestTemporalCues checks the days a person's words mean, asked on a
// Sunday, 29 November 2026.
func TestTemporalCues(t *testing.T) {
	today := day("2026-11-29")
	phrases := func(d string) map[string][2]string {
		out := map[string][2]string{}
		for _, c := range cuesFor(day(d), today) {
			out[c.phrase] = [2]string{c.from.Format(time.DateOnly), c.to.Format(time.DateOnly)}
		}
		return out
	}
	for _, c := range []struct {
		day, phrase, from, to string
	}{
		{"2026-03-12", "in March", "2026-03-01", "2026-03-31"},
		{"2026-03-12", "back in the spring", "2026-03-01", "2026-05-31"},
		{"2025-12-03", "in December", "2025-12-01", "2025-12-31"},
		{"2025-12-23", "around Christmas", "2025-12-20", "2026-01-02"},
		{"2026-01-20", "over the winter", "2025-12-01", "2026-02-28"},
		{"2025-11-06", "in November last year", "2025-11-01", "2025-11-30"},
		{"2025-07-06", "in July 2025", "2025-07-01", "2025-07-31"},
		{"2025-07-06", "in the summer of 2025", "2025-06-01", "2025-08-31"},
		{"2025-10-06", "in the fall last year", "2025-09-01", "2025-11-30"},
		{"2026-10-06", "last month", "2026-10-01", "2026-10-31"},
		{"2026-10-06", "this fall", "2026-09-01", "2026-11-30"},
		{"2026-11-03", "earlier this month", "2026-11-01", "2026-11-29"},
		{"2026-11-17", "last week", "2026-11-16", "2026-11-22"},
		{"2026-11-17", "a couple of weeks ago", "2026-11-11", "2026-11-19"},
		{"2026-11-24", "on Tuesday", "2026-11-24", "2026-11-24"},
		{"2026-11-28", "yesterday", "2026-11-28", "2026-11-28"},
	} {
		got, ok := phrases(c.day)[c.phrase]
		if !ok || got != [2]string{c.from, c.to} {
			t.Errorf("%s as %q: %v (%v), want %s..%s; cues %v", c.day, c.phrase, got, ok, c.from, c.to, phrases(c.day))
		}
	}
	if _, ok := phrases("2025-11-06")["in November"]; ok {
		t.Error(`November 2025 called "in November" on 29 November 2026`)
	}
}
