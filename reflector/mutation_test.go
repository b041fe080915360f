package reflector

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/agent/logtest"
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

// Roll-ups and explicit turns: tests that pin down what mutation testing
// showed unguarded (see .gremlins-equivalent.md for the survivors that
// cannot change behaviour).

// TestRollupAfterReflectionLooksOnceADay: the first reflection of a day
// rolls up what is due; a later one that day does not look again (a period
// due meanwhile waits for the next day, or for `mnemo memory rollup`); the
// next day's first reflection looks again. A failed look is logged as not
// done, a good one is not. No owner's lock outlives its work.
func TestRollupAfterReflectionLooksOnceADay(t *testing.T) {
	// 4 months: 2025's December is not old enough, so only quarters are due.
	month := func(ym string) string { return strings.ReplaceAll(fakeJan, "2026-01", ym) }
	store := &fakeRollupStore{files: map[string]string{"episodes/2025-04.md": month("2025-04")}}
	model := llmtest.New(llmtest.Text("Summary: q1\n- a [1]"))
	var logs logtest.Buffer
	job, _ := newRollupJob(t, store, model, func(c *RollupConfig) {
		c.After, c.Logger = 4, slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := context.Background()
	job.AfterReflection(ctx, "alice")
	if n := len(model.Requests()); n != 1 || store.files["episodes/2025-Q2.md"] == "" {
		t.Fatalf("the day's first look: %d calls, files %v", n, slices.Sorted(maps.Keys(store.files)))
	}
	store.files["episodes/2025-07.md"] = month("2025-07")
	job.AfterReflection(ctx, "alice")
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("a second look the same day made %d call(s)", n-1)
	}
	job.clock.(interface{ Advance(time.Duration) }).Advance(24 * time.Hour)
	model.Add(llmtest.Text("Summary: q2\n- b [1]"))
	job.AfterReflection(ctx, "alice")
	if n := len(model.Requests()); n != 2 || store.files["episodes/2025-Q3.md"] == "" {
		t.Fatalf("the next day's look: %d calls in all, want 2", n)
	}
	if strings.Contains(logs.String(), "not done") {
		t.Errorf("a good look was logged as not done:\n%s", logs.String())
	}
	job.clock.(interface{ Advance(time.Duration) }).Advance(24 * time.Hour)
	store.listErr = errors.New("listing failed")
	job.AfterReflection(ctx, "alice")
	if !strings.Contains(logs.String(), "rollup: not done") {
		t.Errorf("a failed look was not logged:\n%s", logs.String())
	}
	if len(job.owners) != 0 {
		t.Errorf("%d owner lock(s) left after the work ended", len(job.owners))
	}
}

// TestRollupOwnerLock: one owner's roll-ups are made one at a time — a
// second Run waits for the first — and the lock goes when its last user
// is done, however many waited on it.
func TestRollupOwnerLock(t *testing.T) {
	job, _ := newRollupJob(t, &fakeRollupStore{files: map[string]string{}}, llmtest.New(), nil)
	unlockA := job.lock("alice")
	unlockB := job.lock("bob") // another owner: not held up
	got := make(chan string, 2)
	var wg sync.WaitGroup
	for _, name := range []string{"second", "third"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := job.lock("alice")
			got <- name
			unlock()
		}()
	}
	// Both wait on alice's lock: its count shows them (counted before they
	// wait), so neither can have taken it yet. (-3: a count going the
	// wrong way, caught below.)
	for {
		job.mu.Lock()
		refs := job.owners["alice"].refs
		job.mu.Unlock()
		if refs == 3 || refs == -3 {
			break
		}
		runtime.Gosched()
	}
	select {
	case name := <-got:
		t.Fatalf("%s ran while alice's lock was held", name)
	default:
	}
	unlockA()
	wg.Wait()
	unlockB()
	if len(got) != 2 || len(job.owners) != 0 {
		t.Errorf("%d ran, %d lock(s) left", len(got), len(job.owners))
	}
	if _, err := job.Run(context.Background(), "alice", true); err != nil || len(job.owners) != 0 {
		t.Errorf("Run: %v, %d lock(s) left", err, len(job.owners))
	}
}

// TestRollupAge: a month exactly After months before now's month is old
// enough (memory/README: on 2026-11-29 with 3, months up to 2026-08); so
// is the quarter it ends and, for a December, its year.
func TestRollupAge(t *testing.T) {
	now := newClock().Now() // 2026-03-05
	for _, tc := range []struct {
		ym    string
		after int
		want  bool
	}{
		{"2025-12", 3, true}, {"2026-01", 3, false}, {"2025-12", 4, false}, {"2025-11", 4, true},
		{"2024-03", 24, true}, {"2024-04", 24, false}, {"2026-03", 0, true}, {"2026-04", 0, false},
	} {
		if got := old(tc.ym, now, tc.after); got != tc.want {
			t.Errorf("old(%s, 2026-03-05, %d) = %v, want %v", tc.ym, tc.after, got, tc.want)
		}
	}
	store := &fakeRollupStore{files: map[string]string{
		"episodes/2025-10.md": strings.ReplaceAll(fakeJan, "2026-01", "2025-10"),
		"episodes/2026-01.md": fakeJan,
		"episodes/2025-Q4.md": "# 2025-Q4 Roll-up\n",
	}}
	var paths []string
	for _, years := range []bool{false, true} {
		ps, err := Due(store, "alice", now, 3, years)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			paths = append(paths, p.Path+" "+strings.Join(p.Sources, ","))
		}
	}
	want := []string{"episodes/2025-Q4.md episodes/2025-10.md", "episodes/2025.md episodes/2025-Q4.md"}
	if !slices.Equal(paths, want) {
		t.Errorf("due on 2026-03-05 with 3 months: %q, want %q", paths, want)
	}
	if NewRollups(RollupConfig{After: 0, Model: llmtest.New(), Store: store}) != nil {
		t.Error("After 0 made a job: roll-ups are off")
	}
}

