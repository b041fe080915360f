package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
)

// TestMemoryPending: the turns a model never answered for reflection are
// listed with their age and cause, retried and dropped by the admin, and
// check names the command (issue 25, item 3).
func TestMemoryPending(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Alice.\n", "--user", "alice").want(t, 0, "Noted.\n", "")
	cli(t, w.env, "memory", "pending").want(t, 0, "nothing is waiting to be reflected into memory\n", "")

	// A turn left journaled (the process stopped before reflecting it),
	// and one given up on after three failed runs.
	leaveTurn(t, w, mnemo.Turn{TaskID: "t1", User: "alice", Platform: "slack", UserText: "I like tea.", ReplyText: "Noted.", Time: time.Now().Add(-3 * time.Hour)})
	failed := filepath.Join(w.dir, "data", "state", "reflector", "failed", "bob-20261120T100000Z-r1.jsonl")
	putFile(t, failed, `{"taskId":"t9","user":"bob","platform":"discord","userText":"I'm Bob.","replyText":"Hi","time":"2026-11-20T10:00:00Z","attempts":3}`+"\n"+
		`{"kind":"failed","user":"bob","error":"reflector: model server unavailable","time":"2026-11-20T11:00:00Z"}`+"\n")

	r := cli(t, w.env, "memory", "pending")
	r.want(t, 0, "", "")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "d ago  bob  discord  given up after 3 failed runs: reflector: model server unavailable") ||
		lines[1] != "3h ago  alice  slack  waiting" ||
		lines[2] != "1 turn waiting to be reflected, 1 given up on; try those again with mnemo memory pending --retry (at the next start), or delete a person's with mnemo memory pending USER --drop" {
		t.Fatalf("pending printed:\n%s", r.stdout)
	}
	cli(t, w.env, "memory", "pending", "alice").want(t, 0, "1 turn waiting to be reflected, 0 given up on\n", "")
	cli(t, w.env, "memory", "check").want(t, 1, "mnemo memory pending bob --retry", "1 problem")

	// Bad requests change nothing.
	cli(t, w.env, "memory", "pending", "--retry", "--drop").want(t, 2, "", "--retry or --drop, not both")
	cli(t, w.env, "memory", "pending", "--drop").want(t, 2, "", "--drop needs a user")
	cli(t, w.env, "memory", "pending", "#slack-T1-C1", "--drop").want(t, 2, "", "their speakers'")
	lock, err := lockData(nil, lockConfig(t, w), "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	cli(t, w.env, "memory", "pending", "bob", "--retry").want(t, 1, "", "belongs to process "+strconv.Itoa(os.Getpid())+" (mnemo serve) while it runs; stop it")
	lock.Close()
	if !exists(failed) {
		t.Fatal("a refused retry changed the failed file")
	}

	// --retry journals bob's turn again; the next start reflects it.
	cli(t, w.env, "memory", "pending", "bob", "--retry").want(t, 0, "1 turn of bob journaled again; the next mnemo chat or mnemo serve reflects them\n", "")
	cli(t, w.env, "memory", "pending", "bob", "--retry").want(t, 0, "no turns given up on for bob\n", "")
	if exists(failed) || len(journalTurns(t, w, "bob")) != 1 {
		t.Fatalf("after the retry: failed file %v, journal %v", exists(failed), journalTurns(t, w, "bob"))
	}
	cli(t, w.env, "memory", "check").want(t, 0, "ok: ", "")

	// --drop deletes alice's waiting turn, and nothing of bob's.
	cli(t, w.env, "memory", "pending", "alice", "--drop").want(t, 0, "dropped 1 turn of alice that were not in memory yet\n", "")
	if journalTurns(t, w, "alice") != nil || len(journalTurns(t, w, "bob")) != 1 {
		t.Fatal("--drop dropped the wrong turns")
	}
	before := len(w.brain.transcripts())
	w.chat(t, "", "--user", "someone").want(t, 0, "", "")
	if len(w.brain.transcripts()) == before {
		t.Fatal("bob's retried turn was not reflected at the next start")
	}
	cli(t, w.env, "memory", "pending").want(t, 0, "nothing is waiting to be reflected into memory\n", "")
}

func TestPendingAge(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{{10 * time.Second, "just now"}, {5 * time.Minute, "5m ago"}, {3 * time.Hour, "3h ago"}, {47 * time.Hour, "47h ago"}, {72 * time.Hour, "3d ago"}} {
		if got := pendingAge(now.Add(-tc.ago), now); got != tc.want {
			t.Errorf("pendingAge(%v) = %q, want %q", tc.ago, got, tc.want)
		}
	}
	if pendingAge(time.Time{}, now) != "-" {
		t.Error("a turn without a time has an age")
	}
}
