package reflector

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
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
	if e.r.hasState("alice") {
		t.Fatal("Forget left alice's state behind")
	}
	if !strings.Contains(e.logs.String(), `msg="reflection: forgot pending turns" user=alice turns=1`) {
		t.Fatalf("logs:\n%s", e.logs.String())
	}
	// A user with state but nothing pending: a forget drops nothing and
	// logs nothing.
	e.r.mu.Lock()
	bob := e.r.acquire("bob", true) // held: bob's state stays while Forget runs
	e.r.mu.Unlock()
	if n, err := e.r.Forget(context.Background(), "bob"); n != 0 || err != nil {
		t.Fatalf("Forget(bob) = %d, %v", n, err)
	}
	bob.exec(func() {})
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
	if kept := e.r.hasState("alice"); kept || e.clock.Armed() != 0 || e.r.Pending() != 0 {
		t.Fatalf("state kept %v, %d timers armed, %d pending", kept, e.clock.Armed(), e.r.Pending())
	}
}

// TestCloseMakesOneRunPerPendingBatch: at Close, a user whose turns were
// reflected is not reflected again over nothing.
func TestCloseMakesOneRunPerPendingBatch(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.add(turn("alice", "t1", "hi"))
	if err := e.r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.Requests()); n != 1 {
		t.Fatalf("%d model calls at Close, want 1", n)
	}
}

// TestTurnAddedDuringARunWaitsForIdle: after a run, a turn that came in
// meanwhile waits for the conversation to go quiet (below MaxTurns).
func TestTurnAddedDuringARunWaitsForIdle(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 3 })
	_, release := e.turnDuringRun("nothing to remember")
	close(release)
	e.waitFor("the first run", func() bool { return e.r.Pending() == 1 })
	e.settle()
	if n := len(e.srv.Requests()); n != 1 {
		t.Fatalf("the turn added during the run was reflected at once (%d calls)", n)
	}
	e.clock.Advance(2 * time.Minute)
	e.waitFor("the second run", func() bool { return e.r.Pending() == 0 })
}

// TestFailureLogsNoGiveUpAndNoJournalError: an ordinary failure says it
// will retry, and neither that it gave up nor that the journal failed.
func TestFailureLogsNoGiveUpAndNoJournalError(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Enqueue(openaitest.Error(400, "", "bad"))
	e.add(turn("alice", "t1", "hi"))
	e.waitFor("the failure", func() bool { return strings.Contains(e.logs.String(), "will retry") })
	e.settle()
	for _, not := range []string{"gave up", "could not record"} {
		if strings.Contains(e.logs.String(), not) {
			t.Errorf("logs say %q:\n%s", not, e.logs.String())
		}
	}
}

// TestTranscriptWithoutContext: a turn without earlier messages has no
// "Earlier messages" block.
func TestTranscriptWithoutContext(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.add(turn("alice", "t1", "hi"))
	e.waitFor("the run", func() bool { return e.r.Pending() == 0 })
	if msg := e.srv.Requests()[0].LastUser(); strings.Contains(msg, "Earlier messages") {
		t.Fatalf("request:\n%s", msg)
	}
}

func TestOneLineKeepsExactLimit(t *testing.T) {
	if got := oneLine("abcde", 5); got != "abcde" {
		t.Errorf("oneLine at the limit = %q", got)
	}
	if got := oneLine("abcdef", 5); got != "abcde…" {
		t.Errorf("oneLine past the limit = %q", got)
	}
}

