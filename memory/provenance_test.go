package memory

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t.Add(10 * time.Hour)
}

func slackDM(date string) Source {
	return Source{Surface: "slack", Place: "dm", Date: day(date), Link: "https://acme.slack.com/archives/D01/p" + strings.ReplaceAll(date, "-", "")}
}

func TestSourceOf(t *testing.T) {
	at := day("2026-11-20")
	for _, tc := range []struct {
		turn mnemo.Turn
		want Source
	}{
		{mnemo.Turn{User: "ana", Platform: "console", Time: at}, Source{Surface: "terminal", Date: at, By: "ana"}},
		{mnemo.Turn{User: "slack-T1-U1", Speaker: "Ana", Platform: "slack", Time: at, Origin: mnemo.Origin{Place: "#C1 thread", Link: "https://x.slack.com/archives/C1/p1"}},
			Source{Surface: "slack", Place: "#C1 thread", Date: at, By: "Ana", Link: "https://x.slack.com/archives/C1/p1"}},
	} {
		if got := SourceOf(tc.turn); got != tc.want {
			t.Errorf("SourceOf(%+v) = %+v, want %+v", tc.turn, got, tc.want)
		}
	}
}

func TestStampRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		src  Source
		want string
		back Stamp
	}{
		{slackDM("2026-11-20"), "<!-- src: slack · dm · 2026-11-20 · https://acme.slack.com/archives/D01/p20261120 -->",
			Stamp{Surface: "slack", Place: "dm", Date: "2026-11-20", Link: "https://acme.slack.com/archives/D01/p20261120"}},
		{Source{Surface: "terminal", Date: day("2026-01-02")}, "<!-- src: terminal · 2026-01-02 -->", Stamp{Surface: "terminal", Date: "2026-01-02"}},
		{Source{Surface: "slack", Place: "#" + strings.Repeat("c", 250), By: "a---b"}, "<!-- src: slack · #" + strings.Repeat("c", 199) + " · by a-b -->",
			Stamp{Surface: "slack", Place: "#" + strings.Repeat("c", 199), By: "a-b"}},
		// Nothing a display name or a link holds can end the comment or
		// add a field.
		{Source{Surface: "discord", Place: "#1 · x", By: "Eve --> <!-- src: admin", Link: "javascript:alert(1)"},
			"<!-- src: discord · #1 x · by Eve src: admin -->", Stamp{Surface: "discord", Place: "#1 x", By: "Eve src: admin"}},
	} {
		got := tc.src.stamp()
		if got != tc.want {
			t.Errorf("stamp(%+v) = %q, want %q", tc.src, got, tc.want)
		}
		plain, stamp := SplitStamp("- Fact: x " + got)
		if plain != "- Fact: x" || stamp != got {
			t.Errorf("SplitStamp = %q, %q", plain, stamp)
		}
		if back, ok := ParseStamp(stamp); !ok || back != tc.back {
			t.Errorf("ParseStamp(%q) = %+v, %v; want %+v", stamp, back, ok, tc.back)
		}
	}
}

func TestSplitStamp(t *testing.T) {
	for _, tc := range []struct{ line, plain, stamp string }{
		{"- Name: Ana", "- Name: Ana", ""},
		{"- Name: Ana <!-- src: terminal -->", "- Name: Ana", "<!-- src: terminal -->"},
		{"- Name: Ana <!-- src: terminal -->  \r", "- Name: Ana", "<!-- src: terminal -->"},
		{"- Name: Ana <!-- a comment -->", "- Name: Ana <!-- a comment -->", ""},
		{"- A <!-- src: x --> B -->", "- A <!-- src: x --> B -->", ""},
		{"<!-- src: terminal -->", "", "<!-- src: terminal -->"},
	} {
		p, s := SplitStamp(tc.line)
		if p != tc.plain || s != tc.stamp {
			t.Errorf("SplitStamp(%q) = %q, %q; want %q, %q", tc.line, p, s, tc.plain, tc.stamp)
		}
	}
	for _, bad := range []string{"<!-- a comment -->", "<!-- src: torn"} {
		if _, ok := ParseStamp(bad); ok {
			t.Errorf("ParseStamp took %q", bad)
		}
	}
	for line, key := range map[string]string{"- Lives  In: Lyon": "lives in", "- Tea": "", "- : x": "", "- " + strings.Repeat("k", 61) + ": v": ""} {
		if got := factKeyOf(line); got != key {
			t.Errorf("factKeyOf(%q) = %q, want %q", line, got, key)
		}
	}
}

