package memory

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
)

// searchLines are the "path:line · heading · date" lines of a result.
func searchLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "(") {
			out = append(out, l)
		}
	}
	return out
}

func mustSearch(t *testing.T, s Space, q string) Found {
	t.Helper()
	f, err := s.Search(q, 0)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return f
}

// Each change a person makes by hand, and each the store makes, is found
// (or gone) at the next search, through the watcher: a new file, an edit
// in place, a rename over the file, a delete, a restore.
func TestSearchFollowsEdits(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	dir := filepath.Join(s.Dir(), "alice")
	p := filepath.Join(dir, "episodes/2026-03.md")
	if f := mustSearch(t, sess, "kayak"); len(f.Hits) != 0 {
		t.Fatalf("no memory yet, found %+v", f.Hits)
	}
	found := func(q, want string) func() bool {
		return func() bool {
			f, err := sess.Search(q, 0)
			return err == nil && len(f.Hits) > 0 && strings.Contains(f.Hits[0].Text, want)
		}
	}
	gone := func(q string) func() bool {
		return func() bool {
			f, err := sess.Search(q, 0)
			return err == nil && len(f.Hits) == 0
		}
	}
	writeFile(t, p, "# 2026-03 Episodes\n\n> Summary: kayak\n\n## Kayak trip\n- Summary: kayak on the lake\n- Date: 2026-03-07\n")
	eventually(t, "a new file found", found("kayak", "lake"))
	writeFile(t, p, "# 2026-03 Episodes\n\n> Summary: kayak\n\n## Kayak trip\n- Summary: kayak on the river\n- Date: 2026-03-07\n")
	eventually(t, "an edit in place found", found("river", "river"))
	eventually(t, "the old text gone", gone("lake"))
	tmp := filepath.Join(dir, "episodes/.tmp")
	writeFile(t, tmp, "# 2026-03 Episodes\n\n> Summary: hike\n\n## Hike\n- Summary: hike up the hill\n- Date: 2026-03-08\n")
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a save by rename found", found("hill", "hill"))
	eventually(t, "the replaced text gone", gone("kayak"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a delete gone", gone("hill"))
	// The store's own writes (a restore is one) are found without an event.
	if err := u.NewSession().Append("episodes/2026-03.md", "## Hike again\n- Summary: hill walk\n- Date: 2026-03-09\n", ""); err != nil {
		t.Fatal(err)
	}
	if !found("hill", "hill walk")() {
		t.Error("the store's own append is not found at once")
	}
}

// A search in a channel sees what memory_read sees there: the speaker's
// shared files and the channel's memory; a private entry is never a hit,
// and nothing shown (hits, scores, the count of more) depends on the
// private files.
func TestSearchInAChannelSeesNoPrivateFile(t *testing.T) {
	for _, private := range []bool{false, true} {
		s := newStore(t)
		dir := s.Dir()
		writeFile(t, filepath.Join(dir, "alice/facts/team.md"), "# Team\n\n> Summary: team\n> Visibility: shared\n\n- I own the billing service\n- billing deploys need two reviews\n")
		writeFile(t, filepath.Join(dir, "#slack-T1-C1/episodes/2026-03.md"), "# 2026-03 Episodes\n\n> Summary: billing\n\n## Billing outage\n- Summary: billing down for an hour\n- Date: 2026-03-04\n")
		if private {
			writeFile(t, filepath.Join(dir, "alice/facts/secret.md"), "# Secret\n\n> Summary: salary\n\n- billing salary billing 120k billing\n")
			writeFile(t, filepath.Join(dir, "alice/episodes/2026-03.md"), "# 2026-03 Episodes\n\n> Summary: billing\n\n## Billing interview\n- Summary: billing job interview elsewhere\n- Date: 2026-03-05\n")
		}
		v := NewView(mustUser(t, s, "alice"), true, mustUser(t, s, "#slack-T1-C1"))
		f := mustSearch(t, v, "billing")
		got, _ := json.Marshal(f.Hits)
		render := f.Render(0)
		for _, h := range f.Hits {
			if strings.Contains(h.Text, "salary") || strings.Contains(h.Text, "interview") {
				t.Errorf("a private entry in a channel's search: %+v", h)
			}
		}
		if len(f.Hits) != 2 || f.Total != 2 || f.Hits[0].Path != "channel/episodes/2026-03.md" && f.Hits[1].Path != "channel/episodes/2026-03.md" {
			t.Errorf("private %v: hits %s", private, got)
		}
		if private {
			// The same files without the private ones give the same answer.
			s2 := newStore(t)
			writeFile(t, filepath.Join(s2.Dir(), "alice/facts/team.md"), readFile(t, filepath.Join(dir, "alice/facts/team.md")))
			writeFile(t, filepath.Join(s2.Dir(), "#slack-T1-C1/episodes/2026-03.md"), readFile(t, filepath.Join(dir, "#slack-T1-C1/episodes/2026-03.md")))
			f2 := mustSearch(t, NewView(mustUser(t, s2, "alice"), true, mustUser(t, s2, "#slack-T1-C1")), "billing")
			if got2, _ := json.Marshal(f2.Hits); string(got2) != string(got) || f2.Render(0) != render {
				t.Errorf("private files changed a channel's answer:\n%s\n%s", got, got2)
			}
			// In a DM all of alice's files are searched, and no channel's.
			dm := mustSearch(t, NewView(mustUser(t, s, "alice"), false, nil), "billing salary")
			if len(dm.Hits) == 0 || dm.Hits[0].Path != "facts/secret.md" {
				t.Errorf("a DM's search: %+v", dm.Hits)
			}
			for _, h := range dm.Hits {
				if strings.HasPrefix(h.Path, ChannelDir) {
					t.Errorf("a DM searched a channel: %+v", h)
				}
			}
		}
	}
}

// A forget leaves nothing in the search index: the whole memory, and one
// file, at once and whatever the disk says.
func TestForgetEmptiesTheSearch(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/pets.md"), "# Pets\n\n- a cat called Miso\n")
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/car.md"), "# Car\n\n- a red Fiat\n")
	if f := mustSearch(t, u.NewSession(), "Miso Fiat"); len(f.Hits) != 2 {
		t.Fatalf("hits %+v", f.Hits)
	}
	if err := s.ForgetSearch("alice", "facts/pets.md"); err != nil {
		t.Fatal(err)
	}
	if n := u.found.x.Len(); n != 1 {
		t.Errorf("one file forgotten: %d files left in the index", n)
	}
	if err := u.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if n := u.found.x.Len(); n != 0 {
		t.Errorf("after RemoveAll the index holds %d files", n)
	}
	if f := mustSearch(t, u.NewSession(), "Miso Fiat"); len(f.Hits) != 0 {
		t.Errorf("found after a forget: %+v", f.Hits)
	}
	if err := s.ForgetSearch("../x", ""); err == nil {
		t.Error("a bad owner name was taken")
	}
	if err := s.ForgetSearch("nobody", ""); err != nil {
		t.Errorf("forgetting the search of an owner never searched: %v", err)
	}
}

// A file that changed after it was indexed (its event not handled yet)
// is indexed again before its text is shown: the hit names the entry as
// it is now, never a byte range of another version.
func TestSearchReindexesAFileChangedSinceIndexed(t *testing.T) {
	s := newStore(t, func(o *Options) { o.Watch = false })
	u := mustUser(t, s, "alice")
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/pets.md"), "# Pets\n\n- a cat called Miso\n")
	sess := u.NewSession()
	mustSearch(t, sess, "cat")
	// The index believes an older text of the same version.
	stamp, _ := u.found.x.Stamp("facts/pets.md")
	u.found.x.Put("facts/pets.md", "# Pets\n\n- a dog\n- a cat called Miso, once\n", false, stamp)
	f := mustSearch(t, sess, "cat")
	if len(f.Hits) != 1 || f.Hits[0].Text != "- a cat called Miso" || f.Hits[0].Line != 3 {
		t.Errorf("hits %+v", f.Hits)
	}
	// A file gone since it was indexed is no hit.
	u.found.x.Put("facts/gone.md", "# Gone\n\n- a cat\n", false, stamp)
	if f := mustSearch(t, sess, "cat"); len(f.Hits) != 1 || f.Hits[0].Path != "facts/pets.md" {
		t.Errorf("a file not on disk: %+v", f.Hits)
	}
}

// The model's result: each hit's line, its text cut around the match,
// the date line left out (it is in the hit's line), within the budget,
// and what was left out counted.
func TestSearchRender(t *testing.T) {
	s := newStore(t, func(o *Options) { o.SearchBudget = 700 })
	dir := filepath.Join(s.Dir(), "alice")
	var long []string
	for i := range 40 {
		long = append(long, fmt.Sprintf("- step %d of the migration", i))
	}
	long[30] = "- the zebra schema moved here"
	var eps strings.Builder
	eps.WriteString("# 2026-03 Episodes\n\n> Summary: migration\n\n## Migration\n- Summary: moved the database\n- Date: 2026-03-04\n" + strings.Join(long, "\n") + "\n")
	for i := range 10 {
		fmt.Fprintf(&eps, "\n## Zebra note %d\n- Summary: zebra %d\n- Date: 2026-03-%02d\n", i, i, 10+i)
	}
	writeFile(t, filepath.Join(dir, "episodes/2026-03.md"), eps.String())
	tools := toolMap(ReadTools(mustUser(t, s, "alice").NewSession()))
	out, err := tools["memory_search"].Call(t.Context(), json.RawMessage(`{"query":"zebra schema","limit":20}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 700 {
		t.Errorf("result of %d bytes, over the budget of 700:\n%s", len(out), out)
	}
	lines := searchLines(out)
	if len(lines) == 0 || lines[0] != "episodes/2026-03.md:5 · Migration · 2026-03-04" {
		t.Fatalf("first hit line %q:\n%s", lines, out)
	}
	if !strings.Contains(out, "  - the zebra schema moved here") || strings.Contains(out, "step 0 ") || !strings.Contains(out, "  …") {
		t.Errorf("the long entry is not cut around its match:\n%s", out)
	}
	if strings.Contains(out, "- Date:") {
		t.Errorf("the date line is shown twice:\n%s", out)
	}
	if !strings.Contains(out, "more entries match") {
		t.Errorf("no count of what was left out:\n%s", out)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"query":"unicorn"}`, `No entries match "unicorn".`},
		{`{"query":"  "}`, "query is empty"},
	} {
		out, err := tools["memory_search"].Call(t.Context(), json.RawMessage(tc.args))
		if !strings.Contains(out, tc.want) && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %q, %v; want %q", tc.args, out, err, tc.want)
		}
	}
	one, err := tools["memory_search"].Call(t.Context(), json.RawMessage(`{"query":"zebra 3","limit":1}`))
	if err != nil || !strings.Contains(one, "1 more entry matches") && !strings.Contains(one, "more entries match") {
		t.Errorf("limit 1: %q, %v", one, err)
	}
}

// Dates in a query are read against the store's clock.
func TestSearchUsesTheStoreClock(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 4, 2, 12, 0, 0, 0, time.UTC))
	s := newStore(t, func(o *Options) { o.Clock = clk })
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-03.md"), "# 2026-03 Episodes\n\n## Tea\n- Summary: tea\n- Date: 2026-03-31\n")
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2025-12.md"), "# 2025-12 Episodes\n\n## Tea\n- Summary: tea\n- Date: 2025-12-20\n")
	f, err := s.Search("alice", "tea last week", 0)
	if err != nil || len(f.Hits) != 2 || f.Hits[0].Date != "2026-03-31" {
		t.Errorf("hits %+v, %v", f.Hits, err)
	}
	if _, err := s.Search("../bob", "tea", 0); err == nil {
		t.Error("a bad user name was searched")
	}
}

