package userdata

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// whyWorld is alice's facts with a line learned in a DM (shared since,
// by hand), one learned in channel C02, one added by hand, and a replaced
// one under Earlier; each version recorded in the history.
func whyWorld(t *testing.T) (*world, *Service) {
	t.Helper()
	w := newWorld(t)
	const (
		dm      = "<!-- src: slack · dm · 2026-03-02 · https://acme.slack.com/archives/D0ADA/p1700000000000100 -->"
		here    = "<!-- src: slack · #C02 thread · 2026-04-01 · https://acme.slack.com/archives/C02/p1700000000000200?thread_ts=1700000000.000100&cid=C02 -->"
		elsewhr = "<!-- src: slack · #C0SECRET · 2026-04-02 · https://acme.slack.com/archives/C0SECRET/p1700000000000300 -->"
	)
	v1 := "# Home\n\n> Summary: home\n> Visibility: shared\n\n- Lives in: Lyon " + dm + "\n"
	v2 := "# Home\n\n> Summary: home\n> Visibility: shared\n\n- Lives in: Berlin " + here + "\n- Works at: Berlin office " + elsewhr + "\n- Cat: Zebra in Berlin\n\n## Earlier\n\n- Lives in: Lyon (until 2026-04-01) " + dm + "\n"
	for i, v := range []string{v1, v2} {
		if _, _, err := w.hist.Record("alice", "facts/home.md", []byte(v), []string{"reflector", "hand edit"}[i]); err != nil {
			t.Fatal(err)
		}
	}
	put(t, filepath.Join(w.store.Dir(), "alice", "facts", "home.md"), v2)
	return w, w.offline()
}

func TestWhy(t *testing.T) {
	_, s := whyWorld(t)
	admin, err := s.Why(WhyScope{Owner: "alice"}, "Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`facts/home.md:6` - Lives in: Berlin\n  from: slack, #C02 thread, 2026-04-01, https://acme.slack.com/archives/C02/p1700000000000200?thread_ts=1700000000.000100&cid=C02\n",
		"`facts/home.md:7` - Works at: Berlin office\n  from: slack, #C0SECRET, 2026-04-02, https://acme.slack.com/archives/C0SECRET/p1700000000000300\n",
		"`facts/home.md:8` - Cat: Zebra in Berlin\n  from: added by hand (no source recorded)\n",
		"(hand edit); file last changed",
		"2 version(s) kept",
	} {
		if !strings.Contains(admin, want) {
			t.Errorf("admin why lacks %q:\n%s", want, admin)
		}
	}
	// Where did I live before: the earlier value, with its DM source, in
	// a DM; since the reflector put it there (the first version).
	dm, err := s.Why(WhyScope{Owner: "alice"}, "Lyon")
	if err != nil || !strings.Contains(dm, "- Lives in: Lyon (until 2026-04-01)\n  from: slack, dm, 2026-03-02, https://acme.slack.com/archives/D0ADA/") ||
		!strings.Contains(dm, "(reflector)") {
		t.Errorf("why Lyon: %v\n%s", err, dm)
	}
	// In channel C02: its own source in full; a DM's and another
	// channel's without place or link.
	ch, err := s.Why(WhyScope{Owner: "alice", Channel: "#slack-T01-C02", InChannel: true}, "Berlin Lyon")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"slack, #C02 thread, 2026-04-01, https://acme.slack.com/archives/C02/", "slack, another channel, 2026-04-02\n", "slack, a private conversation, 2026-03-02\n"} {
		if !strings.Contains(ch, want) {
			t.Errorf("channel why lacks %q:\n%s", want, ch)
		}
	}
	for _, leak := range []string{"D0ADA", "C0SECRET", "dm,"} {
		if strings.Contains(ch, leak) {
			t.Errorf("channel why shows %q:\n%s", leak, ch)
		}
	}
	if got, err := s.Why(WhyScope{Owner: "alice"}, "kubernetes"); err != nil || got != "Nothing I remember matches “kubernetes”." {
		t.Errorf("nothing: %q, %v", got, err)
	}
	for _, bad := range []WhyScope{{Owner: "../x"}, {Owner: "alice", Channel: "alice", InChannel: true}} {
		if _, err := s.Why(bad, "x"); err == nil {
			t.Errorf("Why(%+v): no error", bad)
		}
	}
	if _, err := s.Why(WhyScope{Owner: "alice"}, " "); err == nil {
		t.Error("Why of no words: no error")
	}
}

// A private file is not searched in a channel at all.
func TestWhyInChannelSeesSharedOnly(t *testing.T) {
	w, s := whyWorld(t)
	put(t, filepath.Join(w.store.Dir(), "alice", "facts", "secret.md"), "# S\n\n> Summary: s\n\n- Codename: Berlin-7 <!-- src: slack · dm · 2026-01-01 -->\n")
	ch, err := s.Why(WhyScope{Owner: "alice", Channel: "#slack-T01-C02", InChannel: true}, "Codename")
	if err != nil || strings.Contains(ch, "secret") || strings.Contains(ch, "Berlin-7") {
		t.Errorf("channel why: %v\n%s", err, ch)
	}
	dm, err := s.Why(WhyScope{Owner: "alice"}, "Codename")
	if err != nil || !strings.Contains(dm, "Berlin-7") {
		t.Errorf("DM why: %v\n%s", err, dm)
	}
}

