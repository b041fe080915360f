package recallbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadDir(t *testing.T) {
	s, err := LoadDir(filepath.Join("testdata", "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "tiny" {
		t.Errorf("name %q, want tiny", s.Name)
	}
	if got := strings.Join(sortedPaths(s.Files), " "); got != "episodes/2026-01.md episodes/2026-02.md facts/user.md" {
		t.Errorf("files %s", got)
	}
	if len(s.Questions) != 3 {
		t.Fatalf("%d questions, want 3", len(s.Questions))
	}
	q := s.Questions[0]
	if q.ID != "q1" || q.Kind != "fact" || q.Query != "what is my sister called" || !q.Today.Equal(time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)) ||
		len(q.Evidence) != 1 || q.Evidence[0] != (Evidence{"facts/user.md", 6}) {
		t.Errorf("question 1 read as %+v", q)
	}
	if !s.Questions[2].Today.IsZero() || len(s.Questions[2].Evidence) != 2 {
		t.Errorf("question 3 read as %+v", s.Questions[2])
	}
	r := Evaluate(s)
	// Both rankers find the sister's line and the climbing entry; the
	// textbook cannot tell January's release from February's.
	want := map[string][2]int{"q1": {1, 1}, "q3": {1, 1}}
	for _, o := range r.Outcomes {
		if w, ok := want[o.Question.ID]; ok && (o.MnemoAny != w[0] || o.BM25Any != w[1]) {
			t.Errorf("%s: first ranks mnemo %d, textbook %d; want %v", o.Question.ID, o.MnemoAny, o.BM25Any, w)
		}
		if o.Question.ID == "q2" && o.MnemoAny != 1 {
			t.Errorf("q2: mnemo's first rank %d, want 1 (January's release)", o.MnemoAny)
		}
	}
	if !strings.Contains(r.String(), "recall of tiny: 3 questions") {
		t.Errorf("report:\n%s", r)
	}
}

func TestLoadDirErrors(t *testing.T) {
	tiny := filepath.Join("testdata", "tiny")
	copyTiny := func(t *testing.T, questions string) string {
		t.Helper()
		dir := t.TempDir()
		for _, sub := range []string{"memory/facts", "memory/episodes"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"memory/facts/user.md", "memory/episodes/2026-01.md"} {
			b, err := os.ReadFile(filepath.Join(tiny, p))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if questions != "" {
			if err := os.WriteFile(filepath.Join(dir, "questions.json"), []byte(questions), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, c := range []struct {
		name, questions string
		want            []string
	}{
		{"not json", `[{"id": "q1",`, []string{"questions.json", "unexpected end of JSON"}},
		{"wrong type", `{"id": "q1"}`, []string{"questions.json", "cannot unmarshal"}},
		{"missing", "", []string{"questions.json", "no questions"}},
		{"empty", `[]`, []string{"questions.json", "no questions"}},
		{"no query", `[{"id": "q1", "query": " ", "evidence": [{"path": "facts/user.md", "line": 5}]}]`, []string{"questions.json", `"q1"`, "no id or no query"}},
		{"no evidence", `[{"id": "q1", "query": "sister"}]`, []string{"questions.json", "no evidence"}},
		{"bad today", `[{"id": "q1", "query": "sister", "today": "10/02/2026", "evidence": [{"path": "facts/user.md", "line": 5}]}]`, []string{"questions.json", "YYYY-MM-DD"}},
		{"unknown path", `[{"id": "q7", "query": "sister", "evidence": [{"path": "facts/family.md", "line": 5}]}]`, []string{"questions.json", `"q7"`, "facts/family.md", "not a memory file"}},
		{"line out of file", `[{"id": "q1", "query": "sister", "evidence": [{"path": "facts/user.md", "line": 99}]}]`, []string{"questions.json", "line 99", "outside facts/user.md"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadDir(copyTiny(t, c.questions))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no memory files") {
		t.Errorf("an empty folder: %v", err)
	}
}
