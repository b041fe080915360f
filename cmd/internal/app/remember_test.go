package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

func keepMsg(user, author, text string) platform.KeepMessage {
	return platform.KeepMessage{User: user, Speaker: "Alice", Platform: "slack", Author: author, Own: author == "",
		Text: text, Time: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
		Origin: mnemo.Origin{Place: "#C01", Link: "https://acme.slack.com/archives/C01/p1763"}}
}

// The model writes nothing (it judges the message casual): the message is
// written all the same, in the person's private memory, with its source;
// Undo takes it out again, once, and only for that person.
func TestKeepWritesAndUndoes(t *testing.T) {
	w := newWorld(t)
	a := w.open(t, "")
	k := a.Keeper()
	got, err := k.Keep(context.Background(), keepMsg("alice", "Ana", "see you at 5"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Paths) != 1 || got.Paths[0] != "episodes/2026-11.md" || got.Undo == "" {
		t.Fatalf("Keep = %+v", got)
	}
	text := w.file(t, "alice/episodes/2026-11.md")
	for _, want := range []string{"Ana said: see you at 5", "https://acme.slack.com/archives/C01/p1763", "2026-11-20"} {
		if !strings.Contains(text, want) {
			t.Errorf("the episode file lacks %q:\n%s", want, text)
		}
	}
	if _, err := k.Undo("bob", got.Undo); !errors.Is(err, platform.ErrNotYours) {
		t.Errorf("bob's Undo: %v, want ErrNotYours", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "alice", "episodes", "2026-11.md")); err != nil {
		t.Fatalf("bob's Undo changed alice's memory: %v", err)
	}
	paths, err := k.Undo("alice", got.Undo)
	if err != nil || len(paths) != 1 {
		t.Fatalf("Undo = %v, %v", paths, err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "alice", "episodes", "2026-11.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file the keeping made is still there after Undo: %v", err)
	}
	if _, err := k.Undo("alice", got.Undo); !errors.Is(err, platform.ErrUndoGone) {
		t.Errorf("a second Undo: %v, want ErrUndoGone", err)
	}
}

// Undo of an append to an existing file brings back the text before; an
// Undo after a later change refuses and changes nothing.
func TestUndoRestoresOrRefuses(t *testing.T) {
	w := newWorld(t)
	before := "# Episodes\n\n> Summary: work\n\n## Cache fix\n- Summary: cache → LRU\n- Date: 2026-11-02\n"
	w.putMemory(t, "alice/episodes/2026-11.md", before)
	a := w.open(t, "")
	k := a.Keeper()
	first, err := k.Keep(context.Background(), keepMsg("alice", "", "my badge number is 42"))
	if err != nil || len(first.Paths) != 1 {
		t.Fatalf("Keep = %+v, %v", first, err)
	}
	if !strings.Contains(w.file(t, "alice/episodes/2026-11.md"), "my badge number is 42") {
		t.Fatal("not written")
	}
	if _, err := k.Undo("alice", first.Undo); err != nil {
		t.Fatal(err)
	}
	if got := w.file(t, "alice/episodes/2026-11.md"); got != before {
		t.Errorf("after Undo the file is\n%s\nwant\n%s", got, before)
	}
	second, err := k.Keep(context.Background(), keepMsg("alice", "", "lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Keep(context.Background(), keepMsg("alice", "", "and dinner at 8")); err != nil {
		t.Fatal(err)
	}
	later := w.file(t, "alice/episodes/2026-11.md")
	if _, err := k.Undo("alice", second.Undo); !errors.Is(err, platform.ErrChangedSince) {
		t.Errorf("Undo after a later write: %v, want ErrChangedSince", err)
	}
	if got := w.file(t, "alice/episodes/2026-11.md"); got != later {
		t.Errorf("a refused Undo changed the file")
	}
}

// A model that writes itself: the reflector adds nothing of its own, and
// the confirmation names the file the model wrote.
func TestKeepModelWrites(t *testing.T) {
	w := newWorld(t)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if len(r.Chat.Messages) > 2 {
			return openaitest.Text("saved"), true
		}
		return openaitest.ToolCalls(openaitest.Call("memory_write",
			`{"path":"facts/work.md","content":"# Work\n\n> Summary: desk\n\n- Desk: 4th floor\n"}`)), true
	})
	a := w.open(t, "")
	got, err := a.Keeper().Keep(context.Background(), keepMsg("alice", "", "my desk is on the 4th floor"))
	if err != nil || len(got.Paths) != 1 || got.Paths[0] != "facts/work.md" {
		t.Fatalf("Keep = %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "alice", "episodes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an episode was written besides the model's fact: %v", err)
	}
}

func TestKeepWaitsNoLongerThanItsContext(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		<-release
		return openaitest.Text("nothing to remember"), true
	})
	a := w.open(t, "")
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Keeper().Keep(ctx, keepMsg("alice", "", "x")); !errors.Is(err, platform.ErrStillWriting) {
		t.Errorf("Keep with an ended context: %v", err)
	}
	if _, err := a.Keeper().Undo("alice", "nope"); !errors.Is(err, platform.ErrUndoGone) {
		t.Errorf("an unknown Undo: %v", err)
	}
}

