package reflector

import (
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// channelTurn is a turn said in channel key.
func channelTurn(user, id, text, key string) Turn {
	t := turn(user, id, text)
	t.Channel, t.ChannelKey = true, key
	return t
}

// A DM's turns and a channel's are never shown to the model in one run,
// nor two channels': each run gets the scope of its turns, and the next
// scope's run follows at once. What each run was told of its scope is in
// its request.
func TestRunsNeverMixScopes(t *testing.T) {
	e := newEnv(t, nil)
	for range 4 {
		e.srv.Enqueue(openaitest.Text("nothing to remember"))
	}
	a, b := mnemo.ChannelKey("slack", "T1", "CA"), mnemo.ChannelKey("slack", "T1", "CB")
	e.add(turn("alice", "d1", "my cat is Tom (private)"))
	e.add(turn("alice", "d2", "and my dog is Rex (private)"))
	e.add(channelTurn("alice", "c1", "we ship on Friday", a))
	e.add(channelTurn("alice", "c2", "Bob owns the release", a))
	e.add(channelTurn("alice", "c3", "B's budget is 10k", b))
	e.add(turn("alice", "d3", "I'm tired (private)"))
	e.clock.Advance(2 * time.Minute)
	e.drain("the reflections")

	reqs := e.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4 (DM, channel A, channel B, DM)", len(reqs))
	}
	want := []struct {
		scope mnemo.Scope
		has   []string
		not   []string
		note  string
	}{
		{mnemo.Scope{User: "alice"}, []string{"my cat is Tom", "my dog is Rex"}, []string{"Friday", "budget", "tired"}, "This conversation was private"},
		{mnemo.Scope{User: "alice", Channel: a, Shared: true}, []string{"we ship on Friday", "Bob owns the release"}, []string{"private", "budget"}, "write to channel/ what belongs to the channel"},
		{mnemo.Scope{User: "alice", Channel: b, Shared: true}, []string{"B's budget is 10k"}, []string{"private", "Friday"}, "everyone in it read it"},
		{mnemo.Scope{User: "alice"}, []string{"I'm tired"}, []string{"Friday", "budget", "Tom"}, "This conversation was private"},
	}
	scopes := e.mem.Scopes()
	if len(scopes) != len(want) {
		t.Fatalf("Prepare scopes %+v", scopes)
	}
	for i, w := range want {
		if scopes[i] != w.scope {
			t.Errorf("run %d: scope %+v, want %+v", i+1, scopes[i], w.scope)
		}
		msg := reqs[i].LastUser()
		for _, s := range append(w.has, w.note) {
			if !strings.Contains(msg, s) {
				t.Errorf("run %d lacks %q:\n%s", i+1, s, msg)
			}
		}
		for _, s := range w.not {
			if strings.Contains(msg, s) {
				t.Errorf("run %d holds %q, from another scope:\n%s", i+1, s, msg)
			}
		}
	}
	if lines := e.journalLines("alice"); lines != nil {
		t.Errorf("journal not emptied: %q", lines)
	}
}

// A channel turn without a channel memory (no key) is still reflected as
// a channel's: shared files only, and told so.
func TestChannelTurnWithoutKey(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.add(channelTurn("alice", "c1", "hello all", ""))
	e.clock.Advance(2 * time.Minute)
	e.drain("the reflection")
	if s := e.mem.Scopes(); len(s) != 1 || s[0] != (mnemo.Scope{User: "alice", Shared: true}) {
		t.Errorf("scopes %+v", s)
	}
	msg := e.srv.Requests()[0].LastUser()
	if !strings.Contains(msg, "what you write to the user's files is shared with channels") || strings.Contains(msg, "channel/") {
		t.Errorf("request:\n%s", msg)
	}
}

// The journal keeps where a turn was said: after a restart a channel's
// turn is still reflected as the channel's, never as a DM's.
func TestJournalKeepsTheScope(t *testing.T) {
	e := newEnv(t, nil)
	key := mnemo.ChannelKey("discord", "42")
	e.add(channelTurn("alice", "c1", "the deploy key rotates monthly", key))
	e.endWindow()
	e.r.crash()
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.r = e.open()
	e.clock.Advance(2 * time.Minute)
	e.drain("the reflection after the restart")
	if s := e.mem.Scopes(); len(s) != 1 || s[0] != (mnemo.Scope{User: "alice", Channel: key, Shared: true}) {
		t.Errorf("scopes after the restart %+v", s)
	}
	// A line naming a channel outside the grammar is refused, not trusted.
	if _, err := parseLine([]byte(`{"user":"alice","userText":"x","time":"2026-01-01T00:00:00Z","channel":true,"channelKey":"#../bob"}`)); err == nil {
		t.Error("a journal line with a bad channel key was accepted")
	}
	if en, err := parseLine([]byte(`{"user":"alice","userText":"x","time":"2026-01-01T00:00:00Z","channel":true,"channelKey":"#slack-T1-C1"}`)); err != nil ||
		en.turn.Scope() != (mnemo.Scope{User: "alice", Channel: "#slack-T1-C1", Shared: true}) {
		t.Errorf("parseLine = %+v, %v", en, err)
	}
}
