package recallbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Set is a memory and questions about it: Files maps a path in the
// memory's terms ("facts/family.md", "episodes/2026-03.md") to the file's
// text; Today is the day the questions are asked on (a question's own
// Today, when set, wins).
type Set struct {
	Name      string
	Files     map[string]string
	Questions []Question
	Today     time.Time
}

// Question is one thing a person asks, and where the answer is: any of its
// evidence covered by a hit recalls it.
type Question struct {
	ID       string
	Kind     string
	Query    string
	Evidence []Evidence
	Today    time.Time // zero: the set's
}

// Evidence is a line that answers a question: an episode entry's "## "
// heading, or a fact file's line (1-based).
type Evidence struct {
	Path string `json:"path"`
	Line int    `json:"line"`
}

// Hit is a ranked unit in the terms a question's evidence is judged by: an
// episode entry (Line its heading, End its last line) or lines of a fact
// file (Lines).
type Hit struct {
	Path      string
	Line, End int
	Lines     []int
}

// Covers reports whether h shows the evidence e.
func (h Hit) Covers(e Evidence) bool {
	if h.Path != e.Path {
		return false
	}
	if isEpisodePath(h.Path) {
		return h.Line <= e.Line && e.Line <= max(h.End, h.Line)
	}
	return h.Line == e.Line || slices.Contains(h.Lines, e.Line)
}

// isEpisodePath reports whether path names an episode file (its units are
// "## " entries) rather than a fact file (its units are lines).
func isEpisodePath(path string) bool {
	return strings.HasPrefix(path, "episodes/") || strings.Contains(path, "/episodes/")
}

// today is the day q is asked on.
func (s Set) today(q Question) time.Time {
	if !q.Today.IsZero() {
		return q.Today
	}
	return s.Today
}

// questionFile is one question of a questions.json.
type questionFile struct {
	ID       string     `json:"id"`
	Kind     string     `json:"kind"`
	Query    string     `json:"query"`
	Today    string     `json:"today"`
	Evidence []Evidence `json:"evidence"`
}

// LoadDir reads a set from dir: the memory under dir/memory/facts/*.md and
// dir/memory/episodes/*.md, the questions in dir/questions.json, a JSON
// array of {"id", "kind", "query", "today": "YYYY-MM-DD", "evidence":
// [{"path", "line"}]}, evidence paths being the memory's
// ("episodes/2023-05.md"). Each question is asked on its own today. An
// error names the file at fault.
func LoadDir(dir string) (Set, error) {
	s := Set{Name: filepath.Base(filepath.Clean(dir)), Files: map[string]string{}}
	for _, sub := range []string{"facts", "episodes"} {
		names, err := filepath.Glob(filepath.Join(dir, "memory", sub, "*.md"))
		if err != nil {
			return Set{}, err
		}
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				return Set{}, err
			}
			s.Files[sub+"/"+filepath.Base(name)] = string(b)
		}
	}
	if len(s.Files) == 0 {
		return Set{}, fmt.Errorf("recallbench: %s: no memory files (memory/facts/*.md, memory/episodes/*.md)", dir)
	}
	qpath := filepath.Join(dir, "questions.json")
	b, err := os.ReadFile(qpath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Set{}, fmt.Errorf("recallbench: %s: no questions: %w", qpath, err)
		}
		return Set{}, err
	}
	var qs []questionFile
	if err := json.Unmarshal(b, &qs); err != nil {
		return Set{}, fmt.Errorf("recallbench: %s: %w", qpath, err)
	}
	for i, qf := range qs {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("recallbench: %s: question %d (id %q): %s", qpath, i, qf.ID, fmt.Sprintf(format, a...))
		}
		if qf.ID == "" || strings.TrimSpace(qf.Query) == "" {
			return Set{}, bad("no id or no query")
		}
		if len(qf.Evidence) == 0 {
			return Set{}, bad("no evidence")
		}
		q := Question{ID: qf.ID, Kind: qf.Kind, Query: qf.Query, Evidence: qf.Evidence}
		if q.Kind == "" {
			q.Kind = "unkinded"
		}
		if qf.Today != "" {
			t, err := time.Parse(time.DateOnly, qf.Today)
			if err != nil {
				return Set{}, bad("today %q is not YYYY-MM-DD", qf.Today)
			}
			q.Today = t
		}
		for _, e := range q.Evidence {
			text, ok := s.Files[e.Path]
			if !ok {
				return Set{}, bad("evidence path %q is not a memory file", e.Path)
			}
			if n := strings.Count(text, "\n") + 1; e.Line < 1 || e.Line > n {
				return Set{}, bad("evidence line %d is outside %s (%d lines)", e.Line, e.Path, n)
			}
		}
		s.Questions = append(s.Questions, q)
	}
	if len(s.Questions) == 0 {
		return Set{}, fmt.Errorf("recallbench: %s: no questions", qpath)
	}
	return s, nil
}
