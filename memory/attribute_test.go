package memory

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
)

// said is a turn of a batch said in a Slack DM on date.
func said(date, text string) Said {
	return Said{Source: slackDM(date), Text: text, Reply: "noted"}
}

// Each line a reflection of a batch writes is stamped with the turn whose
// words it holds; a line no turn's words match, with the newest answered.
func TestAttribution(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch []Said
		line  string
		want  int // the turn of batch
	}{
		{"first turn's fact", []Said{said("2026-11-01", "I live in Lyon"), said("2026-11-03", "I drink green tea")}, "- Lives in: Lyon", 0},
		{"second turn's fact", []Said{said("2026-11-01", "I live in Lyon"), said("2026-11-03", "I drink green tea")}, "- Drinks: green tea", 1},
		{"stems and case", []Said{said("2026-11-01", "I'm fixing the CACHE of berlin's runners"), said("2026-11-02", "hello")}, "- Fixed: the Berlin cache", 0},
		{"the most words win", []Said{said("2026-11-01", "tea is nice"), said("2026-11-02", "tea"), said("2026-11-03", "green tea in the morning")}, "- Drinks: green tea", 2},
		{"no words shared: the newest", []Said{said("2026-11-01", "I live in Lyon"), said("2026-11-02", "hello")}, "- Plants: ferns", 1},
		{"only stop words shared: the newest", []Said{said("2026-11-01", "what is it about"), said("2026-11-02", "hi")}, "- It: is what", 1},
		{"a tie: the newest", []Said{said("2026-11-01", "Lyon"), said("2026-11-02", "Lyon again"), said("2026-11-03", "hi")}, "- Lives in: Lyon", 1},
		{"no match, the newest failed: the newest answered", []Said{said("2026-11-01", "hi"), {Source: slackDM("2026-11-02"), Text: "oops", Failed: true}}, "- Plants: ferns", 0},
		{"all failed: the newest", []Said{{Source: slackDM("2026-11-01"), Failed: true}, {Source: slackDM("2026-11-02"), Failed: true}}, "- Plants: ferns", 1},
		{"a failed turn's own words", []Said{{Source: slackDM("2026-11-01"), Text: "I grow ferns", Failed: true}, said("2026-11-02", "hi")}, "- Plants: ferns", 0},
		{"the reply breaks a tie", []Said{{Source: slackDM("2026-11-01"), Text: "yes", Reply: "I'll remember you live in Lyon"}, said("2026-11-02", "yes")}, "- Lives in: Lyon", 0},
		{"the message outweighs a reply", []Said{{Source: slackDM("2026-11-01"), Text: "Lyon", Reply: "Lyon lives noted"}, said("2026-11-02", "I live in Lyon")}, "- Lives in: Lyon", 1},
		{"one turn", []Said{said("2026-11-01", "nothing alike")}, "- Plants: ferns", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newAttribution(tc.batch).pick(tc.line); got != tc.want {
				t.Errorf("pick(%q) = turn %d, want %d", tc.line, got, tc.want)
			}
		})
	}
	if newAttribution(nil) != nil {
		t.Error("an attribution of no turns")
	}
}

