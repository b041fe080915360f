package app

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/memory"
)

// The running app's own parts: the baseline, a withdrawn turn, the
// accessors, the model calls cut at the grace's end, nothing unsaved.
func TestAppLifecycle(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", foodFact)
	a := w.open(t, "")
	a.StartBaseline("")
	a.Withdraw("t1")
	if a.cfg == nil || a.core == nil || a.State() == nil || a.budget == nil || a.Metrics() == nil || a.Pending() != 0 {
		t.Error("an accessor is empty")
	}
	r, err := a.ConsoleHandler().Handle(context.Background(), mnemo.Task{ID: "t2", User: "ann", Platform: "console", Text: "hi"})
	if err != nil || r.Text == "" {
		t.Errorf("console handler: %+v, %v", r, err)
	}
	a.CancelCalls(errors.New("grace over"))
	r, _ = a.ConsoleHandler().Handle(context.Background(), mnemo.Task{ID: "t3", User: "ann", Platform: "console", Text: "hi"})
	if !r.Failed || r.Text != mnemo.ApologyText { // cancelled: no failure of the model to explain
		t.Errorf("after the calls were cut: %+v", r)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveError(); err != nil {
		t.Errorf("save error %v", err)
	}
}

// The admin commands' Memory, offline: read, export, history, search.
func TestOfflineMemory(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", foodFact)
	cfg := w.config(t, "")
	store, err := memory.Open(memory.Options{Dir: cfg.Memory.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hist, err := OpenHistory(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer hist.Close()
	m := Offline(cfg.State.Dir, store, hist, nil, nil)
	if text, err := m.Read("ann", "facts/food.md"); err != nil || text != foodFact {
		t.Errorf("read %q, %v", text, err)
	}
	var b bytes.Buffer
	if rep, err := m.Export("ann", &b); err != nil || rep.Files != 1 {
		t.Errorf("export %+v, %v", rep, err)
	}
	if vs, err := m.History("ann", ""); err != nil || len(vs) != 0 {
		t.Errorf("history %+v, %v", vs, err)
	}
	if found, err := m.Search("ann", "ramen", 5); err != nil || len(found.Hits) != 1 {
		t.Errorf("search %+v, %v", found, err)
	}
	if why, err := m.WhyAdmin("ann", "ramen"); err != nil || !strings.Contains(why, "facts/food.md") {
		t.Errorf("why %q, %v", why, err)
	}
	if _, err := m.SetShared("ann", "facts/food.md", true); err != nil {
		t.Errorf("share offline: %v", err)
	}
	if cfg.State.Dir != filepath.Join(w.dir, "data", "state") {
		t.Errorf("state dir %s", cfg.State.Dir)
	}
}

// mnemo access allow, revoke and approve, and what each says.
func TestChangeAccess(t *testing.T) {
	w := newWorld(t)
	cfg := w.config(t, "slack:\n  allow: [U0CONF]\n")
	store, err := access.OpenStore(cfg.State.Dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct{ op, arg, want string }{
		{"allow", "slack:U1", "allowed slack:U1"},
		{"allow", "slack:U1", "slack:U1 was allowed already"},
		{"revoke", "slack:U1", "revoked slack:U1"},
		{"revoke", "slack:U1", "is not in the access list"},
		{"revoke", "slack:U0CONF", "is listed in slack.allow in the configuration"},
		{"approve", "K7QM2XPA", "no pairing code K7QM2XPA is waiting"},
	} {
		msg, err := ChangeAccess(cfg, store, c.op, c.arg, now)
		if got := msg + errText(err); !strings.Contains(got, c.want) {
			t.Errorf("%s %s = %q, want %q", c.op, c.arg, got, c.want)
		}
	}
	for _, c := range [][2]string{{"approve", "x!"}, {"allow", "slack:x"}} {
		if err := CheckAccessArg(c[0], c[1]); err == nil {
			t.Errorf("%s %s accepted", c[0], c[1])
		}
	}
	if err := CheckAccessArg("approve", "K7QM2XPA"); err != nil {
		t.Error(err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A reply cut in the middle keeps its text (what was shown), unexplained.
func TestExplainingHandlerCut(t *testing.T) {
	h := explainingHandler{stubHandler{reply: mnemo.Reply{Text: "half", Failed: true, Cut: true, Err: llm.ErrCut}}, explainer{}}
	if r, _ := h.Handle(context.Background(), mnemo.Task{}); r.Text != "half" || !r.Failed {
		t.Errorf("cut: %+v", r)
	}
}
