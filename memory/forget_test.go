package memory

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestForgetting(t *testing.T) {
	facts := "# User\n\n> Summary: home\n\n- Name: Ana\n- Lives in: Berlin\n- Drinks: tea\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-20)\n- Drinks: coffee (until 2026-01-02)\n"
	episodes := "# 2026-03 Episodes\n\n> Summary: logger fix, CI cache\n\n## Logger fix\n- Summary: logger fix\n- Date: 2026-03-02\n- Solution: a transport\n\n## CI cache\n- Summary: CI cache\n- Date: 2026-03-02\n"
	for _, tc := range []struct {
		name    string
		kind    Kind
		before  string
		patches []Patch
		want    []string // forgotten
		gone    []string // also not in the text after
	}{
		{name: "a fact takes its earlier lines", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "- Lives in: Berlin\n", NewText: ""}},
			want:    []string{"- Lives in: Berlin", "- Lives in: Lyon (until 2026-11-20)"}, gone: []string{"Lyon"}},
		{name: "a blank newText of spaces", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "- Drinks: tea", NewText: " \n"}},
			want:    []string{"- Drinks: tea", "- Drinks: coffee (until 2026-01-02)"}},
		{name: "part of a line", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "Berlin", NewText: ""}},
			want:    []string{"- Lives in: Berlin", "- Lives in: Lyon (until 2026-11-20)"}},
		{name: "an earlier line alone leaves the current one", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "- Lives in: Lyon (until 2026-11-20)\n", NewText: ""}},
			want:    []string{"- Lives in: Lyon (until 2026-11-20)"}},
		{name: "a replacement forgets nothing", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "- Lives in: Berlin", NewText: "- Lives in: Paris"}}},
		{name: "nothing but punctuation", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "\n\n## Earlier", NewText: ""}}},
		{name: "a line still there twice is not forgotten", kind: KindFact, before: "# U\n\n> Summary: x\n\n- Tea\n- Tea\n",
			patches: []Patch{{OldText: "- Tea\n- Tea", NewText: "- Tea"}}},
		{name: "a line deleted beside a replacement", kind: KindFact, before: facts,
			patches: []Patch{{OldText: "- Name: Ana\n", NewText: ""}, {OldText: "- Drinks: tea", NewText: "- Drinks: mate"}},
			want:    []string{"- Name: Ana"}},
		{name: "an episode entry", kind: KindEpisode, before: episodes,
			patches: []Patch{{OldText: "## Logger fix\n- Summary: logger fix\n- Date: 2026-03-02\n- Solution: a transport\n\n", NewText: ""}},
			// The date stays: another entry has it.
			want: []string{"## Logger fix", "- Summary: logger fix", "- Solution: a transport"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := applyPatches("f", tc.before, tc.patches)
			if err != nil {
				t.Fatal(err)
			}
			after, got := forgetting(tc.kind, tc.before, out, tc.patches)
			if !slices.Equal(got, tc.want) {
				t.Errorf("forgotten %q, want %q", got, tc.want)
			}
			for _, w := range append(tc.want, tc.gone...) {
				if strings.Contains(after, w) {
					t.Errorf("%q is still in the text:\n%s", w, after)
				}
			}
			if len(tc.want) == 0 && after != out {
				t.Errorf("the text changed:\n%s\nwant:\n%s", after, out)
			}
		})
	}
}