// Two turns, two facts: each line is stamped with its own turn, its own
// day and link, through a write, a patch and an episode's append.
func TestEachLineIsStampedWithTheTurnThatSaidIt(t *testing.T) {
	s := newStore(t)
	ses := mustUser(t, s, "alice").NewSession()
	lyon, tea := said("2026-11-01", "By the way, I live in Lyon now"), said("2026-11-03", "I only drink green tea")
	ses.SetSources([]Said{lyon, tea})
	if err := ses.Write("facts/user.md", "# User\n\n> Summary: home, drink\n\n- Lives in: Lyon\n- Drinks: green tea\n- Plants: ferns\n"); err != nil {
		t.Fatal(err)
	}
	want := "# User\n\n> Summary: home, drink\n\n- Lives in: Lyon " + lyon.Source.stamp() + "\n- Drinks: green tea " + tea.Source.stamp() +
		"\n- Plants: ferns " + tea.Source.stamp() + "\n"
	if got := readFile(t, filepath.Join(s.Dir(), "alice/facts/user.md")); got != want {
		t.Fatalf("written:\n%s\nwant:\n%s", got, want)
	}
	// A patch: the new line is the first turn's; the lines left as they
	// were keep their stamps.
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Plants: ferns", NewText: "- Plants: ferns\n- Home town: Lyon, since I was born"}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "alice/facts/user.md")); !strings.Contains(got, "- Home town: Lyon, since I was born "+lyon.Source.stamp()+"\n") ||
		!strings.Contains(got, "- Drinks: green tea "+tea.Source.stamp()+"\n") {
		t.Errorf("patched:\n%s", got)
	}
	// An episode entry: by its whole text, not its heading alone.
	entry := "## Weekend plans\n- Date: 2026-11-03\n- Summary: green tea tasting"
	if err := ses.Append("episodes/2026-11.md", entry, ""); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-11.md")); !strings.Contains(got, "## Weekend plans "+tea.Source.stamp()+"\n") {
		t.Errorf("episode:\n%s", got)
	}
}

// A replaced fact is kept until the day the line that replaced it was
// said; a fact said twice in the batch is one line, with the newer turn.
func TestAttributionKeepsEarlierAndDuplicates(t *testing.T) {
	s := newStore(t)
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	writeFile(t, path, "# User\n\n> Summary: home\n\n- Lives in: Lyon <!-- src: terminal · 2026-01-01 -->\n")
	ses := mustUser(t, s, "alice").NewSession()
	moved, tea, again := said("2026-11-02", "I moved to Berlin"), said("2026-11-04", "I drink tea"), said("2026-11-06", "I drink tea, always tea")
	ses.SetSources([]Said{moved, tea, again, said("2026-11-08", "bye")})
	if _, err := ses.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if err := ses.Write("facts/user.md", "# User\n\n> Summary: home\n\n- Lives in: Berlin\n- Drinks: tea\n- drinks: Tea.\n"); err != nil {
		t.Fatal(err)
	}
	want := "# User\n\n> Summary: home\n\n- Lives in: Berlin " + moved.Source.stamp() + "\n- Drinks: tea " + again.Source.stamp() +
		"\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-02) <!-- src: terminal · 2026-01-01 -->\n"
	if got := readFile(t, path); got != want {
		t.Errorf("written:\n%s\nwant:\n%s", got, want)
	}
}

// A channel's batch of Ana's and Bob's turns: in the channel's memory each
// line names who said it; in the speaker's own files, no one.
func TestChannelBatchNamesWhoSaidEachLine(t *testing.T) {
	s := newStore(t)
	v := NewView(mustUser(t, s, "slack-T1-U1"), true, mustUser(t, s, "#slack-T1-C1"))
	ana := Said{Source: Source{Surface: "slack", Place: "#C1", Date: day("2026-06-01"), By: "Ana", Link: "https://acme.slack.com/archives/C1/p1"}, Text: "We deploy on Fridays"}
	bob := Said{Source: Source{Surface: "slack", Place: "#C1", Date: day("2026-06-02"), By: "Bob", Link: "https://acme.slack.com/archives/C1/p2"}, Text: "The on-call rota is weekly"}
	v.SetSources([]Said{ana, bob})
	if err := v.Write("channel/facts/team.md", "# Team\n\n> Summary: team\n\n- Deploys: Fridays\n- On-call: weekly rota\n"); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(s.Dir(), "#slack-T1-C1/facts/team.md"))
	for _, want := range []string{
		"- Deploys: Fridays <!-- src: slack · #C1 · 2026-06-01 · by Ana · https://acme.slack.com/archives/C1/p1 -->\n",
		"- On-call: weekly rota <!-- src: slack · #C1 · 2026-06-02 · by Bob · https://acme.slack.com/archives/C1/p2 -->\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("channel file lacks %q:\n%s", want, got)
		}
	}
	if err := v.Write("facts/me.md", "# Me\n\n> Summary: me\n\n- Deploys: Fridays\n"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "slack-T1-U1/facts/me.shared.md")); !strings.Contains(got, "- Deploys: Fridays <!-- src: slack · #C1 · 2026-06-01 · https://acme.slack.com/archives/C1/p1 -->") {
		t.Errorf("own file:\n%s", got)
	}
	if ana.Source.By != "Ana" {
		t.Error("SetSources changed the caller's turns")
	}
}

