package reflector

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// Tests that pin down guarantees mutation testing showed unguarded.

// TestForgetLeavesNoState: after a forget the user's state is gone, so the
// map of users does not grow with every user ever forgotten; the log says
// how many turns were dropped, and says nothing when none were.
func TestForgetLeavesNoState(t *testing.T) {
	e := newEnv(t, nil)
	e.add(turn("alice", "t1", "hi"))
	if _, err := e.r.Forget(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	e.r.mu.Lock()
	_, kept := e.r.users["alice"]
	e.r.mu.Unlock()
	if kept {
		t.Fatal("Forget left alice's state behind")
	}
	if !strings.Contains(e.logs.String(), `msg="reflection: forgot pending turns" user=alice turns=1`) {
		t.Fatalf("logs:\n%s", e.logs.String())
	}
	// A user with state but nothing pending: a forget drops nothing and
	// logs nothing.
	e.r.mu.Lock()
	e.r.user("bob")
	e.r.mu.Unlock()
	if n, err := e.r.Forget(context.Background(), "bob"); n != 0 || err != nil {
		t.Fatalf("Forget(bob) = %d, %v", n, err)
	}
	if strings.Contains(e.logs.String(), "user=bob") {
		t.Fatalf("a forget of nothing was logged:\n%s", e.logs.String())
	}
}

// TestCleanJournalIsNotRewrittenAtOpen: a journal that parses is left as it
// is at Open (no rewrite: no create, no rename); one without a final newline
// or with a bad line is rewritten clean, and the warning gives the line.
func TestCleanJournalIsNotRewrittenAtOpen(t *testing.T) {
	e := newEnv(t, nil)
	e.r.crash()
	clean := mustLine(t, turn("alice", "t1", "one"), 0) + mustLine(t, turn("alice", "t2", "two"), 0)
	e.writeJournal("alice.jsonl", clean)
	var mu sync.Mutex
	var ops []string
	e.faultMu.Lock()
	e.fault = func(op, name string) error {
		mu.Lock()
		ops = append(ops, op)
		mu.Unlock()
		return nil
	}
	e.faultMu.Unlock()
	e.r = e.open()
	mu.Lock()
	if len(ops) != 0 {
		t.Fatalf("Open of a clean journal wrote to disk: %v", ops)
	}
	mu.Unlock()
	e.r.crash()
	e.writeJournal("alice.jsonl", strings.TrimSuffix(clean, "\n"))
	e.r = e.open()
	mu.Lock()
	if len(ops) == 0 {
		t.Fatal("a journal without its final newline was not rewritten")
	}
	mu.Unlock()
	if got := strings.Join(e.journalLines("alice"), "\n") + "\n"; got != clean {
		t.Fatalf("rewritten journal:\n%s", got)
	}
	e.r.crash()
	e.writeJournal("alice.jsonl", clean+"{torn\n")
	e.r = e.open()
	if !strings.Contains(e.logs.String(), "line=3") {
		t.Fatalf("the warning does not give the line:\n%s", e.logs.String())
	}
}

// TestJournalOfOnlyBadLinesLeavesNothingPending: a journal whose lines are
// all unreadable schedules nothing and keeps no state for its user.
func TestJournalOfOnlyBadLinesLeavesNothingPending(t *testing.T) {
	e := newEnv(t, nil)
	e.r.crash()
	e.writeJournal("alice.jsonl", "{torn\n")
	e.r = e.open()
	e.r.mu.Lock()
	_, kept := e.r.users["alice"]
	e.r.mu.Unlock()
	if kept || e.clock.armed() != 0 || e.r.Pending() != 0 {
		t.Fatalf("state kept %v, %d timers armed, %d pending", kept, e.clock.armed(), e.r.Pending())
	}
}