// TestRollupInputAndAnswer: records that fill the input bound exactly are
// sent whole, with no note of a cut; the model's first summary line is
// the file's; a call that reports no tokens charges nothing.
func TestRollupInputAndAnswer(t *testing.T) {
	in := rollupInput("episodes/2026-Q1.md", []ref{{label: "a", body: "xxxxx"}, {label: "b", body: "yyyyy"}}, 10)
	if strings.Contains(in, "heading only") || !strings.Contains(in, "[2] b\n```text\nyyyyy\n```") {
		t.Errorf("input that fits exactly:\n%s", in)
	}
	refs := []ref{{label: "2026-01 § A", link: "2026-01.md#a"}}
	got, err := rollupFile(Period{Path: "episodes/2026-Q1.md", hash: "ff"}, []string{"2026-01.md"}, refs,
		"Summary: the first\nSummary: the second\n- a [1]")
	if err != nil || !strings.Contains(got, "\n> Summary: the first\n") {
		t.Errorf("file: %v\n%s", err, got)
	}
	var charged []int
	store := &fakeRollupStore{files: map[string]string{"episodes/2020-01.md": fakeJan}}
	job, _ := newRollupJob(t, store, llmtest.New(llmtest.Text("Summary: s\n- a [1]")), func(c *RollupConfig) {
		c.OnTokens = func(_ string, n int) { charged = append(charged, n) }
	})
	if rep, err := job.Run(context.Background(), "alice", false); err != nil || len(rep.Written) != 1 || len(charged) != 0 {
		t.Errorf("a call without usage: %+v, %v, charged %v", rep, err, charged)
	}
}

// TestAnchor: GitHub's rule at the edges of each kept range.
func TestAnchor(t *testing.T) {
	if got, want := anchor("/09:`az{ AZ_-.\x7fé"), "09az-az_-é"; got != want {
		t.Errorf("anchor = %q, want %q", got, want)
	}
}

// TestExplicitHeaderAndKeptLimit: the explicit turn's block names when,
// where and on which platform the message was written, and only what is
// known; a message of exactly keptTextLimit bytes is kept whole, with no
// mark of a cut.
func TestExplicitHeaderAndKeptLimit(t *testing.T) {
	for _, tc := range []struct {
		platform, place, want string
	}{
		{"slack", "#C01", "## The message to keep · written 2026-02-20 09:30 UTC · slack · #C01\n"},
		{"", "", "## The message to keep · written 2026-02-20 09:30 UTC\n"},
	} {
		tr := keep("k1", "", "x")
		tr.Platform, tr.Origin.Place = tc.platform, tc.place
		var b strings.Builder
		writeExplicit(&b, tr, "Alice", time.UTC)
		if !strings.HasPrefix(b.String(), "\n"+tc.want) {
			t.Errorf("block:\n%s\nwant the header %q", b.String(), tc.want)
		}
	}
	exact := strings.Repeat("a", keptTextLimit)
	if e := keptEntry(keep("k", "", exact)); !strings.Contains(e, "- "+exact+"\n") {
		t.Errorf("a message of exactly the limit was cut: %q", e[len(e)-20:])
	}
}

// TestExplicitKeepFailure: when the reflector cannot append the message
// itself (the write is refused), the explicit run fails — OnExplicit hears
// why and the turn stays journaled for a retry — rather than ending as if
// the message were kept. A model that cannot be reached is logged.
func TestExplicitKeepFailure(t *testing.T) {
	var k told
	e := newEnv(t, func(c *Config) { c.OnExplicit = k.record })
	e.srv.Enqueue(openaitest.Error(500, "server_error", "down"))
	e.add(keep("k1", "", "please refuse this")) // the fake store refuses any write naming "refuse"
	e.waitFor("the failed run", func() bool { return k.n() == 1 })
	if k.errs[0] == nil || !strings.Contains(k.errs[0].Error(), "keep the message the person asked for") {
		t.Errorf("OnExplicit told %v, want the failed keep", k.errs[0])
	}
	if e.r.Pending() != 1 {
		t.Errorf("Pending = %d, want the turn kept for a retry", e.r.Pending())
	}
	if !strings.Contains(e.logs.String(), "could not reflect a message the person asked to keep") {
		t.Errorf("the model's failure was not logged:\n%s", e.logs.String())
	}
}

// TestExplicitKeptWithoutWarning: a model that answers (and writes
// nothing) is no failure: the message is kept with no warning.
func TestExplicitKeptWithoutWarning(t *testing.T) {
	var k told
	e := newEnv(t, func(c *Config) { c.OnExplicit = k.record })
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.add(keep("k1", "", "see you at 5"))
	e.waitFor("the run", func() bool { return k.n() == 1 })
	if k.errs[0] != nil || strings.Contains(e.logs.String(), "could not reflect") {
		t.Errorf("OnExplicit told %v; logs:\n%s", k.errs[0], e.logs.String())
	}
}