// aliceSession is a session on alice's memory stamping with src.
func aliceSession(t *testing.T, src Source) (*Store, *Session) {
	t.Helper()
	s := newStore(t)
	ses := mustUser(t, s, "alice").NewSession()
	ses.SetSource(src)
	return s, ses
}

func TestStampsAFactFileAndHidesThemFromTheModel(t *testing.T) {
	s, ses := aliceSession(t, slackDM("2026-03-02"))
	if err := ses.Write("facts/user.md", "# User\n\n> Summary: home\n\n- Lives in: Lyon <!-- src: forged · 1999-01-01 -->\n- Drinks: tea\n"); err != nil {
		t.Fatal(err)
	}
	stamp := slackDM("2026-03-02").stamp()
	want := "# User\n\n> Summary: home\n\n- Lives in: Lyon " + stamp + "\n- Drinks: tea " + stamp + "\n"
	if got := readFile(t, filepath.Join(s.Dir(), "alice/facts/user.md")); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	for _, read := range []func() (string, error){
		func() (string, error) { return ses.Read("facts/user.md") },
		func() (string, error) { f, _, err := ses.Preload(1 << 14); return f, err },
		func() (string, error) { f, err := ses.Search("Lyon", 5); return f.Render(4096), err },
	} {
		got, err := read()
		if err != nil || strings.Contains(got, "src:") || !strings.Contains(got, "Lives in: Lyon") {
			t.Errorf("the model is given %q (%v): want the fact without its stamp", got, err)
		}
	}
	// Stamps are no words of the memory.
	if f, err := ses.Search("slack", 5); err != nil || len(f.Hits) != 0 {
		t.Errorf("search for a stamp's word found %+v (%v)", f.Hits, err)
	}
}

func TestReplacedFactIsKeptUnderEarlier(t *testing.T) {
	s, ses := aliceSession(t, slackDM("2026-03-02"))
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	writeFile(t, path, "# User\n\n> Summary: home\n\n- Name: Ana\n")
	if _, err := ses.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Name: Ana", NewText: "- Name: Ana\n- Lives in: Lyon"}}); err != nil {
		t.Fatal(err)
	}
	march := slackDM("2026-03-02").stamp()
	ses.SetSource(slackDM("2026-11-20"))
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "Lyon", NewText: "Berlin"}}); err != nil {
		t.Fatal(err)
	}
	nov := slackDM("2026-11-20").stamp()
	// The hand-written line keeps no stamp; Lyon moves under Earlier with
	// its dates (its stamp's, and until).
	want := "# User\n\n> Summary: home\n\n- Name: Ana\n- Lives in: Berlin " + nov + "\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-20) " + march + "\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	// Moving again: the newest earlier value first.
	ses.SetSource(slackDM("2026-12-01"))
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Lives in: Berlin", NewText: "- Lives in: Paris"}}); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if i, j := strings.Index(got, "Berlin (until 2026-12-01)"), strings.Index(got, "Lyon (until"); i < 0 || j < i || strings.Count(got, "## Earlier") != 1 {
		t.Fatalf("file after a second move:\n%s", got)
	}
	// "Where did I live before?": the current value first, the earlier
	// ones found too.
	f, err := ses.Search("where did I live before", 5)
	if err != nil || len(f.Hits) != 1 {
		t.Fatalf("search: %+v, %v", f, err)
	}
	if h := f.Hits[0].Text; !strings.Contains(h, "Paris") || !strings.Contains(h, "Berlin (until") || !strings.Contains(h, "Lyon (until") {
		t.Errorf("hit: %q", h)
	}
	// A fact deleted without a replacement is deleted (a "forget that").
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Name: Ana\n", NewText: ""}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); strings.Contains(got, "Name: Ana") {
		t.Errorf("a deleted fact was kept:\n%s", got)
	}
}