// Searches of one memory from many conversations at once, while the
// store writes and a person edits, are safe (go test -race) and each
// sees a consistent index: every hit's text is the entry it names.
func TestSearchConcurrent(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(t, filepath.Join(dir, "facts/pets.md"), "# Pets\n\n- a cat called Miso\n")
	done := make(chan struct{})
	errs := make(chan error, 8)
	for g := range 4 {
		go func() {
			sess := u.NewSession()
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				f, err := sess.Search("cat hike", 0)
				if err != nil {
					errs <- err
					return
				}
				for _, h := range f.Hits {
					if h.Path == "facts/pets.md" && !strings.Contains(h.Text, "cat") || h.Path != "facts/pets.md" && !strings.HasPrefix(h.Text, "## Hike") {
						errs <- fmt.Errorf("searcher %d: hit %+v", g, h)
						return
					}
				}
			}
		}()
	}
	sess := u.NewSession()
	for i := range 30 {
		if err := sess.Append(fmt.Sprintf("episodes/2026-%02d.md", i%12+1), fmt.Sprintf("## Hike %d\n- Summary: hike up hill %d\n- Date: 2026-%02d-01\n", i, i, i%12+1), ""); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "facts/pets.md"), fmt.Sprintf("# Pets\n\n- a cat called Miso %d\n", i))
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	eventually(t, "every hike found", func() bool {
		f, err := sess.Search("hike", 20)
		return err == nil && f.Total == 30
	})
}
