package memory

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFileSummary(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"summary line", userFact, "user name, language"},
		{"summary case and spacing", "# T\n\n  >summary:   a  b \n", "a b"},
		{"fallback title", "# Project Notes\n\n- uses Go\n", "Project Notes"},
		{"fallback first line", "\n\n- likes tea\n- hates coffee\n", "likes tea"},
		{"summary below entries ignored", "# 2026-02 Episodes\n\n## Fix\n> Summary: inner\n", "2026-02 Episodes"},
		{"entries only", "## Fix logger\n- Summary: logger fix\n- Date: 2026-02-01\n", "logger fix"},
		{"entries only, no summaries", "## Fix logger\n- Date: 2026-02-01\n", "Fix logger"},
		{"stamps are no summary", "- likes tea <!-- src: slack · dm · 2026-01-01 · https://x -->\n", "likes tea"},
		{"a stamped heading is no summary", "## Fix logger <!-- src: terminal · 2026-02-01 -->\n- Date: 2026-02-01\n", "Fix logger"},
		{"empty", "", "(empty)"},
		{"byte order mark", "\ufeff# Title\n\n- x\n", "Title"},
		{"blank", "\n \n", "(empty)"},
		{"empty summary falls back", "# Title\n> Summary:\n", "Title"},
		{"invisible stripped", "# T\n> Summary: a\u200bb\U000E0041c\u202e\n", "abc"},
		{"control chars", "# T\n> Summary: a\tb\x01c\n", "a b c"},
		{"long cut", "# T\n> Summary: " + strings.Repeat("é", 300) + "\n", strings.Repeat("é", 98) + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FileSummary(c.text); got != c.want {
				t.Errorf("FileSummary = %q; want %q", got, c.want)
			}
		})
	}
}

func TestCheckFact(t *testing.T) {
	cases := []struct{ text, wantErr string }{
		{userFact, ""},
		{"- Name: x\n", "needs a \"# Title\" line and"},
		{"# T\n- Name: x\n", "needs a \"> Summary: ...\" line"},
		{"> Summary: x\n- Name: x\n", "needs a \"# Title\" line at the top"},
		{"# \n> Summary: x\n", "needs a \"# Title\" line at the top"},
	}
	for _, c := range cases {
		err := checkFact(c.text)
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("checkFact(%q) = %v; want %q", c.text, err, c.wantErr)
		}
	}
}

func TestParseEntry(t *testing.T) {
	good := "## Logger fix\n- Summary: pino leak → custom transport\n- Date: 2026-02-24\n- Lesson: x\n"
	e, err := parseEntry(good)
	if err != nil || e.Title != "Logger fix" || e.Summary != "pino leak → custom transport" || e.Date != "2026-02-24" {
		t.Fatalf("parseEntry(good) = %+v, %v", e, err)
	}
	if e, err := parseEntry("\n\n## T\n- Date: 2026-02-01\n- summary: s\n"); err != nil || e.Summary != "s" {
		t.Errorf("order and case of fields should not matter: %+v %v", e, err)
	}
	bad := []struct{ entry, want string }{
		{"", "entry is empty"},
		{"  \n", "entry is empty"},
		{"- Summary: x\n- Date: 2026-02-01", "must start with a \"## Title\""},
		{"# T\n- Summary: x\n- Date: 2026-02-01", "must start with a \"## Title\""},
		{"## A\n- Summary: x\n- Date: 2026-02-01\n## B\n- Summary: y\n- Date: 2026-02-02", "2 \"## \" headings"},
		{"## A\n- Summary: x\n- Date: 2026-02-01\n# Injected title", "must not contain a \"# \" file title"},
		{"## A\n- Date: 2026-02-01", "needs a \"- Summary: ...\""},
		{"## A\n- Summary: x", "needs a \"- Date: YYYY-MM-DD\" line (got \"\")"},
		{"## A\n- Summary: x\n- Date: 2026-02-30", "(got \"2026-02-30\")"},
		{"## A\n- Summary: x\n- Date: yesterday", "(got \"yesterday\")"},
	}
	for _, c := range bad {
		if _, err := parseEntry(c.entry); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseEntry(%q) = %v; want %q", c.entry, err, c.want)
		}
	}
}

func TestParseEpisodesProblems(t *testing.T) {
	text := "# 2026-02 Episodes\n\n> Summary: x\n\n## Ok\n- Summary: a\n- Date: 2026-02-01\n\n## Torn\n- Summary: b\n\n## Nosum\n- Date: 2026-02-03\n"
	header, entries, problems := parseEpisodes(text)
	if header != "# 2026-02 Episodes\n\n> Summary: x\n" {
		t.Errorf("header = %q", header)
	}
	if len(entries) != 3 || entries[1].Line != 9 {
		t.Fatalf("entries = %+v", entries)
	}
	want := []string{`line 9: entry "Torn" has no "- Date: YYYY-MM-DD" line`, `line 12: entry "Nosum" has no "- Summary:" line`}
	if strings.Join(problems, "|") != strings.Join(want, "|") {
		t.Errorf("problems = %q; want %q", problems, want)
	}
}

