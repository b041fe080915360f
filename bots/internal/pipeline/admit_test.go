package pipeline

import (
	"context"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/access"
)

// gate refuses the users it lists, with their reply.
type gate map[string]string

func (g gate) Check(_ context.Context, who access.Who) (bool, string) {
	reply, refused := g[who.User]
	return !refused, reply
}

// Admit: a refused message is acknowledged and never journaled or
// answered; the gate's reply is posted as the answer; an empty reply
// posts nothing; a pipeline without a gate lets everyone in.
func TestAdmit(t *testing.T) {
	e := newEnv(t, t.TempDir(), Options{Access: gate{"eve": "ask the operator|please", "mallory": ""}})
	e.start(t)
	ctx := context.Background()
	eve, mallory, ann := e.msg("m1", "c1", "hi"), e.msg("m2", "c2", "hi"), e.msg("m3", "c3", "hi")
	eve.Who.User, mallory.Who.User, ann.Who.User = "eve", "mallory", "ann"
	if e.p.Admit(ctx, eve) || e.p.Admit(ctx, mallory) || !e.p.Admit(ctx, ann) {
		t.Fatal("Admit let the wrong people in")
	}
	e.f.waitEvent(t, "post:m1:1:please")
	e.p.Close()
	want := map[string]bool{"ack:m1": true, "ack:m2": true, "post:m1:0:ask the operator": true, "post:m1:1:please": true}
	for _, ev := range e.f.Events() {
		if !want[ev] {
			t.Errorf("unexpected event %q", ev)
		}
	}
	if e.p.Journal().Len() != 0 || len(e.h.Tasks()) != 0 {
		t.Fatal("a refused message was journaled or answered")
	}

	open := newEnv(t, t.TempDir(), Options{})
	if !open.p.Admit(ctx, eve) {
		t.Fatal("no gate refused")
	}
}

// While stopping, a refusal is acknowledged but not answered; a post that
// fails is logged.
func TestAdmitStoppingAndFailing(t *testing.T) {
	e := newEnv(t, t.TempDir(), Options{Access: gate{"eve": "no"}})
	e.start(t)
	e.f.failPost = 0
	eve := e.msg("m1", "c1", "hi")
	eve.Who.User = "eve"
	e.p.Admit(context.Background(), eve)
	e.waitLog(t, "fake: cannot post the refusal")
	e.p.Stop()
	e.f.mu.Lock()
	e.f.failPost = -1
	e.f.mu.Unlock()
	late := e.msg("m2", "c1", "hi")
	late.Who.User = "eve"
	if e.p.Admit(context.Background(), late) {
		t.Fatal("let in while stopping")
	}
	e.p.Close()
	if len(e.f.posts()) != 0 {
		t.Fatalf("posts %v", e.f.posts())
	}
}

// With every slot taken the refusal goes unsaid rather than holding up
// the platform's events.
func TestAdmitNoSlot(t *testing.T) {
	e := newEnv(t, t.TempDir(), Options{Access: gate{"eve": "no"}})
	e.p.Slots = make(chan struct{}, 1)
	e.p.Slots <- struct{}{}
	e.start(t)
	eve := e.msg("m1", "c1", "hi")
	eve.Who.User = "eve"
	if e.p.Admit(context.Background(), eve) {
		t.Fatal("let in")
	}
	e.waitLog(t, "too busy to tell a refused person")
	<-e.p.Slots
	if len(e.f.posts()) != 0 {
		t.Fatalf("posts %v", e.f.posts())
	}
}
