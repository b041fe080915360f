package userdata

import (
	"context"
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
