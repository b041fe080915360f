package reflector

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// A file forget keeps the person's pending turns and makes the file a
// tombstone for their reflection: a write to it (or to its shared twin)
// is refused with a tool error that says why, the rest is written. A turn
// added after the forget may write the file again. Before the fix a file
// forget dropped every pending turn of the person.
func TestForgetFileKeepsTurnsAndTombstonesTheFile(t *testing.T) {
	e := newEnv(t, nil)
	e.add(turn("alice", "t1", "I love sushi"))
	e.add(turn("alice", "t2", "I moved to Paris"))
	n, err := e.r.ForgetFile(context.Background(), "alice", "facts/food.md")
	if err != nil || n != 2 {
		t.Fatalf("ForgetFile = %d, %v; want 2 turns marked", n, err)
	}
	if e.r.Pending() != 2 {
		t.Fatalf("pending %d; the turns must stay", e.r.Pending())
	}
	if lines := e.journalLines("alice"); len(lines) != 2 || !strings.Contains(lines[0], `"forgotten":["facts/food.md"]`) {
		t.Fatalf("journal %q", lines)
	}
	e.srv.Enqueue(
		openaitest.ToolCalls(
			openaitest.Call("memory_write", `{"path":"facts/food.md","content":"sushi"}`),
			openaitest.Call("memory_write", `{"path":"facts/food.shared.md","content":"sushi"}`),
			openaitest.Call("memory_patch", `{"path":"facts/food.md","patches":[]}`),
			openaitest.Call("memory_write", `{"path":"facts/home.md","content":"Paris"}`)),
		openaitest.Text("saved"))
	e.clock.Advance(time.Hour)
	e.drain("the reflection of the older turns")
	if v := e.mem.version("alice", "facts/food.md"); v != "" {
		t.Errorf("the forgotten file was written again: %q", v)
	}
	if v := e.mem.version("alice", "facts/food.shared.md"); v != "" {
		t.Errorf("its shared twin was written: %q", v)
	}
	if v := e.mem.version("alice", "facts/home.md"); v == "" {
		t.Error("the rest of the turns was not reflected")
	}
	reqs := e.srv.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(toolResults(last), "facts/food.md was forgotten at the person's request") {
		t.Errorf("the model was not told why: %q", toolResults(last))
	}

	// A later turn may write it.
	e.add(turn("alice", "t3", "I now love ramen"))
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_write", `{"path":"facts/food.md","content":"ramen"}`)), openaitest.Text("saved"))
	e.clock.Advance(time.Hour)
	e.drain("the reflection of the later turn")
	if v := e.mem.version("alice", "facts/food.md"); v == "" {
		t.Error("a turn after the forget could not write the file")
	}
}

// toolResults joins the tool messages of a request.
func toolResults(r openaitest.Request) string {
	var b strings.Builder
	for _, m := range r.Chat.Messages {
		if m.Role == "tool" {
			b.WriteString(m.Content + "\n")
		}
	}
	return b.String()
}

// Offline (no reflector runs), the journal's turns are marked the same
// way; a run journaled over them restarts afresh.
func TestForgetFileJournaled(t *testing.T) {
	e := newEnv(t, nil)
	dir := e.dir
	e.add(turn("alice", "t1", "I love sushi"))
	e.endWindow()
	e.r.crash()
	n, err := ForgetFileJournaled(dir, "alice", "facts/food.md")
	if err != nil || n != 1 {
		t.Fatalf("ForgetFileJournaled = %d, %v", n, err)
	}
	if lines := e.journalLines("alice"); len(lines) != 1 || !strings.Contains(lines[0], `"forgotten":["facts/food.md"]`) {
		t.Fatalf("journal %q", lines)
	}
	// Twice is once.
	if n, err := ForgetFileJournaled(dir, "alice", "facts/food.md"); err != nil || n != 1 {
		t.Fatalf("again = %d, %v", n, err)
	}
	if lines := e.journalLines("alice"); strings.Count(lines[0], "facts/food.md") != 1 {
		t.Errorf("journal %q", lines)
	}
	if n, err := ForgetFileJournaled(dir, "bob", "facts/food.md"); err != nil || n != 0 {
		t.Errorf("no journal = %d, %v", n, err)
	}
	if _, err := ForgetFileJournaled(dir, "../x", "facts/food.md"); err == nil {
		t.Error("a bad user name was accepted")
	}
	if n, err := e.r.ForgetFile(context.Background(), "nobody", "facts/food.md"); n != 0 || err != nil {
		t.Errorf("ForgetFile of a user with nothing pending = %d, %v", n, err)
	}
}

// A file forget while a reflection of the person runs waits for it to end
// (bounded by ctx: a cancelled ctx says the run is still going), then
// marks its turns too: the run, failing, leaves them marked in the journal.
func TestForgetFileDuringARun(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.mem.block = make(chan struct{})
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_write", `{"path":"facts/user.md","content":"x"}`)),
		openaitest.Error(400, "invalid_request_error", "bad request"))
	e.add(turn("alice", "t1", "I love sushi"))
	e.waitFor("the write to start", func() bool { return len(e.mem.Calls()) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := e.r.ForgetFile(ctx, "alice", "facts/food.md"); n != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("ForgetFile with the run going = %d, %v", n, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.r.ForgetFile(context.Background(), "alice", "facts/drink.md")
		done <- err
	}()
	// Whether that forget comes before the run's end or after, the turn
	// ends up marked with both files.
	close(e.mem.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if lines := e.journalLines("alice"); len(lines) == 0 || !strings.Contains(lines[0], `"forgotten":["facts/food.md","facts/drink.md"]`) {
		t.Errorf("journal %q", lines)
	}
	if _, err := e.r.ForgetFile(context.Background(), "../x", "facts/food.md"); err == nil {
		t.Error("a bad user name was accepted")
	}
}

// A journal that cannot be rewritten fails the forget, naming it; one
// that cannot be read (offline) too; a journal without turns is left.
func TestForgetFileErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.add(turn("alice", "t1", "I love sushi"))
	e.endWindow()
	e.failOp(durable.Rename, errors.New("disk on fire"))
	if _, err := e.r.ForgetFile(context.Background(), "alice", "facts/food.md"); err == nil || !strings.Contains(err.Error(), "forget facts/food.md in the journaled turns of alice") {
		t.Errorf("a failed rewrite = %v", err)
	}
	e.failOp("", nil)
	if n, err := e.r.ForgetFile(context.Background(), "nobody", "facts/food.md"); n != 0 || err != nil {
		t.Errorf("ForgetFile of a user with nothing pending = %d, %v", n, err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "reflector", "carol.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ForgetFileJournaled(dir, "carol", "facts/food.md"); err == nil {
		t.Error("an unreadable journal was taken as empty")
	}
	if err := os.WriteFile(filepath.Join(dir, "reflector", "dave.jsonl"), []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := ForgetFileJournaled(dir, "dave", "facts/food.md"); n != 0 || err != nil {
		t.Errorf("a journal without turns = %d, %v", n, err)
	}
}