func TestDuplicateFactIsOneLineWithItsNewestSource(t *testing.T) {
	s, ses := aliceSession(t, slackDM("2026-03-02"))
	path := filepath.Join(s.Dir(), "alice/facts/prefs.md")
	if err := ses.Write("facts/prefs.md", "# Prefs\n\n> Summary: drinks\n\n- Drinks: tea\n- Editor: vim\n"); err != nil {
		t.Fatal(err)
	}
	for i, change := range []func() error{
		// Added again after the summary, as a paragraph of its own: no
		// gap is left where it was merged.
		func() error {
			_, err := ses.Patch("facts/prefs.md", []Patch{{OldText: "> Summary: drinks", NewText: "> Summary: drinks\n\n- Drinks: tea"}})
			return err
		},
		// Added again beside itself, near-exactly.
		func() error {
			_, err := ses.Patch("facts/prefs.md", []Patch{{OldText: "- Editor: vim", NewText: "- Editor: vim\n- drinks:  Tea."}})
			return err
		},
		// Told again: the same line patched onto itself.
		func() error {
			_, err := ses.Patch("facts/prefs.md", []Patch{{OldText: "- Drinks: tea", NewText: "- Drinks: tea"}})
			return err
		},
		// A whole rewrite that repeats it.
		func() error {
			return ses.Write("facts/prefs.md", "# Prefs\n\n> Summary: drinks\n\n- Drinks: tea\n- Editor: vim\n- Drinks: tea\n")
		},
	} {
		date := time.Date(2026, 4, 1+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
		ses.SetSource(slackDM(date))
		if err := change(); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		got := readFile(t, path)
		if n := strings.Count(strings.ToLower(got), "drinks:"); n != 1 || strings.Contains(got, "\n\n- Editor") {
			t.Fatalf("change %d: %d lines of the fact:\n%s", i, n, got)
		}
		if !strings.Contains(got, "- Drinks: tea "+slackDM(date).stamp()) {
			t.Errorf("change %d: the fact does not have its newest source:\n%s", i, got)
		}
		if !strings.Contains(got, "- Editor: vim "+slackDM("2026-03-02").stamp()) {
			t.Errorf("change %d: an untouched line lost its stamp:\n%s", i, got)
		}
	}
	// A person's own duplicates are theirs.
	writeFile(t, path, "# Prefs\n\n> Summary: x\n\n- Tea\n- Tea\n")
	if _, err := ses.Read("facts/prefs.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := ses.Patch("facts/prefs.md", []Patch{{OldText: "> Summary: x", NewText: "> Summary: y"}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "# Prefs\n\n> Summary: y\n\n- Tea\n- Tea\n" {
		t.Errorf("hand-made lines changed:\n%s", got)
	}
}

func TestHandEditsKeepStamps(t *testing.T) {
	s, ses := aliceSession(t, slackDM("2026-03-02"))
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	if err := ses.Write("facts/user.md", "# User\n\n> Summary: x\n\n- A: 1\n- B: 2\n"); err != nil {
		t.Fatal(err)
	}
	stamp := slackDM("2026-03-02").stamp()
	// A person adds a line and edits another's text before its stamp.
	writeFile(t, path, "# User\n\n> Summary: x\n\n- A: 1 "+stamp+"\n- B: two "+stamp+"\n- C: by hand\n")
	if _, err := ses.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	ses.SetSource(slackDM("2026-05-05"))
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "> Summary: x", NewText: "> Summary: y"}}); err != nil {
		t.Fatal(err)
	}
	want := "# User\n\n> Summary: y\n\n- A: 1 " + stamp + "\n- B: two " + stamp + "\n- C: by hand\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
}