// A person's forget of a file deletes its replaced facts (under
// "## Earlier") and their history with it: nothing of Lyon is found again.
func TestForgetDeletesEarlierFactsAndTheirHistory(t *testing.T) {
	w, s := whyWorld(t)
	if _, err := s.Forget(context.Background(), Request{Owner: "alice", Path: "facts/home.md"}); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(w.store.Dir(), "alice", "facts", "home.md")) {
		t.Error("the file is still there")
	}
	if vs, err := w.hist.List("alice", "facts/home.md"); err != nil || len(vs) != 0 {
		t.Errorf("its history: %+v, %v", vs, err)
	}
	if got, err := s.Why(WhyScope{Owner: "alice"}, "Lyon"); err != nil || !strings.HasPrefix(got, "Nothing I remember matches") {
		t.Errorf("why Lyon after the forget: %q, %v", got, err)
	}
}

// An episode entry is named by its heading; a channel's memory answers
// in its channel; past WhyLimit entries the rest are counted; without a
// history the sources still show; a long query is cut in the answer.
func TestWhyEntriesChannelsAndLimits(t *testing.T) {
	w, s := whyWorld(t)
	got, err := s.Why(WhyScope{Owner: "alice"}, "flaky test")
	if err != nil || !strings.Contains(got, "- `episodes/2026-11.md:4` ## Fixed the flaky test\n  from: added by hand") {
		t.Errorf("an entry: %v\n%s", err, got)
	}
	put(t, filepath.Join(w.store.Dir(), chanKey, "facts", "decisions.md"),
		"# Decisions\n> summary: what we chose\n\n- Go. <!-- src: slack · #C02 · 2026-05-01 · by Bob -->\n")
	got, err = s.Why(WhyScope{Owner: "alice", Channel: chanKey, InChannel: true}, "Go")
	if err != nil || !strings.Contains(got, "- `channel/facts/decisions.md:4` - Go.\n  from: slack, #C02, 2026-05-01, said by Bob") {
		t.Errorf("the channel's memory: %v\n%s", err, got)
	}
	for i := range WhyLimit + 2 {
		put(t, filepath.Join(w.store.Dir(), "alice", "facts", fmt.Sprintf("z%d.md", i)), fmt.Sprintf("# Z\n\n> Summary: z\n\n- Zebra %d\n", i))
	}
	long := "zebra " + strings.Repeat("x", 200)
	got, err = New(Wiring{StateDir: w.state, Store: w.store}, nil).Why(WhyScope{Owner: "alice"}, long)
	if err != nil || strings.Count(got, "\n- `facts/z") != WhyLimit || !strings.Contains(got, " more entries match") ||
		strings.Contains(got, "history:") || !strings.Contains(got, "“zebra "+strings.Repeat("x", 94)+"…”") {
		t.Errorf("many hits, no history: %v\n%s", err, got)
	}
}

// A file deleted and made again counts its lines from the new file; a
// version the history cannot read is passed over.
func TestWhyHistoryAcrossADelete(t *testing.T) {
	w, s := whyWorld(t)
	if err := w.hist.RecordDelete("alice", "facts/home.md", nil, "forget"); err != nil {
		t.Fatal(err)
	}
	v3 := "# Home\n\n> Summary: home\n\n- Lives in: Berlin\n"
	if _, _, err := w.hist.Record("alice", "facts/home.md", []byte(v3), "restore of X"); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(w.store.Dir(), "alice", "facts", "home.md"), v3)
	vs, err := w.hist.List("alice", "facts/home.md")
	if err != nil || len(vs) != 4 {
		t.Fatalf("versions %+v, %v", vs, err)
	}
	put(t, filepath.Join(w.state, "history", "alice", "facts", "home.md", vs[3].ID+".md"), "torn")
	got, err := s.Why(WhyScope{Owner: "alice"}, "Berlin")
	if err != nil || !strings.Contains(got, "(restore of X); file last changed") || !strings.Contains(got, "4 version(s) kept") {
		t.Errorf("%v\n%s", err, got)
	}
}

// A channel whose memory is off: only the person's shared files; a
// memory that cannot be searched is an error.
func TestWhyWithoutChannelMemoryAndBroken(t *testing.T) {
	w, s := whyWorld(t)
	got, err := s.Why(WhyScope{Owner: "alice", InChannel: true}, "Berlin Go")
	if err != nil || !strings.Contains(got, "Lives in: Berlin") || strings.Contains(got, "decisions") || strings.Contains(got, "D0ADA") {
		t.Errorf("%v\n%s", err, got)
	}
	put(t, filepath.Join(w.store.Dir(), "bob"), "a file, not a folder")
	if got, err := s.Why(WhyScope{Owner: "bob"}, "x"); err == nil {
		t.Errorf("a memory folder that is a file: %q", got)
	}
}

// /memory shows what is remembered without the stamps: in a channel a
// shared file's DM link never shows; /memory why says where lines came
// from, as that channel may see it.
func TestShowHidesStamps(t *testing.T) {
	_, s := whyWorld(t)
	for _, show := range []func() (string, error){
		func() (string, error) { return s.Show("alice", chanKey) },
		func() (string, error) { return s.ShowChat("alice") },
	} {
		got, err := show()
		if err != nil || !strings.Contains(got, "- Lives in: Berlin\n") || strings.Contains(got, "src:") || strings.Contains(got, "D0ADA") {
			t.Errorf("%v\n%s", err, got)
		}
	}
}