// TestFailedRunResumesAfterRestart: a run that made two changes and then
// failed keeps its records through the journal rewrite; after a restart
// it resumes with its replies and changes, asking the model only for what
// comes next.
func TestFailedRunResumesAfterRestart(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_append", appendArgs), openaitest.Call("memory_write", `{"path":"facts/user.md","content":"x"}`)),
		openaitest.Error(400, "", "broken"),
	)
	e.add(turn("alice", "t1", "I'm Ada"))
	e.waitFor("the failure", func() bool { return strings.Contains(e.logs.String(), "will retry") })
	e.settle()
	lines := strings.Join(e.journalLines("alice"), "\n")
	if strings.Count(lines, `"kind":"done"`) != 2 || strings.Count(lines, `"kind":"step"`) != 1 {
		t.Fatalf("the failed run's records were not kept:\n%s", lines)
	}
	e.r.crash()
	e.srv.Enqueue(openaitest.Text("saved"))
	e.r = e.open()
	e.drain("the resumed run")
	if n := len(e.mem.Calls()); n != 2 {
		t.Fatalf("%d tool calls in all, want the 2 of the first go", n)
	}
	if n := len(e.srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3 (reply, failure, the last reply after the restart)", n)
	}
	if !strings.Contains(e.logs.String(), "resumed_calls=2") {
		t.Errorf("logs:\n%s", e.logs.String())
	}
}

func TestCutTextEdges(t *testing.T) {
	exact := strings.Repeat("a", cutLimit)
	if got := cutText(exact); got != exact {
		t.Errorf("a text of exactly cutLimit bytes was cut: %d bytes", len(got))
	}
	// A rune across the limit is not split.
	s := strings.Repeat("a", cutLimit-1) + "é" + "tail"
	if got := cutText(s); !utf8.ValidString(got) || !strings.HasPrefix(got, strings.Repeat("a", cutLimit-1)+"\n[mnemo: cut here") {
		t.Errorf("cut across a rune: %q", got[cutLimit-8:])
	}
	// Bytes that start no rune at all: cut to nothing, never past the start.
	if got := cutText(strings.Repeat("\x80", cutLimit+10)); !strings.HasPrefix(got, "\n[mnemo: cut here") {
		t.Errorf("cut of continuation bytes: %.40q", got)
	}
}

// TestCutTurnIsJournaled: the cut turn replaces the whole one in the
// journal before it is reflected, so a restart does not try the whole turn
// again; a batch only halved rewrites nothing.
func TestCutTurnIsJournaled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	e.srv.Handle(func(req openaitest.Request) (openaitest.Reply, bool) {
		if !strings.Contains(req.LastUser(), "[mnemo: cut here") {
			return openaitest.Error(400, "context_length_exceeded", "too long"), true
		}
		arrived <- struct{}{}
		<-release
		return openaitest.Text("nothing"), true
	})
	e.add(turn("alice", "t1", strings.Repeat("x", 2*cutLimit)))
	<-arrived
	lines := e.journalLines("alice")
	if len(lines) != 1 || !strings.Contains(lines[0], `"cut":true`) || !strings.Contains(lines[0], "[mnemo: cut here") {
		t.Fatalf("journal while the cut turn is reflected: %q", lines)
	}
	if strings.Contains(e.logs.String(), "could not journal the cut turn") {
		t.Errorf("logs:\n%s", e.logs.String())
	}
}

// TestResumedRunThenFullBatchAtOnce: after a resumed run, the turns that
// waited behind it are reflected at once when they reach MaxTurns.
func TestResumedRunThenFullBatchAtOnce(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 2 })
	e.r.crash()
	e.mem.versions["alice/episodes/2026-03.md"] = "v-after"
	e.journalRun("v-after", true)
	data := strings.Join(e.journalLines("alice"), "\n") + "\n"
	data += mustLine(t, turn("alice", "t2", "two"), 0) + mustLine(t, turn("alice", "t3", "three"), 0)
	e.writeJournal("alice.jsonl", data)
	e.srv.Enqueue(openaitest.Text("saved"), openaitest.Text("nothing to remember"))
	e.r = e.open()
	e.drain("both runs, without the clock moving")
	if n := len(e.srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
}

func TestFailedTurnsUserStartingWithADash(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "reflector", "failed"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "reflector", "failed", "-a-20260305T150000Z-0a1b.jsonl"), nil, 0o600))
	files, err := FailedTurns(dir)
	if err != nil || len(files) != 1 || files[0].User != "-a" {
		t.Fatalf("FailedTurns = %+v, %v", files, err)
	}
}
