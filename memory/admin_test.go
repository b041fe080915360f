package memory

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	s := newStore(t, func(o *Options) { o.ReadCap = 2048 })
	for _, tc := range []struct {
		path, text string
		want       []ProblemKind
	}{
		{"facts/a.md", "# A\n> Summary: fine\n", nil},
		{"facts/a.md", "> Summary: no title\n", []ProblemKind{ProblemNoTitle}},
		{"facts/a.md", "# A\nno summary\n", []ProblemKind{ProblemNoSummary}},
		{"facts/a.md", "# A\n> Summary: x\n\x00", []ProblemKind{ProblemBadText}},
		{"facts/a.md", "# A\n> Summary: x\n" + strings.Repeat("x", 2048), []ProblemKind{ProblemTooLarge}},
		{"episodes/2026-11.md", "# Episodes\n> Summary: s\n\n## Did\n- Summary: it\n- Date: 2026-11-02\n", nil},
		// An episode file needs no "# Title"; a torn entry is reported.
		{"episodes/2026-11.md", "> Summary: s\n\n## Did\n- Summary: it\n", []ProblemKind{ProblemTorn}},
		{"episodes/2026-11.md", "## Did\n- Summary: it\n- Date: 2026-11-02\n", []ProblemKind{ProblemNoSummary}},
	} {
		got, err := s.CheckText("ann", tc.path, []byte(tc.text))
		if err != nil {
			t.Fatalf("CheckText(%q): %v", tc.path, err)
		}
		var kinds []ProblemKind
		for _, p := range got {
			kinds = append(kinds, p.Kind)
			if p.User != "ann" || p.Path != tc.path || p.Detail == "" {
				t.Errorf("problem %+v lacks its user, path or detail", p)
			}
		}
		if strings.Join(kindStrings(kinds), ",") != strings.Join(kindStrings(tc.want), ",") {
			t.Errorf("CheckText(%q, %q) = %v, want %v", tc.path, tc.text, kinds, tc.want)
		}
	}
	if _, err := s.CheckText("ann", "facts/../x.md", nil); !errors.Is(err, ErrBadPath) {
		t.Errorf("bad path: %v", err)
	}
}

func kindStrings(k []ProblemKind) []string {
	out := make([]string, len(k))
	for i, v := range k {
		out[i] = string(v)
	}
	return out
}

func TestReplace(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 64 })
	u := mustUser(t, s, "ann")
	file := filepath.Join(s.opts.Dir, "ann", "episodes", "2026-11.md")

	// A new file: based on the absent version.
	v1, err := u.Replace("episodes/2026-11.md", "# E\n", Version{}, nil)
	if err != nil || readFile(t, file) != "# E\n" {
		t.Fatalf("create: %v, %q", err, readFile(t, file))
	}
	// Based on the absent version again: it exists now, a conflict.
	if _, err := u.Replace("episodes/2026-11.md", "# lost\n", Version{}, nil); !errors.Is(err, ErrConflict) {
		t.Errorf("stale create: %v", err)
	}
	// A change in between (a bot append) wins over an edit based on v1.
	if _, err := u.Append("episodes/2026-11.md", "## B\n- Summary: b\n- Date: 2026-11-03\n", "", nil); err != nil {
		t.Fatal(err)
	}
	appended := readFile(t, file)
	if _, err := u.Replace("episodes/2026-11.md", "# mine\n", v1, nil); !errors.Is(err, ErrConflict) || readFile(t, file) != appended {
		t.Errorf("edit over a bot write: %v; file %q", err, readFile(t, file))
	}
	cur, _ := u.Version("episodes/2026-11.md")
	var committed []Commit
	v3, err := u.Replace("episodes/2026-11.md", "# mine\n", cur, func(c Commit) error { committed = append(committed, c); return nil })
	if err != nil || readFile(t, file) != "# mine\n" || len(committed) != 1 || !committed[0].After.Same(v3) {
		t.Errorf("edit on the current version: %v, %q, commits %+v", err, readFile(t, file), committed)
	}
	if _, err := u.Replace("episodes/2026-11.md", strings.Repeat("x", 65), v3, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the write cap: %v", err)
	}
	if _, err := u.Replace("notes.txt", "x", v3, nil); !errors.Is(err, ErrBadPath) {
		t.Errorf("bad path: %v", err)
	}
	if readFile(t, file) != "# mine\n" {
		t.Errorf("a refused replace changed the file: %q", readFile(t, file))
	}
	// Exactly the write cap is allowed.
	atCap := strings.Repeat("x", 64)
	if _, err := u.Replace("episodes/2026-11.md", atCap, v3, nil); err != nil || readFile(t, file) != atCap {
		t.Errorf("at the write cap: %v, %d bytes", err, len(readFile(t, file)))
	}
}

func TestEntries(t *testing.T) {
	got := Entries("# E\n> Summary: s\n\n## One\n- Summary: first\n- Date: 2026-11-01\n\ntext\n\n## Two\n- Date: 2026-11-02\n")
	if len(got) != 2 || got[0] != (Entry{"One", "first", "2026-11-01"}) || got[1] != (Entry{"Two", "", "2026-11-02"}) {
		t.Errorf("Entries = %+v", got)
	}
	if len(Entries("# no entries\n")) != 0 {
		t.Error("entries in a file without any")
	}
}
