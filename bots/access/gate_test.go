package access

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestGateRefusesOnceAnHour(t *testing.T) {
	c := &clock{t0}
	var counted []string
	g := NewGate(GateOptions{Platform: Slack, Policy: Policy{Mode: Open, HomeOnly: true}, Now: c.now,
		Refused: func(p, r string) { counted = append(counted, p+"/"+r) }})
	ctx := context.Background()
	if ok, reply := g.Check(ctx, Who{Platform: Slack, Home: true, Team: "T1", User: "U1"}); !ok || reply != "" {
		t.Fatalf("home member: %v %q", ok, reply)
	}
	guest := Who{Platform: Slack, Team: "T2", User: "U2"}
	ok, reply := g.Check(ctx, guest)
	if ok || !strings.Contains(reply, "mnemo access allow slack:T2/U2") {
		t.Fatalf("guest: %v %q", ok, reply)
	}
	c.t = c.t.Add(59 * time.Minute)
	if ok, reply := g.Check(ctx, guest); ok || reply != "" {
		t.Fatalf("guest within the hour: %v %q", ok, reply)
	}
	// A command is always answered.
	if ok, reply := g.CheckCommand(ctx, guest); ok || reply == "" {
		t.Fatalf("command within the hour: %v %q", ok, reply)
	}
	c.t = c.t.Add(time.Hour)
	if ok, reply := g.Check(ctx, guest); ok || reply == "" {
		t.Fatalf("guest an hour later: %v %q", ok, reply)
	}
	if len(counted) != 4 || counted[0] != "slack/access" {
		t.Fatalf("counted %v", counted)
	}
}

func TestGatePairing(t *testing.T) {
	c := &clock{t0}
	s, _ := openTemp(t)
	g := NewGate(GateOptions{Platform: Discord, Policy: Policy{Mode: Pairing}, Store: s, Now: c.now})
	ctx := context.Background()
	stranger := Who{Platform: Discord, Channel: "5", User: "42"}
	ok, reply := g.Check(ctx, stranger)
	_, codes := s.List(c.t)
	if ok || len(codes) != 1 || !strings.Contains(reply, "mnemo access approve "+codes[0].Code) {
		t.Fatalf("stranger: %v %q %+v", ok, reply, codes)
	}
	if _, err := s.Approve(codes[0].Code, c.t); err != nil {
		t.Fatal(err)
	}
	if ok, _ := g.Check(ctx, stranger); !ok {
		t.Fatal("approved person refused")
	}
	// Past MaxPending codes (from as many servers) a stranger is told to
	// ask instead.
	for i := range MaxPending {
		if _, reply := g.Check(ctx, Who{Platform: Discord, Team: fmt.Sprint(700 + i), User: fmt.Sprint(100 + i)}); !strings.Contains(reply, "mnemo access approve ") {
			t.Fatalf("stranger %d: %q", i, reply)
		}
	}
	if ok, reply := g.Check(ctx, Who{Platform: Discord, Team: "999", User: "999"}); ok || !strings.Contains(reply, "too many people are waiting") ||
		!strings.Contains(reply, "mnemo access allow discord:user:999") {
		t.Fatalf("past MaxPending: %v %q", ok, reply)
	}
}

// Pairing without a store, or a store that cannot be written, still
// answers who to ask.
func TestGatePairingWithoutStore(t *testing.T) {
	g := NewGate(GateOptions{Platform: Discord, Policy: Policy{Mode: Pairing}})
	if ok, reply := g.Check(context.Background(), Who{Platform: Discord, User: "7"}); ok || !strings.Contains(reply, "mnemo access allow discord:user:7") {
		t.Fatalf("%v %q", ok, reply)
	}
	s := &Store{dir: "/dev/null/state", rand: rand.Reader}
	g = NewGate(GateOptions{Platform: Discord, Policy: Policy{Mode: Pairing}, Store: s})
	if ok, reply := g.Check(context.Background(), Who{Platform: Discord, User: "7"}); ok || !strings.Contains(reply, "mnemo access allow") {
		t.Fatalf("unwritable store: %v %q", ok, reply)
	}
}

