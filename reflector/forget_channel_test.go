package reflector

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// Forgetting a channel detaches it from the turns waiting to be reflected
// (in the journal too): each person's words are still reflected, into
// their shared files, but never again into that channel's memory. Other
// channels and DMs keep theirs.
func TestForgetChannelDetachesQueuedTurns(t *testing.T) {
	e := newEnv(t, nil)
	a, b := mnemo.ChannelKey("slack", "T1", "CA"), mnemo.ChannelKey("slack", "T1", "CB")
	e.add(channelTurn("alice", "c1", "we ship Friday", a))
	e.add(channelTurn("alice", "c2", "B ships Monday", b))
	e.add(channelTurn("bob", "c3", "Friday it is", a))
	e.add(turn("bob", "d1", "private"))
	e.endWindow()
	n, err := e.r.ForgetChannel(context.Background(), a)
	if err != nil || n != 2 {
		t.Fatalf("ForgetChannel = %d, %v; want 2 turns", n, err)
	}
	for _, user := range []string{"alice", "bob"} {
		if j := strings.Join(e.journalLines(user), "\n"); strings.Contains(j, a) {
			t.Errorf("%s's journal still names %s:\n%s", user, a, j)
		}
	}
	if !strings.Contains(strings.Join(e.journalLines("alice"), "\n"), b) {
		t.Error("the other channel was detached too")
	}
	for range 4 {
		e.srv.Enqueue(openaitest.Text("nothing to remember"))
	}
	e.clock.Advance(2 * time.Minute)
	e.drain("the reflections")
	var got []mnemo.Scope
	for _, s := range e.mem.Scopes() {
		if s.Channel == a {
			t.Errorf("a run still reflects into the forgotten channel: %+v", s)
		}
		got = append(got, s)
	}
	want := map[mnemo.Scope]bool{
		{User: "alice", Shared: true}: true, {User: "alice", Channel: b, Shared: true}: true,
		{User: "bob", Shared: true}: true, {User: "bob"}: true,
	}
	if len(got) != 4 {
		t.Fatalf("scopes %+v", got)
	}
	for _, s := range got {
		if !want[s] {
			t.Errorf("unexpected scope %+v", s)
		}
	}
	// Nothing left to detach; a name that is not a channel's is refused.
	if n, err := e.r.ForgetChannel(context.Background(), a); n != 0 || err != nil {
		t.Errorf("second ForgetChannel = %d, %v", n, err)
	}
	if _, err := e.r.ForgetChannel(context.Background(), "alice"); err == nil {
		t.Error("ForgetChannel(alice): no error")
	}
}

// A run reflecting the channel is waited for (its writes are deleted by
// the forget that follows), and turns of the channel that came during it
// are detached; the run's own turns stay in the journal until it ends.
func TestForgetChannelWaitsForItsRun(t *testing.T) {
	e := newEnv(t, nil)
	key := mnemo.ChannelKey("discord", "42")
	arrived, release := e.gateModel("nothing to remember")
	e.add(channelTurn("alice", "c1", "one", key))
	e.clock.Advance(2 * time.Minute)
	<-arrived
	e.add(channelTurn("alice", "c2", "two", key))
	e.endWindow()
	done := make(chan int)
	go func() {
		n, err := e.r.ForgetChannel(context.Background(), key)
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	// The running run's turn is still journaled, with its channel; the
	// queued one is detached before the wait.
	e.waitFor("the queued turn detached", func() bool {
		j := e.journalLines("alice")
		return len(j) == 2 && strings.Contains(j[0], key) && !strings.Contains(j[1], key)
	})
	select {
	case n := <-done:
		t.Fatalf("ForgetChannel returned %d while the channel's run was still running", n)
	default:
	}
	close(release)
	if n := <-done; n != 1 {
		t.Errorf("detached %d turns, want 1", n)
	}
	e.clock.Advance(2 * time.Minute)
	e.drain("the detached turn's run")
	s := e.mem.Scopes()
	if len(s) != 2 || s[0].Channel != key || s[1] != (mnemo.Scope{User: "alice", Shared: true}) {
		t.Errorf("scopes %+v", s)
	}
	// A context that ends first: the forget says a reflection still runs.
	arrived, release = e.gateModel("nothing to remember")
	e.add(channelTurn("alice", "c3", "three", key))
	e.clock.Advance(2 * time.Minute)
	<-arrived
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.r.ForgetChannel(ctx, key); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("ForgetChannel(cancelled) = %v", err)
	}
	close(release)
	e.drain("the last run")
}

// Without a running reflector (mnemo memory forget '#…' offline, or after
// Close) the journal files are rewritten: the channel's key goes, a run
// journaled over a detached turn is dropped (it restarts afresh), other
// files are left alone byte for byte.
func TestForgetChannelJournaled(t *testing.T) {
	dir := t.TempDir()
	key := mnemo.ChannelKey("slack", "T1", "C1")
	if n, err := ForgetChannelJournaled(dir, key); n != 0 || err != nil {
		t.Errorf("no journal folder: %d, %v", n, err)
	}
	jdir := filepath.Join(dir, "reflector")
	must(t, os.MkdirAll(jdir, 0o700))
	alice := mustLine(t, channelTurn("alice", "c1", "we ship Friday", key), 1) +
		`{"kind":"run","run":"r1","turns":1}` + "\n" +
		mustLine(t, turn("alice", "d1", "private"), 0)
	other := mustLine(t, channelTurn("bob", "c2", "elsewhere", mnemo.ChannelKey("slack", "T1", "C2")), 0)
	must(t, os.WriteFile(filepath.Join(jdir, "alice.jsonl"), []byte(alice), 0o600))
	must(t, os.WriteFile(filepath.Join(jdir, "bob.jsonl"), []byte(other), 0o600))
	must(t, os.WriteFile(filepath.Join(jdir, "stray.txt"), []byte(key), 0o600))
	n, err := ForgetChannelJournaled(dir, key)
	if err != nil || n != 1 {
		t.Fatalf("ForgetChannelJournaled = %d, %v", n, err)
	}
	got, _ := os.ReadFile(filepath.Join(jdir, "alice.jsonl"))
	if strings.Contains(string(got), key) || strings.Contains(string(got), `"kind":"run"`) ||
		!strings.Contains(string(got), "we ship Friday") || !strings.Contains(string(got), "private") || !strings.Contains(string(got), `"attempts":1`) {
		t.Errorf("alice's journal after:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(jdir, "bob.jsonl")); string(b) != other {
		t.Errorf("bob's journal changed:\n%s", b)
	}
	if _, err := ForgetChannelJournaled(dir, "#"); err == nil {
		t.Error("a bad channel name: no error")
	}
	// A closed reflector detaches in its files the same way.
	e := newEnv(t, nil)
	e.add(channelTurn("alice", "c9", "late", key))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = e.r.Close(ctx)
	if n, err := e.r.ForgetChannel(context.Background(), key); err != nil || n != 1 {
		t.Errorf("ForgetChannel after Close = %d, %v", n, err)
	}
	if j := strings.Join(e.journalLines("alice"), "\n"); strings.Contains(j, key) || !strings.Contains(j, "late") {
		t.Errorf("journal after a closed forget:\n%s", j)
	}
}
