package reflector

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// told records what OnExplicit was told.
type told struct {
	mu    sync.Mutex
	turns []Turn
	chs   [][]Commit
	errs  []error
}

func (k *told) record(t Turn, c []Commit, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.turns, k.chs, k.errs = append(k.turns, t), append(k.chs, c), append(k.errs, err)
}

func (k *told) n() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.turns)
}

// keep is alice's request to keep a message written by author (her own
// when author is "").
func keep(id, author, text string) Turn {
	return Turn{TaskID: id, User: "alice", Platform: "slack", Speaker: "Alice", Explicit: true,
		Time:    time.Date(2026, 2, 20, 9, 30, 0, 0, time.UTC),
		Context: []ContextMessage{{Author: author, Text: text, FromSpeaker: author == ""}},
		Origin:  mnemo.Origin{Place: "#C01", Link: "https://acme.slack.com/archives/C01/p1"},
		// Chosen in a channel: kept in private memory all the same.
		Channel: true, ChannelKey: "#slack-T1-C01"}
}

func TestExplicitTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		author  string
		replies []openaitest.Reply
		// wantArgs are in the append the reflector made itself ("" when the
		// model wrote).
		wantArgs []string
		wantLine string // in the request: how the message is attributed
	}{
		{name: "casual text the model would skip is written anyway", replies: []openaitest.Reply{openaitest.Text("nothing to remember")},
			wantArgs: []string{`"path":"episodes/2026-02.md"`, `## Kept: lol ok see you at 5`, `- Date: 2026-02-20`, `kept on request: lol ok see you at 5`},
			wantLine: `USER ("Alice") wrote this message and asked you to remember it`},
		{name: "someone else's message is kept as X said", author: "Ana", replies: []openaitest.Reply{openaitest.Text("nothing")},
			wantArgs: []string{`- Ana said: lol ok see you at 5`, `- Summary: Ana said: lol ok see you at 5`},
			wantLine: `OTHER PERSON "Ana" (not the user) wrote this message; USER ("Alice") asked you to remember it`},
		{name: "a model that cannot be reached: kept as it is", replies: []openaitest.Reply{openaitest.Error(500, "server_error", "down")},
			wantArgs: []string{`## Kept: lol ok see you at 5`}, wantLine: "USER"},
		{name: "the model writes: nothing more", replies: []openaitest.Reply{
			openaitest.ToolCalls(openaitest.Call("memory_append", `{"path":"episodes/2026-02.md","entry":"## Plans\n- Summary: 5pm\n- Date: 2026-02-20"}`)),
			openaitest.Text("saved")}, wantLine: "USER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k told
			e := newEnv(t, func(c *Config) { c.OnExplicit = k.record })
			e.srv.Enqueue(tc.replies...)
			e.add(keep("k1", tc.author, "lol ok see you at 5"))
			e.waitFor("the explicit run", func() bool { return k.n() == 1 })
			if k.errs[0] != nil {
				t.Fatalf("OnExplicit told %v", k.errs[0])
			}
			calls := e.mem.Calls()
			if len(calls) != 1 || calls[0].Name != "memory_append" {
				t.Fatalf("tool calls %+v, want one append", calls)
			}
			for _, want := range tc.wantArgs {
				var a struct{ Path, Entry string }
				_ = json.Unmarshal([]byte(calls[0].Args), &a)
				if !strings.Contains(calls[0].Args, want) && !strings.Contains(a.Entry, want) {
					t.Errorf("the append %s lacks %q", calls[0].Args, want)
				}
			}
			if len(k.chs[0]) != 1 || k.chs[0][0].Path != "episodes/2026-02.md" {
				t.Errorf("OnExplicit told the changes %+v", k.chs[0])
			}
			if sc := e.mem.Scopes(); len(sc) != 1 || sc[0] != (mnemo.Scope{User: "alice"}) {
				t.Errorf("reflected with the scopes %+v, want alice's private memory only", sc)
			}
			reqs := e.srv.Requests()
			if !strings.Contains(reqs[0].System(), "asked you to remember it") && !strings.Contains(reqs[0].System(), "Remember this") {
				t.Errorf("the system prompt lacks the explicit variant")
			}
			if !strings.Contains(reqs[0].LastUser(), tc.wantLine) || !strings.Contains(reqs[0].LastUser(), "lol ok see you at 5") {
				t.Errorf("the request lacks %q:\n%s", tc.wantLine, reqs[0].LastUser())
			}
		})
	}
}

// An explicit turn is reflected at once, in a run of its own: turns of
// the talk before it are reflected first, without it.
func TestExplicitTurnRunsAtOnceAlone(t *testing.T) {
	var k told
	e := newEnv(t, func(c *Config) { c.OnExplicit = k.record })
	e.srv.Enqueue(openaitest.Text("nothing to remember"), openaitest.Text("nothing to remember"))
	e.add(turn("alice", "t1", "hi"))
	e.add(keep("k1", "", "the wifi password is on the fridge"))
	e.waitFor("both runs", func() bool { return k.n() == 1 && len(e.srv.Requests()) == 2 })
	reqs := e.srv.Requests()
	if strings.Contains(reqs[0].LastUser(), "wifi") || !strings.Contains(reqs[0].LastUser(), "hi") {
		t.Errorf("the first run mixed the explicit turn in:\n%s", reqs[0].LastUser())
	}
	if strings.Contains(reqs[1].LastUser(), "Turn 1 of") || !strings.Contains(reqs[1].LastUser(), "wifi") {
		t.Errorf("the second run is not the explicit turn's alone:\n%s", reqs[1].LastUser())
	}
	if e.r.Pending() != 0 {
		t.Errorf("Pending = %d after both runs", e.r.Pending())
	}
}

