package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

const novemberBefore = "# Episodes\n\n> Summary: work\n\n## Cache fix\n- Summary: cache → LRU\n- Date: 2026-11-02\n"

// openFaulty opens the app on w with a fault hook on the store's writes.
func (w *world) openFaulty(t *testing.T, faults durable.Hook) *App {
	t.Helper()
	a, err := Open(context.Background(), Options{Config: w.config(t, ""), Logger: w.log(), Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// isNovember reports whether a name the fault hook is given (in the
// user's folder) is the November episode file or its temp file.
func isNovember(name string) bool {
	return strings.HasPrefix(name, "episodes/") && strings.Contains(name, "2026-11.md")
}

// A person's save that lands while an Undo writes the file back wins: the
// Undo refuses, saying the file changed while undoing, and the save is
// kept as the person wrote it.
func TestUndoRefusedWhenEditedWhileUndoing(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "alice/episodes/2026-11.md", novemberBefore)
	file := filepath.Join(w.dir, "data", "memory", "alice", "episodes", "2026-11.md")
	var undoing, saved atomic.Bool
	edited := novemberBefore + "\n## Typed by hand\n- Summary: mine\n- Date: 2026-11-21\n"
	a := w.openFaulty(t, func(op, name string) error {
		if undoing.Load() && op == durable.Create && isNovember(name) && !saved.Swap(true) {
			return os.WriteFile(file, []byte(edited), 0o600) // the person's editor saves now
		}
		return nil
	})
	k := a.Keeper()
	got, err := k.Keep(context.Background(), keepMsg("alice", "", "my badge number is 42"))
	if err != nil {
		t.Fatal(err)
	}
	undoing.Store(true)
	paths, err := k.Undo("alice", got.Undo)
	if !errors.Is(err, platform.ErrChangedSince) || !strings.Contains(err.Error(), "episodes/2026-11.md changed while undoing") || len(paths) != 0 {
		t.Fatalf("Undo while the file is saved by hand: %v, %v", paths, err)
	}
	if got := w.file(t, "alice/episodes/2026-11.md"); got != edited {
		t.Errorf("the person's save was overwritten:\n%s", got)
	}
}

// A disk that fails while an Undo writes the file back: the Undo fails
// with the disk's error, and the file keeps the text the keeping left
// (no torn or half-undone file).
func TestUndoStoreFails(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "alice/episodes/2026-11.md", novemberBefore)
	var undoing atomic.Bool
	a := w.openFaulty(t, func(op, name string) error {
		if undoing.Load() && op == durable.Rename && isNovember(name) {
			return errors.New("input/output error")
		}
		return nil
	})
	k := a.Keeper()
	got, err := k.Keep(context.Background(), keepMsg("alice", "", "my badge number is 42"))
	if err != nil {
		t.Fatal(err)
	}
	kept := w.file(t, "alice/episodes/2026-11.md")
	undoing.Store(true)
	paths, err := k.Undo("alice", got.Undo)
	if err == nil || errors.Is(err, platform.ErrChangedSince) || !strings.Contains(err.Error(), "input/output error") || len(paths) != 0 {
		t.Fatalf("Undo on a failing disk: %v, %v", paths, err)
	}
	if w.file(t, "alice/episodes/2026-11.md") != kept {
		t.Error("a failed Undo changed the file")
	}
	entries, _ := os.ReadDir(filepath.Join(w.dir, "data", "memory", "alice", "episodes"))
	if len(entries) != 1 {
		t.Errorf("a temp file was left behind: %v", entries)
	}
	// Nothing was undone: once the disk is back, the same Undo works.
	undoing.Store(false)
	if paths, err := k.Undo("alice", got.Undo); err != nil || len(paths) != 1 {
		t.Fatalf("Undo again after the disk came back: %v, %v", paths, err)
	}
	if w.file(t, "alice/episodes/2026-11.md") != novemberBefore {
		t.Error("the Undo tried again did not put the file back")
	}
}

// A file the keeping made and the person deleted since is not brought
// back by an Undo: it refuses, naming the file.
func TestUndoAfterTheFileWasDeleted(t *testing.T) {
	w := newWorld(t)
	a := w.open(t, "")
	k := a.Keeper()
	got, err := k.Keep(context.Background(), keepMsg("alice", "", "see you at 5"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.dir, "data", "memory", "alice", "episodes", "2026-11.md")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Undo("alice", got.Undo); !errors.Is(err, platform.ErrChangedSince) || !strings.Contains(err.Error(), "episodes/2026-11.md was changed after it was kept") {
		t.Errorf("Undo of a deleted file: %v", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted file came back: %v", err)
	}
}

// A file that cannot be read any more (a folder stands in its place): the
// Undo fails with the store's error and changes nothing.
func TestUndoOfAFileThatCannotBeRead(t *testing.T) {
	w := newWorld(t)
	a := w.open(t, "")
	k := a.Keeper()
	got, err := k.Keep(context.Background(), keepMsg("alice", "", "see you at 5"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.dir, "data", "memory", "alice", "episodes", "2026-11.md")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(file, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = k.Undo("alice", got.Undo)
	if err == nil || errors.Is(err, platform.ErrChangedSince) {
		t.Errorf("Undo over a folder: %v", err)
	}
	if fi, err := os.Stat(file); err != nil || !fi.IsDir() {
		t.Errorf("the folder was changed: %v", err)
	}
}

// A Remember this whose model call fails (the server refuses the request):
// the person asked for it explicitly, so the message is written all the
// same, in their private episodes with its source, and can be undone; the
// failed call is counted under the reflector's role.
func TestKeepWhenTheModelFails(t *testing.T) {
	w := newWorld(t)
	w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Error(400, "invalid_request_error", "this model does not support tools"), true
	})
	a := w.open(t, "llm:\n  maxRetries: 0\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := a.Keeper().Keep(ctx, keepMsg("alice", "", "my badge number is 42"))
	if err != nil || len(got.Paths) != 1 || got.Paths[0] != "episodes/2026-11.md" || got.Undo == "" {
		t.Fatalf("Keep with a failing model = %+v, %v", got, err)
	}
	if text := w.file(t, "alice/episodes/2026-11.md"); !strings.Contains(text, "my badge number is 42") || !strings.Contains(text, "https://acme.slack.com/archives/C01/p1763") {
		t.Errorf("the episode file:\n%s", text)
	}
	if m := scrapeText(a.metrics); !strings.Contains(m, `mnemo_llm_requests_total{outcome="error",role="reflector"} 1`) {
		t.Errorf("the failed call is not counted:\n%s", m)
	}
	if _, err := a.Keeper().Undo("alice", got.Undo); err != nil {
		t.Errorf("Undo: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "alice", "episodes", "2026-11.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Undo left the file: %v", err)
	}
}

// Two changes of one file in one keeping (the model writes, then patches)
// are one file to undo, back to before the first; an Undo past its time
// is dropped when the next keeping is noted (the Undos kept are bounded).
func TestKeepTwoChangesOfOneFile(t *testing.T) {
	w := newWorld(t)
	// Each run: write the file, patch it, then say so (by the tool
	// results the run has so far).
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		tools := 0
		for _, m := range r.Chat.Messages {
			if m.Role == "tool" {
				tools++
			}
		}
		switch tools {
		case 0:
			return openaitest.ToolCalls(openaitest.Call("memory_write",
				`{"path":"facts/work.md","content":"# Work\n\n> Summary: desk\n\n- Desk: 3rd floor\n"}`)), true
		case 1:
			return openaitest.ToolCalls(openaitest.Call("memory_patch",
				`{"path":"facts/work.md","patches":[{"oldText":"3rd","newText":"4th"}]}`)), true
		}
		return openaitest.Text("saved"), true
	})
	a := w.open(t, "")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	k := a.Keeper()
	got, err := k.Keep(context.Background(), keepMsg("alice", "", "my desk is on the 4th floor"))
	if err != nil || len(got.Paths) != 1 || got.Paths[0] != "facts/work.md" {
		t.Fatalf("Keep = %+v, %v", got, err)
	}
	if text := w.file(t, "alice/facts/work.md"); !strings.Contains(text, "4th floor") {
		t.Fatalf("not patched:\n%s", text)
	}
	if paths, err := k.Undo("alice", got.Undo); err != nil || len(paths) != 1 {
		t.Fatalf("Undo = %v, %v", paths, err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "alice", "facts", "work.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Undo did not take the file the keeping made: %v", err)
	}
	if got, err = k.Keep(context.Background(), keepMsg("alice", "", "my desk is on the 4th floor")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(w.dir, "data", "memory", "alice", "facts", "work.md")) // by hand
	now = now.Add(UndoTTL + time.Minute)
	again, err := k.Keep(context.Background(), keepMsg("alice", "", "my desk is still on the 4th floor"))
	if err != nil {
		t.Fatal(err)
	}
	a.keeper.mu.Lock()
	_, old := a.keeper.undos[got.Undo]
	n := len(a.keeper.undos)
	a.keeper.mu.Unlock()
	if old || n != 1 {
		t.Errorf("after a keeping past the first one's time: %d Undos kept, the expired one still there: %v", n, old)
	}
	if _, err := k.Undo("alice", got.Undo); !errors.Is(err, platform.ErrUndoGone) {
		t.Errorf("the expired Undo: %v", err)
	}
	if text := w.file(t, "alice/facts/work.md"); !strings.Contains(text, "4th floor") {
		t.Fatalf("second keeping:\n%s", text)
	}
	if _, err := k.Undo("alice", again.Undo); err != nil {
		t.Errorf("Undo of the last keeping: %v", err)
	}
}

// A forget that fails half-way (the terminal chat's line history, its
// last holder, cannot be removed: a folder stands there): the control
// socket's caller gets the error naming it, not a success; the memory
// files before it are gone, and the same forget run again, once the folder
// is moved away, finishes and says there was no memory left.
func TestForgetFailsHalfWay(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/a.md", foodFact)
	a := w.open(t, "")
	lines := filepath.Join(a.cfg.State.Dir, "chat", "ann.history")
	if err := os.MkdirAll(filepath.Join(lines, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := a.Control(context.Background(), control.Request{Op: OpForget, User: "ann"})
	if err == nil || !strings.Contains(err.Error(), "the memory is deleted, but not the chat history "+lines) || !strings.Contains(err.Error(), "delete it by hand") {
		t.Fatalf("a forget that fails half-way: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "ann")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the memory folder is still there: %v", err)
	}
	if err := os.RemoveAll(lines); err != nil {
		t.Fatal(err)
	}
	if msg, err := a.Control(context.Background(), control.Request{Op: OpForget, User: "ann"}); err != nil || msg != "" {
		t.Errorf("the forget run again: %q, %v", msg, err)
	}
	if out, _ := a.Show("ann", ""); !strings.Contains(out, "don't remember anything") {
		t.Errorf("after the forget: %q", out)
	}
}