// The group check's failure is logged and refuses.
func TestGateGroupError(t *testing.T) {
	var logs strings.Builder
	g := NewGate(GateOptions{Platform: Slack, Policy: Policy{Mode: Allowlist, Allow: []Entry{{Kind: Group, ID: "S1"}}},
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	who := Who{Platform: Slack, User: "U1", Team: "T1", InGroup: func(context.Context, string) (bool, error) { return false, fmt.Errorf("missing_scope") }}
	if ok, _ := g.Check(context.Background(), who); ok {
		t.Fatal("let in on an error")
	}
	if !strings.Contains(logs.String(), "cannot check a user group") || !strings.Contains(logs.String(), "missing_scope") {
		t.Fatalf("the error is not logged:\n%s", logs.String())
	}
	logs.Reset()
	who.InGroup = func(context.Context, string) (bool, error) { return true, nil }
	if ok, _ := g.Check(context.Background(), who); !ok || strings.Contains(logs.String(), "cannot check") {
		t.Fatalf("a member: %v\n%s", ok, logs.String())
	}
}

func TestLimiterBounded(t *testing.T) {
	l := newLimiter(3, time.Hour)
	for i := range 10 {
		if !l.take(fmt.Sprint(i), t0) {
			t.Fatalf("key %d refused", i)
		}
		if len(l.last) > 3 {
			t.Fatalf("%d keys kept", len(l.last))
		}
	}
	if l.take("9", t0) {
		t.Fatal("the newest key was forgotten")
	}
	if !l.take("0", t0) {
		t.Fatal("the oldest key was not forgotten")
	}
	// Below the bound nothing unexpired is forgotten.
	l = newLimiter(3, time.Hour)
	l.take("a", t0)
	l.take("b", t0)
	if l.take("a", t0) {
		t.Fatal("a key was forgotten below the bound")
	}
	// A clock set back: a key told exactly an hour ago is answered, even
	// behind a later entry.
	l = newLimiter(100, time.Hour)
	l.take("f", t0.Add(2*time.Hour))
	l.take("k", t0.Add(time.Hour))
	if l.take("k", t0.Add(2*time.Hour-1)) || !l.take("k", t0.Add(2*time.Hour)) {
		t.Fatal("k an hour after it was told")
	}
	// Expired keys go first, whatever the bound.
	l = newLimiter(100, time.Hour)
	l.take("a", t0)
	if l.take("a", t0.Add(time.Hour-1)) || !l.take("a", t0.Add(time.Hour)) || len(l.order) != 1 {
		t.Fatalf("expiry: %+v", l.order)
	}
}

// Twenty strangers writing from one place do not fill the queue for
// everyone: that place is given MaxPendingPerSource codes, the rest are
// told whom to ask (and logged), and a colleague writing from elsewhere
// still gets a code.
func TestGateTwentyStrangers(t *testing.T) {
	c := &clock{t0}
	s, _ := openTemp(t)
	var logs strings.Builder
	g := NewGate(GateOptions{Platform: Slack, Policy: Policy{Mode: Pairing}, Store: s, Now: c.now, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	codes, busy := 0, 0
	for i := range 20 {
		_, reply := g.Check(ctx, Who{Platform: Slack, Team: "T9", User: fmt.Sprint("U", 100+i)})
		switch {
		case strings.Contains(reply, "mnemo access approve "):
			codes++
		case strings.Contains(reply, "too many people are waiting") && strings.Contains(reply, fmt.Sprint("mnemo access allow slack:T9/U", 100+i)):
			busy++
		default:
			t.Fatalf("stranger %d: %q", i, reply)
		}
	}
	if codes != MaxPendingPerSource || busy != 20-MaxPendingPerSource {
		t.Fatalf("%d codes, %d told to ask", codes, busy)
	}
	if !strings.Contains(logs.String(), "no pairing code given: too many pairing codes wait for approval from the same place") ||
		!strings.Contains(logs.String(), `source="team T9"`) {
		t.Errorf("logs:\n%s", logs.String())
	}
	if _, reply := g.Check(ctx, Who{Platform: Slack, Team: "T1", User: "U1"}); !strings.Contains(reply, "mnemo access approve ") {
		t.Fatalf("a colleague from another team: %q", reply)
	}
	_, pending := s.List(c.t)
	if len(pending) != MaxPendingPerSource+1 || pending[len(pending)-1].Source != "team T1" {
		t.Fatalf("codes %+v", pending)
	}
}

// Who.Source: the Slack team, the Discord server, or DMs.
func TestWhoSource(t *testing.T) {
	for _, tt := range []struct {
		who  Who
		want string
	}{
		{Who{Platform: Slack, Team: "T1", User: "U1"}, "team T1"},
		{Who{Platform: Slack, User: "U1"}, "DMs"},
		{Who{Platform: Discord, Team: "42", User: "7"}, "server 42"},
		{Who{Platform: Discord, User: "7"}, "DMs"},
	} {
		if got := tt.who.Source(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.who, got, tt.want)
		}
	}
}