func TestDropEmptyEarlier(t *testing.T) {
	for in, want := range map[string]string{
		"# U\n\n- A\n\n## Earlier\n\n":                         "# U\n\n- A\n",
		"# U\n\n- A\n\n## Earlier\n":                           "# U\n\n- A\n",
		"# U\n\n- A\n\n## Earlier\n\n## Pets\n- cat\n":         "# U\n\n- A\n\n## Pets\n- cat\n",
		"# U\n\n- A\n\n## Earlier\n\n- B (until 2026-01-01)\n": "# U\n\n- A\n\n## Earlier\n\n- B (until 2026-01-01)\n",
		"# U\n\n- A\n": "# U\n\n- A\n",
	} {
		if got := dropEmptyEarlier(in); got != want {
			t.Errorf("dropEmptyEarlier(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForgets(t *testing.T) {
	drop := Forgets([]string{"- Lives in: Berlin", "## Logger fix <!-- src: slack · dm · 2026-03-02 -->", "- Summary: pino leak", "- "})
	for line, want := range map[string]bool{
		"- Lives in: Berlin":    true,
		"-  lives in:  berlin.": true,
		"- Lives in: Berlin (until 2026-11-20) <!-- src: x -->": true,
		"- Lives in: Berlin (until later)":                      false,
		"- Lives in: Berlin and Lyon":                           false,
		"## Logger fix":                                         true,
		"> Summary: Logger fix, CI cache":                       true,
		"> Summary: CI cache, pino leak":                        true,
		"> Summary: CI cache":                                   false,
		"- Summary: CI cache":                                   false,
		"":                                                      false,
		"- ":                                                    false,
		"## Earlier":                                            false,
		"- Lives in: Lyon (until 2026-11-20) <!-- src: slack -->": false,
	} {
		if got := drop(line); got != want {
			t.Errorf("Forgets(…)(%q) = %v, want %v", line, got, want)
		}
	}
}

// forgetLog records what a store tells of forgets, in order.
type forgetLog struct {
	mu     sync.Mutex
	events []string
	fail   error
}

func (l *forgetLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *forgetLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func forgetStore(t *testing.T, l *forgetLog) (*Store, *Session) {
	s := newStore(t, func(o *Options) {
		o.Forgetting = func(c Commit) error {
			disk := readFile(t, filepath.Join(o.Dir, c.User, c.Path))
			l.add("forgetting " + c.Path + ": " + strings.Join(c.Forgotten, " | ") + " (on disk: " + map[bool]string{true: "old", false: "new"}[strings.Contains(disk, c.Forgotten[0])] + ")")
			return l.fail
		}
		o.OnChange = func(c Commit) {
			if c.Kind == ChangeEdit {
				return
			}
			e := string(c.Kind) + " " + c.Path
			if c.Forget {
				e += " (forget)"
			}
			if len(c.Forgotten) > 0 {
				e += " forgot " + strings.Join(c.Forgotten, " | ")
			}
			l.add(e)
		}
	})
	ses := mustUser(t, s, "alice").NewSession()
	ses.SetSource(slackDM("2026-11-20"))
	return s, ses
}

// A person's "forget that", as the model's blank patch: the store tells
// the history before the change is made, the change names the lines, and
// the fact's earlier values go with it.
func TestForgetThatTellsTheHistoryFirst(t *testing.T) {
	l := &forgetLog{}
	s, ses := forgetStore(t, l)
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	writeFile(t, path, "# User\n\n> Summary: home\n\n- Name: Ana\n- Lives in: Berlin\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-01)\n")
	if _, err := ses.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Lives in: Berlin\n", NewText: ""}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"forgetting facts/user.md: - Lives in: Berlin | - Lives in: Lyon (until 2026-11-01) (on disk: old)",
		"patch facts/user.md forgot - Lives in: Berlin | - Lives in: Lyon (until 2026-11-01)",
	}
	if got := l.list(); !slices.Equal(got, want) {
		t.Errorf("told %q, want %q", got, want)
	}
	if got := readFile(t, path); strings.Contains(got, "Lives in") {
		t.Errorf("file after the forget:\n%s", got)
	}
	// A replacement keeps its past, and tells no forget.
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Name: Ana", NewText: "- Name: Ana B."}}); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); len(got) != 3 || got[2] != "patch facts/user.md" {
		t.Errorf("told %q", got)
	}
}

func TestForgetThatRefusedWhenTheHistoryCannot(t *testing.T) {
	l := &forgetLog{fail: errors.New("disk full")}
	s, ses := forgetStore(t, l)
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	before := "# User\n\n> Summary: home\n\n- Lives in: Berlin\n"
	writeFile(t, path, before)
	if _, err := ses.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	_, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Lives in: Berlin\n", NewText: ""}})
	if err == nil || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("patch: %v", err)
	}
	if got := readFile(t, path); got != before {
		t.Errorf("the file changed:\n%s", got)
	}
}

// An episode entry forgotten: the month's summary no longer names it,
// and the roll-ups that summarise the month go, told as forgets.
func TestForgetThatInAnEpisodeMonth(t *testing.T) {
	l := &forgetLog{}
	s, ses := forgetStore(t, l)
	dir := filepath.Join(s.Dir(), "alice/episodes")
	month := "# 2026-03 Episodes\n\n> Summary: logger fix, CI cache\n\n## Logger fix\n- Summary: logger fix\n- Date: 2026-03-02\n\n## CI cache\n- Summary: CI cache\n- Date: 2026-03-04\n"
	writeFile(t, filepath.Join(dir, "2026-03.md"), month)
	writeFile(t, filepath.Join(dir, "2026-Q1.md"), "# 2026-Q1\n\n> Summary: logger fix\n")
	writeFile(t, filepath.Join(dir, "2026.md"), "# 2026\n\n> Summary: logger fix\n")
	writeFile(t, filepath.Join(dir, "2025-Q4.md"), "# 2025-Q4\n\n> Summary: other\n")
	if _, err := ses.Read("episodes/2026-03.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := ses.Patch("episodes/2026-03.md", []Patch{{OldText: "## Logger fix\n- Summary: logger fix\n- Date: 2026-03-02\n\n", NewText: ""}}); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(dir, "2026-03.md"))
	if want := "# 2026-03 Episodes\n\n> Summary: CI cache\n\n## CI cache\n- Summary: CI cache\n- Date: 2026-03-04\n"; got != want {
		t.Errorf("month:\n%s\nwant:\n%s", got, want)
	}
	events := l.list()
	if len(events) != 4 || !strings.HasPrefix(events[1], "patch episodes/2026-03.md forgot ## Logger fix | - Summary: logger fix | - Date: 2026-03-02") ||
		events[2] != "delete episodes/2026-Q1.md (forget)" || events[3] != "delete episodes/2026.md (forget)" {
		t.Errorf("told %q", events)
	}
	if !exists(filepath.Join(dir, "2025-Q4.md")) || exists(filepath.Join(dir, "2026-Q1.md")) || exists(filepath.Join(dir, "2026.md")) {
		t.Error("the wrong roll-ups were deleted")
	}
	// A month without roll-ups: nothing more to delete.
	if _, err := ses.Patch("episodes/2026-03.md", []Patch{{OldText: "- Date: 2026-03-04\n", NewText: ""}}); err != nil {
		t.Fatal(err)
	}
	if n := len(l.list()); n != 6 {
		t.Errorf("told %q", l.list())
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// An Undo deletes the file its keeping made only while it is still what
// the keeping wrote: a person's edit since is a conflict, and kept.
func TestRemoveIfUnchanged(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	path := filepath.Join(s.Dir(), "alice/facts/kept.md")
	writeFile(t, path, "# Kept\n\n> Summary: k\n")
	v, err := u.Version("facts/kept.md")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "# Kept\n\n> Summary: k\n- mine\n")
	if err := u.RemoveIfUnchanged("facts/kept.md", v); !errors.Is(err, ErrConflict) {
		t.Fatalf("remove of a file edited since: %v", err)
	}
	if got := readFile(t, path); !strings.Contains(got, "- mine") {
		t.Fatalf("the edit was lost: %q", got)
	}
	v, _ = u.Version("facts/kept.md")
	if err := u.RemoveIfUnchanged("facts/kept.md", v); err != nil || exists(path) {
		t.Fatalf("remove of the file as it is: %v, still there: %v", err, exists(path))
	}
}