// A message without a time is kept with now; a keeping the reflector
// cannot write is an error (its turn stays journaled); a name no memory
// user can have is refused before anything is journaled.
func TestKeepFailures(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "alice/episodes/2026-11.md/x", "") // the month's file is a folder: the append fails
	a := w.open(t, "")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	m := keepMsg("alice", "", "x")
	m.Time = time.Time{}
	if _, err := a.Keeper().Keep(context.Background(), m); err == nil || !strings.Contains(err.Error(), "episodes/2026-11.md") {
		t.Errorf("Keep into a folder: %v", err)
	}
	if _, err := a.Keeper().Keep(context.Background(), keepMsg("../x", "", "x")); err == nil {
		t.Error("a bad user name was journaled")
	}
}

// An Undo expires after UndoTTL, and one whose earlier text the history
// no longer holds changes nothing.
func TestUndoExpiresAndNeedsTheHistory(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "alice/episodes/2026-11.md", "# Episodes\n\n> Summary: work\n\n## Fix\n- Summary: x\n- Date: 2026-11-02\n")
	a := w.open(t, "")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	k := a.Keeper()
	first, err := k.Keep(context.Background(), keepMsg("alice", "", "one"))
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(UndoTTL + time.Minute)
	if _, err := k.Undo("alice", first.Undo); !errors.Is(err, platform.ErrUndoGone) {
		t.Errorf("an expired Undo: %v", err)
	}
	second, err := k.Keep(context.Background(), keepMsg("alice", "", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(w.dir, "data", "state", "history", "alice")); err != nil {
		t.Fatal(err)
	}
	before := w.file(t, "alice/episodes/2026-11.md")
	if _, err := k.Undo("alice", second.Undo); err == nil || !strings.Contains(err.Error(), "no longer holds") {
		t.Errorf("Undo without the history: %v", err)
	}
	if w.file(t, "alice/episodes/2026-11.md") != before {
		t.Error("a failed Undo changed the file")
	}
}

// When the shutdown grace is over a wait for a keeping ends: the person
// is told it is still being written, and the turn stays journaled.
func TestKeepWaitEndsWithTheGrace(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		arrived <- struct{}{}
		<-release
		return openaitest.Text("nothing to remember"), true
	})
	a := w.open(t, "")
	t.Cleanup(func() { close(release) })
	done := make(chan error, 1)
	go func() {
		_, err := a.Keeper().Keep(context.Background(), keepMsg("alice", "", "x"))
		done <- err
	}()
	<-arrived
	a.CancelCalls(errors.New("the grace is over"))
	if err := <-done; !errors.Is(err, platform.ErrStillWriting) {
		t.Errorf("Keep after the grace: %v", err)
	}
	if _, err := a.Keeper().Keep(context.Background(), keepMsg("alice", "", "y")); !errors.Is(err, platform.ErrStillWriting) {
		t.Errorf("a Keep after the grace waited: %v", err)
	}
}
