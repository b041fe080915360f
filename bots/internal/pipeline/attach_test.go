package pipeline

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// attacher is fake with files: Attach adds "[files of ID]" and records
// it; what the journal keeps is the text without them.
type attacher struct{ *fake }

func (a attacher) Attach(_ context.Context, m *msg) string {
	a.record("attach:" + m.ID)
	return " [files of " + m.ID + "]"
}

// A platform's attachments are read when the message is answered, before
// its budget is held (the budget counts them), and given to the model with
// the message.
func TestAttacher(t *testing.T) {
	b := &scriptBudget{}
	logs := slog.New(slog.DiscardHandler)
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "fake", Dir: t.TempDir(), Logger: logs})
	e := newEnv(t, "", Options{})
	f := attacher{newFake()}
	e.f = f.fake
	e.p = New[*msg](f, Options{Name: "fake", Handler: e.h, Lifecycle: rt, Budget: b})
	e.start(t)
	if errs := e.p.Receive(context.Background(), e.msg("m1", "c1", "hello")); errs[0] != nil {
		t.Fatal(errs[0])
	}
	e.f.waitEvent(t, "post:m1:0")
	if got := e.h.Tasks()[0].Text; got != "hello [files of m1]" {
		t.Errorf("task text %q", got)
	}
	b.mu.Lock()
	if len(b.charges) == 0 || b.charges[0] != "hold u-c1:hello [files of m1]" {
		t.Errorf("charges %q", b.charges)
	}
	b.mu.Unlock()
	if i, j := slices.Index(e.f.Events(), "attach:m1"), slices.Index(e.f.Events(), "prepare:m1"); i < 0 || j < i {
		t.Errorf("events %q", e.f.Events())
	}
}
