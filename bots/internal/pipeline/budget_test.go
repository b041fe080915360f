package pipeline

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-agent/mnemo"
)

// scriptBudget answers as told and records the charges.
type scriptBudget struct {
	rate, ask string // reason returned ("" = within)
	tell      bool
	mu        sync.Mutex
	charges   []string
}

func (b *scriptBudget) Message(string) (string, bool) { return b.rate, b.rate != "" && b.tell }
func (b *scriptBudget) Reserve(user, text string) (int, string, bool) {
	if b.ask != "" {
		return 0, b.ask, b.tell
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.charges = append(b.charges, "hold "+user+":"+text)
	return len(text), "", false
}

func (b *scriptBudget) Settle(user string, held, tokens int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.charges = append(b.charges, "settle "+user+":"+strconv.Itoa(held)+":"+strconv.Itoa(tokens))
}

// refusals records mnemo_refused_total's increments.
type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) Refused(platform, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, platform+"/"+reason)
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// A message over a budget is answered without the model: over messages a
// minute it is acknowledged and never journaled; over tokens it is taken
// and answered with the plain reply. Each refusal is counted, and told
// only when the budget says so.
func TestBudgetRefusals(t *testing.T) {
	tests := []struct {
		name      string
		budget    *scriptBudget
		wantErr   error
		wantPost  string // "" = nothing posted
		wantCount string
		wantLog   string
	}{
		{"rate, told", &scriptBudget{rate: "rate", tell: true}, ErrRefused, RateReplyText, "fake/rate", "over limits.messagesPerMinute"},
		{"rate, silent", &scriptBudget{rate: "rate"}, ErrRefused, "", "fake/rate", "over limits.messagesPerMinute"},
		{"tokens, told", &scriptBudget{ask: "tokens", tell: true}, nil, TokensReplyText, "fake/tokens", "over limits.tokensPerDay"},
		{"tokens, silent", &scriptBudget{ask: "tokens"}, nil, "", "fake/tokens", "over limits.tokensPerDay"},
		{"total, told", &scriptBudget{ask: "total_tokens", tell: true}, nil, TotalTokensReplyText, "fake/total_tokens", "over limits.totalTokensPerDay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &refusals{}
			e := newEnv(t, t.TempDir(), Options{Budget: tt.budget, Refusals: r})
			e.start(t)
			errs := e.p.Receive(context.Background(), e.msg("m1", "c1", "hello"))
			if !errors.Is(errs[0], tt.wantErr) {
				t.Fatalf("Receive: %v, want %v", errs[0], tt.wantErr)
			}
			e.waitLog(t, tt.wantLog)
			if tt.wantPost != "" {
				e.f.waitEvent(t, "post:m1:0:"+tt.wantPost)
			}
			e.p.Close()
			if got := e.f.posts(); tt.wantPost == "" && len(got) != 0 || tt.wantPost != "" && len(got) != 1 {
				t.Errorf("posts %q", got)
			}
			if !slices.Contains(e.f.Events(), "ack:m1") {
				t.Errorf("not acknowledged: %q", e.f.Events())
			}
			if n := len(e.h.Tasks()); n != 0 {
				t.Errorf("the model was asked %d times", n)
			}
			if n := e.p.Journal().Len(); n != 0 {
				t.Errorf("%d messages left in the journal", n)
			}
			if got := r.list(); !slices.Equal(got, []string{tt.wantCount}) {
				t.Errorf("refusals %q, want %q", got, tt.wantCount)
			}
		})
	}
}

// Within the budgets tokens are held for the answer before the handler
// runs and settled after with what the reply says it cost, to the task's
// user; an answer that failed or panicked settles what it reported (a
// failure before any call: nothing), so nothing stays held.
func TestBudgetReservesAndSettles(t *testing.T) {
	tests := []struct {
		name  string
		reply func(mnemo.Task) (mnemo.Reply, error)
		post  string
		want  string
	}{
		{"answered", func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: "hi", Tokens: 7}, nil }, "hi", "settle u-c1:5:7"},
		{"failed after a call", func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Tokens: 3}, errors.New("down") }, ErrorReplyText, "settle u-c1:5:3"},
		{"failed before any", func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{}, errors.New("down") }, ErrorReplyText, "settle u-c1:5:0"},
		{"panicked", func(mnemo.Task) (mnemo.Reply, error) { panic("boom") }, ErrorReplyText, "settle u-c1:5:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &scriptBudget{}
			e := newEnv(t, t.TempDir(), Options{Budget: b})
			e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
				b.mu.Lock()
				b.charges = append(b.charges, "answer")
				b.mu.Unlock()
				return tt.reply(task)
			})
			e.start(t)
			if errs := e.p.Receive(context.Background(), e.msg("m1", "c1", "hello")); errs[0] != nil {
				t.Fatal(errs[0])
			}
			e.f.waitEvent(t, "post:m1:0:"+tt.post)
			e.p.Close()
			b.mu.Lock()
			defer b.mu.Unlock()
			if want := []string{"hold u-c1:hello", "answer", tt.want}; !slices.Equal(b.charges, want) {
				t.Errorf("charges %q, want %q", b.charges, want)
			}
		})
	}
}

// A message the platform cut is answered (with the cut text), and its
// author told once, apart from the answer; a redelivery is not told again.
func TestCutNote(t *testing.T) {
	r := &refusals{}
	e := newEnv(t, t.TempDir(), Options{Refusals: r})
	e.start(t)
	m := e.msg("m1", "c1", "aaaa")
	m.Cut = 4
	e.p.Receive(context.Background(), m)
	e.f.waitEvent(t, "post:m1:0:"+CutNoteText(4))
	e.h.WaitTasks(t, 1, wait)
	again := e.msg("m1", "c1", "aaaa")
	again.Cut = 4
	e.p.Receive(context.Background(), again)
	e.p.Close()
	if got := r.list(); !slices.Equal(got, []string{"fake/too_long"}) {
		t.Errorf("refusals %q", got)
	}
	if tasks := e.h.Tasks(); len(tasks) != 1 || tasks[0].Text != "aaaa" {
		t.Errorf("tasks %+v", tasks)
	}
	notes := 0
	for _, p := range e.f.posts() {
		if strings.Contains(p, "too long") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("%d notes in %q", notes, e.f.posts())
	}
}

// A notice that cannot be posted is logged; nothing else happens.
func TestNoticeFails(t *testing.T) {
	e := newEnv(t, t.TempDir(), Options{Budget: &scriptBudget{rate: "rate", tell: true}})
	e.f.failPost = 0
	e.start(t)
	e.p.Receive(context.Background(), e.msg("m1", "c1", "hello"))
	e.waitLog(t, "cannot post a notice")
}

// After Stop no notice is posted (Close may have returned already): the
// refusal is still counted.
func TestNoNoticeWhileStopping(t *testing.T) {
	r := &refusals{}
	e := newEnv(t, t.TempDir(), Options{Budget: &scriptBudget{rate: "rate", tell: true}, Refusals: r})
	e.start(t)
	e.p.Stop()
	if errs := e.p.Receive(context.Background(), e.msg("m1", "c1", "hello")); !errors.Is(errs[0], ErrRefused) {
		t.Fatalf("Receive: %v", errs[0])
	}
	e.p.Close()
	if got := e.f.posts(); len(got) != 0 {
		t.Errorf("posts %q", got)
	}
	if got := r.list(); !slices.Equal(got, []string{"fake/rate"}) {
		t.Errorf("refusals %q", got)
	}
}
