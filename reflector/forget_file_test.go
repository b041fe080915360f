package reflector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
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
