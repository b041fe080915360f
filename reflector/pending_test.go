package reflector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// TestWaitingListedRetriedAndReflected: a turn given up on after
// MaxAttempts failed runs is listed with its cause beside the turns still
// waiting; RetryGivenUp journals it again with its attempts counted afresh,
// after the turns journaled, and the next start reflects it.
func TestWaitingListedRetriedAndReflected(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Error(400, "", "the model is broken"), true
	})
	e.add(turn("alice", "t1", "I'm Ada"))
	e.failUntilGiveUp()
	e.r.crash()
	e.writeJournal("alice.jsonl", mustLine(t, turn("alice", "t2", "I like tea"), 1))
	e.writeJournal("bob.jsonl", mustLine(t, turn("bob", "t3", "I'm Bob"), 0))
	e.writeJournal("not a user.jsonl", "junk\n") // not a journal: skipped

	all, err := ListWaiting(e.dir, "")
	must(t, err)
	if len(all) != 3 {
		t.Fatalf("ListWaiting = %+v", all)
	}
	byTask := map[string]Waiting{}
	for _, w := range all {
		byTask[w.TaskID] = w
	}
	if w := byTask["t1"]; !w.GivenUp || w.Attempts != MaxAttempts || !strings.Contains(w.Cause, "the model is broken") || !strings.Contains(w.File, "failed") {
		t.Errorf("given-up turn listed as %+v", w)
	}
	if w := byTask["t2"]; w.GivenUp || w.Attempts != 1 || w.Cause != "" || w.File != filepath.Join(e.dir, "reflector", "alice.jsonl") {
		t.Errorf("waiting turn listed as %+v", w)
	}
	alice, err := ListWaiting(e.dir, "alice")
	must(t, err)
	if len(alice) != 2 || alice[0].User != "alice" || alice[1].User != "alice" {
		t.Fatalf("alice's = %+v", alice)
	}

	n, err := RetryGivenUp(e.dir, "bob")
	must(t, err)
	if n != 0 {
		t.Fatalf("bob had nothing given up, retried %d", n)
	}
	n, err = RetryGivenUp(e.dir, "alice")
	must(t, err)
	if n != 1 {
		t.Fatalf("retried %d, want 1", n)
	}
	if files, _ := FailedTurns(e.dir); len(files) != 0 {
		t.Fatalf("failed files left: %v", files)
	}
	lines := e.journalLines("alice")
	if len(lines) != 2 || !strings.Contains(lines[0], `"taskId":"t2"`) || !strings.Contains(lines[1], `"taskId":"t1"`) || strings.Contains(lines[1], "attempts") {
		t.Fatalf("journal after the retry: %q", lines)
	}

	// The next start reflects both (they were given up, not forgotten).
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Text("nothing to remember"), true })
	before := len(e.srv.Requests())
	e.r = e.open()
	for e.r.Pending() > 0 {
		e.clock.Advance(time.Hour)
		e.settle()
	}
	if got := len(e.srv.Requests()) - before; got < 2 {
		t.Fatalf("%d reflection requests after the retry", got)
	}
	left, err := ListWaiting(e.dir, "")
	must(t, err)
	if len(left) != 0 {
		t.Fatalf("after reflection: %+v", left)
	}
}

func TestWaitingErrors(t *testing.T) {
	if got, err := ListWaiting(t.TempDir(), ""); err != nil || got != nil {
		t.Fatalf("no journal: %v, %v", got, err)
	}
	if _, err := RetryGivenUp(t.TempDir(), "../x"); err == nil {
		t.Fatal("a bad user name was retried")
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "reflector"), nil, 0o600)) // a file where the folder goes
	if _, err := ListWaiting(dir, ""); err == nil {
		t.Fatal("ListWaiting on a broken state folder gave no error")
	}
	if _, err := RetryGivenUp(dir, ""); err == nil {
		t.Fatal("RetryGivenUp on a broken state folder gave no error")
	}
	if w := (Waiting{User: "alice", ChannelKey: "#slack-T1-C1"}); !w.Owns("alice") || !w.Owns("#slack-T1-C1") || w.Owns("bob") || w.Owns("#slack-T1-C2") {
		t.Fatal("Owns is wrong")
	}
}