// A write that fails on disk is a failed run: OnExplicit hears why, and
// the turn stays journaled for a retry.
func TestExplicitTurnStorageFailure(t *testing.T) {
	var k told
	e := newEnv(t, func(c *Config) { c.OnExplicit = k.record })
	e.mem.mu.Lock()
	e.mem.toolErr = mnemo.ErrStorage
	e.mem.mu.Unlock()
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.add(keep("k1", "", "keep me"))
	e.waitFor("the failed run", func() bool { return k.n() == 1 })
	if !errors.Is(k.errs[0], mnemo.ErrStorage) {
		t.Errorf("OnExplicit told %v, want the storage failure", k.errs[0])
	}
	if e.r.Pending() != 1 {
		t.Errorf("Pending = %d, want the turn kept for a retry", e.r.Pending())
	}
}

func TestExplicitTurnJournalRoundTrip(t *testing.T) {
	e, err := parseLine([]byte(`{"user":"alice","userText":"","time":"2026-02-20T09:30:00Z","explicit":true}`))
	if err != nil || !e.turn.Explicit {
		t.Fatalf("parseLine: %+v, %v", e, err)
	}
	line, err := encodeLine(entry{turn: private(keep("k1", "Ana", "x"))})
	if err != nil || !strings.Contains(string(line), `"explicit":true`) || strings.Contains(string(line), "channelKey") {
		t.Fatalf("encodeLine: %s, %v", line, err)
	}
	if _, err := parseLine([]byte(`{"user":"alice","userText":"","time":"2026-02-20T09:30:00Z","explicit":true,"channel":true}`)); err == nil {
		t.Error("an explicit turn said to be a channel's was read")
	}
}

func TestKeptEntryBounds(t *testing.T) {
	long := keep("k", "", strings.Repeat("word ", 1000))
	entry := keptEntry(long)
	if len(entry) > keptTextLimit+300 || !strings.Contains(entry, "…") {
		t.Errorf("a long message's entry is %d bytes", len(entry))
	}
	empty := keptEntry(keep("k", "", "  "))
	if !strings.Contains(empty, "## Kept: (an empty message)") {
		t.Errorf("an empty message's entry: %q", empty)
	}
	if m := keptMessage(Turn{UserText: "mine", Explicit: true}); !m.FromSpeaker || m.Text != "mine" {
		t.Errorf("keptMessage without context: %+v", m)
	}
}

// FuzzKeptEntry: whatever the message, the entry the reflector writes is
// one episode entry: a "## Kept:" title, a summary, the date and one line.
func FuzzKeptEntry(f *testing.F) {
	for _, s := range []string{"see you at 5", "", "## Title\n- Summary: x", strings.Repeat("é", 2000), "a\r\nb\u2028c"} {
		f.Add(s, "Ana")
	}
	f.Fuzz(func(t *testing.T, text, author string) {
		e := keptEntry(keep("k", author, text))
		lines := strings.Split(strings.TrimSuffix(e, "\n"), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "## Kept: ") || !strings.HasPrefix(lines[1], "- Summary: ") ||
			lines[2] != "- Date: 2026-02-20" || !strings.HasPrefix(lines[3], "- ") {
			t.Errorf("entry %q", e)
		}
	})
}

// told tells OnExplicit each outcome, only for an explicit turn's run of
// its own; keepItself needs memory_append; an author without a name is
// "someone".
func TestToldAndKeepItself(t *testing.T) {
	var k told
	r := &Reflector{cfg: Config{OnExplicit: k.record}}
	explicit := []entry{{turn: keep("k1", "", "x")}}
	r.told([]entry{{turn: turn("alice", "t1", "hi")}}, newRunLog(1), "ok", nil)
	r.told(explicit, newRunLog(1), "forgotten", nil)
	r.told(explicit, newRunLog(1), "canceled", context.Canceled)
	if k.n() != 2 || !errors.Is(k.errs[0], errForgotten) || !errors.Is(k.errs[1], context.Canceled) {
		t.Errorf("told %v", k.errs)
	}
	if err := keepItself(context.Background(), nil, keep("k1", "", "x")); err == nil {
		t.Error("kept without a memory_append tool")
	}
	if e := keptEntry(keep("k1", "", "x")); !strings.Contains(e, "kept on request") {
		t.Errorf("own entry %q", e)
	}
	anon := Turn{Explicit: true, Time: time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC), Context: []ContextMessage{{Text: "hi"}}}
	if e := keptEntry(anon); !strings.Contains(e, "- someone said: hi") {
		t.Errorf("anonymous entry %q", e)
	}
}