// BenchmarkAttribution: stamping thirty fresh lines against a batch of
// twenty turns (the reflector's default MaxTurns), each turn a message
// and a reply of a few sentences. The turns' words are read once per
// reflection (in the loop: each iteration is a new reflection).
func BenchmarkAttribution(b *testing.B) {
	batch := make([]Said, 20)
	for i := range batch {
		batch[i] = Said{Source: slackDM(fmt.Sprintf("2026-11-%02d", i+1)),
			Text:  fmt.Sprintf("Turn %d: I moved the deploy of service-%d to Fridays after the cache incident; my manager Ana agreed and the runners now use go.sum keys.", i, i),
			Reply: fmt.Sprintf("Noted: service-%d deploys on Fridays. Anything else about the CI cache or the runners?", i)}
	}
	lines := make([]string, 30)
	for i := range lines {
		lines[i] = fmt.Sprintf("- Deploy of service-%d: Fridays, after the cache incident (runner keys from go.sum)", i%25)
	}
	b.ReportAllocs()
	for b.Loop() {
		a := newAttribution(batch)
		for _, l := range lines {
			a.pick(l)
		}
	}
}

func TestSaidOf(t *testing.T) {
	at := day("2026-11-20")
	plain := mnemo.Turn{User: "ana", Platform: "slack", Speaker: "Ana", UserText: "hi", ReplyText: "hello", Time: at, Failed: true}
	if got := SaidOf(plain); got != (Said{Source: SourceOf(plain), Text: "hi", Reply: "hello", Failed: true}) {
		t.Errorf("SaidOf(%+v) = %+v", plain, got)
	}
	kept := mnemo.Turn{User: "ana", Platform: "slack", Time: at, Explicit: true, Context: []mnemo.ContextMessage{{Author: "Bob", Text: "The release moves to Friday"}}}
	if got := SaidOf(kept); !strings.Contains(got.Text, "The release moves to Friday") {
		t.Errorf("an explicit turn's words are %q, want the message kept", got.Text)
	}
}

// A fact the batch tells again (a confirming patch) is renewed with the
// newest turn that said it, not with the batch's newest.
func TestConfirmedFactGetsTheNewestTurnThatSaidIt(t *testing.T) {
	s := newStore(t)
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	writeFile(t, path, "# User\n\n> Summary: home\n\n- Lives in: Berlin <!-- src: terminal · 2026-01-01 -->\n- Drinks: tea\n")
	ses := mustUser(t, s, "alice").NewSession()
	first, again := said("2026-11-02", "I live in Berlin"), said("2026-11-04", "still living in Berlin")
	ses.SetSources([]Said{first, again, said("2026-11-06", "bye")})
	if _, err := ses.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := ses.Patch("facts/user.md", []Patch{{OldText: "- Lives in: Berlin", NewText: "- Lives in: Berlin"}}); err != nil {
		t.Fatal(err)
	}
	want := "# User\n\n> Summary: home\n\n- Lives in: Berlin " + again.Source.stamp() + "\n- Drinks: tea\n"
	if got := readFile(t, path); got != want {
		t.Errorf("patched:\n%s\nwant:\n%s", got, want)
	}
}