// episodesSummarized makes one episode a summary, oldest first.
func episodesSummarized(ss ...string) []episode {
	var es []episode
	for _, s := range ss {
		es = append(es, episode{Summary: s})
	}
	return es
}

func TestEpisodeSummary(t *testing.T) {
	mk := episodesSummarized
	if got := episodeSummary(mk("logger fix", "short ID", "config refactor")); got != "logger fix, short ID, config refactor" {
		t.Errorf("got %q", got)
	}
	many := mk(strings.Repeat("a", 50), strings.Repeat("b", 50), strings.Repeat("c", 50), "", "newest")
	got := episodeSummary(many)
	if !strings.HasPrefix(got, "…, ") || !strings.HasSuffix(got, "newest") || len(got) > episodeSumBudget || strings.Contains(got, "aaa") {
		t.Errorf("budgeted summary = %q", got)
	}
	if got := episodeSummary(mk(strings.Repeat("z", 300))); len(got) > episodeSumBudget || !strings.HasSuffix(got, "…") {
		t.Errorf("one long summary = %q", got)
	}
	if got := episodeSummary(nil); got != "" {
		t.Errorf("no entries = %q", got)
	}
}

func TestSetSummary(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"replace", "# T\n\n> Summary: old\n\n## E\n", "# T\n\n> Summary: new\n\n## E\n"},
		{"insert under title", "# T\n\n## E\n", "# T\n\n> Summary: new\n\n## E\n"},
		{"insert under title, text right after", "# T\nbody\n", "# T\n\n> Summary: new\n\nbody\n"},
		{"no title", "## E\n- x\n", "# 2026-02 Episodes\n\n> Summary: new\n\n## E\n- x\n"},
		{"summary inside entry untouched", "# T\n## E\n> Summary: inner\n", "# T\n\n> Summary: new\n\n## E\n> Summary: inner\n"},
		// Edges found by mutation testing.
		{"title is the last line", "# T", "# T\n\n> Summary: new"},
		{"summary in the first entry of a file without header", "## E\n> Summary: inner\n- Date: 2026-02-01\n",
			"# 2026-02 Episodes\n\n> Summary: new\n\n## E\n> Summary: inner\n- Date: 2026-02-01\n"},
		{"two titles: under the first", "# A\n\n# B\n\n## E\n", "# A\n\n> Summary: new\n\n# B\n\n## E\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := setSummary(c.text, "new", "2026-02 Episodes"); got != c.want {
				t.Errorf("setSummary = %q; want %q", got, c.want)
			}
		})
	}
}

func TestStripInvisible(t *testing.T) {
	in := "a\u200bb\u200cc\u200dd\u2060e\ufefff\U000E0001g\U000E007Fh\u202ai\u202ej\u2066k\u2069l\u200em\u200fn\u061co\u180ep\xffq"
	if got := StripInvisible(in); got != "abcdefghijklmnopq" {
		t.Errorf("StripInvisible = %q", got)
	}
	if s := "plain 中文 ✓"; StripInvisible(s) != s {
		t.Error("visible text changed")
	}
}

// FuzzMarkdown: the summary and entry parsers never panic, a summary is one
// short valid line, and setSummary makes the file report that summary.
func FuzzMarkdown(f *testing.F) {
	f.Add(userFact, "new summary")
	f.Add("# 2026-02 Episodes\n\n> Summary: x\n\n## A\n- Summary: a\n- Date: 2026-02-01\n", "s")
	f.Add("## A\n- Summary: \u200b\n- Date: 2026-13-01\n", "")
	f.Add("\xff\xfe# \n>Summary:\n##\n", "x")
	f.Fuzz(func(t *testing.T, text, summary string) {
		s := FileSummary(text)
		if len(s) > maxSummaryLen || strings.ContainsAny(s, "\n\r") || !utf8.ValidString(s) || s == "" {
			t.Fatalf("FileSummary(%q) = %q", text, s)
		}
		_, entries, _ := parseEpisodes(text)
		if es := episodeSummary(entries); len(es) > episodeSumBudget {
			t.Fatalf("episodeSummary too long: %q", es)
		}
		_, _ = parseEntry(text)
		want := oneLine(summary, maxSummaryLen)
		if want == "" {
			return
		}
		out := setSummary(text, want, "T")
		if got := FileSummary(out); got != want {
			t.Fatalf("after setSummary(%q, %q): FileSummary = %q\n%s", text, want, got, out)
		}
	})
}