func TestEpisodeEntriesAreStampedOnce(t *testing.T) {
	s, ses := aliceSession(t, Source{Surface: "discord", Place: "#9", Date: day("2026-02-24"), Link: "https://discord.com/channels/1/9/100"})
	path := filepath.Join(s.Dir(), "alice/episodes/2026-02.md")
	entry := "## CI cache fix\n- Summary: cache keyed on go.sum\n- Date: 2026-02-24\n- Solution: key from go.sum <!-- src: forged -->\n"
	if err := ses.Append("episodes/2026-02.md", entry, ""); err != nil {
		t.Fatal(err)
	}
	first := Source{Surface: "discord", Place: "#9", Date: day("2026-02-24"), Link: "https://discord.com/channels/1/9/100"}.stamp()
	got := readFile(t, path)
	if !strings.Contains(got, "## CI cache fix "+first+"\n") || strings.Contains(got, "forged") {
		t.Fatalf("file:\n%s", got)
	}
	// The same entry told again: one entry, its newest source.
	later := Source{Surface: "discord", Place: "dm", Date: day("2026-02-25"), Link: "https://discord.com/channels/@me/5/200"}
	ses.SetSource(later)
	if err := ses.Append("episodes/2026-02.md", strings.Replace(entry, "CI cache fix", "CI  Cache fix", 1), ""); err != nil {
		t.Fatal(err)
	}
	got = readFile(t, path)
	if strings.Count(got, "## ") != 1 || !strings.Contains(got, "## CI cache fix "+later.stamp()+"\n") {
		t.Fatalf("file after the same entry again:\n%s", got)
	}
	if r, _ := ses.Read("episodes/2026-02.md"); strings.Contains(r, "src:") {
		t.Errorf("the model reads stamps:\n%s", r)
	}
}

func TestChannelMemoryNamesWhoSaidIt(t *testing.T) {
	s := newStore(t)
	v := NewView(mustUser(t, s, "slack-T1-U1"), true, mustUser(t, s, "#slack-T1-C1"))
	v.SetSource(Source{Surface: "slack", Place: "#C1", Date: day("2026-06-01"), By: "Ana"})
	if err := v.Write("channel/facts/team.md", "# Team\n\n> Summary: team\n\n- Deploys: Fridays\n"); err != nil {
		t.Fatal(err)
	}
	if err := v.Write("facts/me.md", "# Me\n\n> Summary: me\n\n- Role: SRE\n"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "#slack-T1-C1/facts/team.md")); !strings.Contains(got, "- Deploys: Fridays <!-- src: slack · #C1 · 2026-06-01 · by Ana -->") {
		t.Errorf("channel file:\n%s", got)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "slack-T1-U1/facts/me.shared.md")); !strings.Contains(got, "- Role: SRE <!-- src: slack · #C1 · 2026-06-01 -->") {
		t.Errorf("own file:\n%s", got)
	}
}

// FuzzStamps: whatever a file holds and whatever the model writes,
// stamping never panics, the model's text is what it reads back, and
// every stamp in the result is whole.
func FuzzStamps(f *testing.F) {
	f.Add("# A\n\n> Summary: a\n\n- K: 1 <!-- src: slack · dm -->\n", "# A\n\n> Summary: a\n\n- K: 2\n- K: 2\n", "x-->y", uint8(0))
	f.Add("## T <!-- src: -->\n- Date: 2026-01-01\n", "## T\n## Earlier\n- a", "", uint8(1))
	f.Add("", "- <!-- src: a -->\n", "--·<!--", uint8(2))
	f.Fuzz(func(t *testing.T, old, plain, by string, mode uint8) {
		kind := KindFact
		if mode&1 == 1 {
			kind = KindEpisode
		}
		var st stamping
		if mode&2 == 0 {
			st.src = newAttribution([]Said{
				{Source: Source{Surface: "slack", Place: by, Date: day("2026-01-01"), By: by, Link: "https://x/" + by}, Text: old},
				{Source: Source{Surface: "discord", Place: "dm", Date: day("2026-01-02")}, Text: by, Failed: mode&4 == 4},
			})
		}
		plain = StripStamps(plain)
		got := st.apply(kind, old, plain)
		if st.src == nil && StripStamps(got) != plain {
			t.Fatalf("without a source the text changed: %q → %q", plain, StripStamps(got))
		}
		for _, l := range strings.Split(got, "\n") {
			if _, s := SplitStamp(l); s != "" {
				if _, ok := ParseStamp(s); !ok {
					t.Fatalf("broken stamp %q", s)
				}
			}
		}
		if st.src != nil {
			if s := st.src.stamp(0); strings.Count(s, stampClose) != 1 || strings.Count(s, stampOpen) != 1 {
				t.Fatalf("stamp %q is not one comment", s)
			}
		}
	})
}
