package reflector

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

const appendArgs = `{"path":"episodes/2026-03.md","entry":"## Met Ada\n- Summary: met\n- Date: 2026-03-05\n"}`

func (e *env) callsNamed(name string) int {
	n := 0
	for _, c := range e.mem.Calls() {
		if c.Name == name {
			n++
		}
	}
	return n
}

// TestCrashMidRunResumesWithoutRedoing: a run that made a change and was
// cut short before its end is resumed at the next start: the recorded
// reply is replayed instead of asking the model again, and the change is
// not made a second time.
func TestCrashMidRunResumesWithoutRedoing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_append", appendArgs)))
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	e.srv.Handle(func(req openaitest.Request) (openaitest.Reply, bool) {
		if req.Seq == 1 {
			return openaitest.Reply{}, false // the queued tool call
		}
		arrived <- struct{}{}
		<-release
		return openaitest.Text("never seen"), true
	})
	e.add(turn("alice", "t1", "I'm Ada"))
	<-arrived // the append is made and journaled; the model is asked again
	e.r.crash()
	lines := strings.Join(e.journalLines("alice"), "\n")
	for _, want := range []string{`"kind":"run"`, `"kind":"step"`, `"kind":"intent"`, `"kind":"done"`} {
		if !strings.Contains(lines, want) {
			t.Fatalf("journal lacks %s:\n%s", want, lines)
		}
	}

	srv2 := openaitest.New(t)
	srv2.Enqueue(openaitest.Text("Saved the meeting."))
	e.cfg.Model = openai.New(openai.Config{BaseURL: srv2.URL(), APIKey: "k", MaxRetries: -1})
	e.r = e.open() // a resumed run starts at once, without waiting for Idle
	e.drain("the resumed run")
	if n := e.callsNamed("memory_append"); n != 1 {
		t.Fatalf("the append was made %d times, want once", n)
	}
	reqs := srv2.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the resumed run asked the model %d times, want once (the first reply is replayed)", len(reqs))
	}
	msgs := reqs[0].Chat.Messages
	if len(msgs) != 4 || len(msgs[2].ToolCalls) != 1 || msgs[2].ToolCalls[0].Function.Name != "memory_append" ||
		msgs[3].Role != "tool" || msgs[3].Content != `{"success":true}` {
		t.Fatalf("the resumed request does not continue the run: %+v", msgs)
	}
	if e.journalLines("alice") != nil {
		t.Fatalf("journal left: %q", e.journalLines("alice"))
	}
	if !strings.Contains(e.logs.String(), "resumed_calls=1") {
		t.Errorf("logs:\n%s", e.logs.String())
	}
}

// stepLine is a step record as journals written with go-openai's message
// type hold it (its field layout, and fields such as refusal that the
// journal no longer writes): such journals must resume.
func stepLine(t *testing.T) string {
	args, err := json.Marshal(appendArgs)
	must(t, err)
	return `{"kind":"step","run":"r1","step":1,"message":{"role":"assistant","refusal":"","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"memory_append","arguments":` +
		string(args) + `}}]}}` + "\n"
}

// journalRun writes alice's journal: one turn and a run over it whose one
// recorded reply calls append, with an intent to make version after.
func (e *env) journalRun(after string, done bool) {
	e.t.Helper()
	recs := []record{
		{Kind: kindIntent, Run: "r1", Call: 1, Path: "episodes/2026-03.md", After: after},
	}
	if done {
		recs = append(recs, record{Kind: kindDone, Run: "r1", Call: 1, Result: `{"success":true,"recorded":1}`})
	}
	var b strings.Builder
	b.WriteString(mustLine(e.t, turn("alice", "t1", "I'm Ada"), 0))
	b.WriteString(`{"kind":"run","run":"r1","turns":1}` + "\n")
	b.WriteString(stepLine(e.t))
	for _, r := range recs {
		line, err := json.Marshal(r)
		must(e.t, err)
		b.Write(append(line, '\n'))
	}
	e.writeJournal("alice.jsonl", b.String())
}

// TestResumeDecidesInDoubtCallsByVersion: a call journaled as intended but
// not as done is made again only when the file is not already at the
// version it was making; a done call is answered from the journal.
func TestResumeDecidesInDoubtCallsByVersion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		current   string // the file's version at restart
		done      bool
		wantCalls int
		wantTool  string
	}{
		{"made before the crash", "v-after", false, 0, `{"success":true}`},
		{"not made", "v-before", false, 1, `{"success":true}`},
		{"done", "v-after", true, 0, `{"success":true,"recorded":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
			e.r.crash()
			e.mem.versions["alice/episodes/2026-03.md"] = tc.current
			e.journalRun("v-after", tc.done)
			e.srv.Enqueue(openaitest.Text("saved"))
			e.r = e.open()
			e.drain("the resumed run")
			if n := e.callsNamed("memory_append"); n != tc.wantCalls {
				t.Fatalf("append made %d times, want %d", n, tc.wantCalls)
			}
			reqs := e.srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model calls, want 1", len(reqs))
			}
			if got := reqs[0].Chat.Messages[3].Content; got != tc.wantTool {
				t.Errorf("tool result given to the model = %q, want %q", got, tc.wantTool)
			}
			if want := fmt.Sprintf("resumed_calls=%d", 1-tc.wantCalls); !strings.Contains(e.logs.String(), want) {
				t.Errorf("logs lack %s:\n%s", want, e.logs.String())
			}
		})
	}
}

// TestBadRunRecordsAreDropped: records that do not describe one run over
// journaled turns are dropped with a warning and the turns reflected afresh.
func TestBadRunRecordsAreDropped(t *testing.T) {
	msg := toStep(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "memory_list"}}})
	line := func(r record) string {
		b, _ := json.Marshal(r)
		return string(b) + "\n"
	}
	for _, tc := range []struct {
		name, recs, warn string
	}{
		{"no run line", line(record{Kind: kindStep, Run: "r", Step: 1, Message: msg}), "without their run line"},
		{"too many turns", line(record{Kind: kindRun, Run: "r", Turns: 2}), "covers 2 turns but 1 are journaled"},
		{"two runs", line(record{Kind: kindRun, Run: "r", Turns: 1}) + line(record{Kind: kindRun, Run: "s", Turns: 1}), "records of two runs"},
		{"step gap", line(record{Kind: kindRun, Run: "r", Turns: 1}) + line(record{Kind: kindStep, Run: "r", Step: 2, Message: msg}), "step 2 recorded after step 0"},
		{"unknown kind", `{"kind":"zap","run":"r"}` + "\n", "unknown record kind"},
		{"no run id", `{"kind":"run","turns":1}` + "\n", "no run id"},
		{"run without turns", `{"kind":"run","run":"r"}` + "\n", "no turns"},
		{"step without calls", `{"kind":"step","run":"r","step":1,"message":{"role":"assistant"}}` + "\n", "no step number or tool calls"},
		{"intent without call", `{"kind":"intent","run":"r","path":"p"}` + "\n", "no call number"},
		{"intent without path", `{"kind":"intent","run":"r","call":1}` + "\n", "no path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.r.crash()
			e.writeJournal("alice.jsonl", mustLine(t, turn("alice", "t1", "hi"), 0)+tc.recs)
			e.r = e.open()
			if !strings.Contains(e.logs.String(), tc.warn) {
				t.Fatalf("no warning %q:\n%s", tc.warn, e.logs.String())
			}
			lines := e.journalLines("alice")
			if len(lines) != 1 || strings.Contains(lines[0], `"kind"`) {
				t.Fatalf("journal not cleaned: %q", lines)
			}
			if e.r.Pending() != 1 {
				t.Fatalf("Pending = %d", e.r.Pending())
			}
		})
	}
}

// TestStorageFailureFailsTheRun: a write that meets a disk failure is told
// to the model, but the run counts as failed: the turn stays journaled and
// the run is resumed later, where the write is made once the disk is back.
func TestStorageFailureFailsTheRun(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.mem.toolErr = fmt.Errorf("%w: rename into episodes/2026-03.md: %w", mnemo.ErrStorage, syscall.ENOSPC)
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_append", appendArgs)), openaitest.Text("Saved."))
	e.add(turn("alice", "t1", "I'm Ada"))
	e.waitFor("the failure", func() bool { return strings.Contains(e.logs.String(), "will retry") })
	e.settle()
	logs := e.logs.String()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "a memory write failed") ||
		!strings.Contains(logs, "episodes/2026-03.md") || !strings.Contains(logs, "no space left on device") {
		t.Fatalf("the failure does not name the file and the cause:\n%s", logs)
	}
	if e.r.Pending() != 1 {
		t.Fatalf("Pending = %d, want the turn kept", e.r.Pending())
	}
	if msg := e.srv.Requests()[1].Chat.Messages[3].Content; !strings.Contains(msg, "no space left") {
		t.Errorf("the model was not told: %q", msg)
	}
	e.mem.mu.Lock()
	e.mem.toolErr = nil
	e.mem.mu.Unlock()
	e.srv.Enqueue(openaitest.Text("Saved now."))
	e.clock.Advance(2 * time.Minute)
	e.drain("the retry")
	if n := e.callsNamed("memory_append"); n != 2 {
		t.Fatalf("append tried %d times, want 2 (failed, then made)", n)
	}
	if v := e.mem.version("alice", "episodes/2026-03.md"); v == "" {
		t.Fatal("the write was not made on the retry")
	}
	if n := len(e.srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3 (the first reply replayed on the retry)", n)
	}
}

// TestJournalFailureStopsTheRunBeforeItsTools: when a reply cannot be
// journaled, its tools do not run and the run fails.
func TestJournalFailureStopsTheRunBeforeItsTools(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.add(turn("alice", "t1", "I'm Ada"))
	e.r.crash()
	e.r = e.open()
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_append", appendArgs)))
	e.failOp(durable.Fsync, syscall.EIO)
	e.clock.Advance(2 * time.Minute)
	e.waitFor("the failure", func() bool { return strings.Contains(e.logs.String(), "will retry") })
	e.settle()
	if n := e.callsNamed("memory_append"); n != 0 {
		t.Fatalf("a tool ran though its reply was not journaled (%d calls)", n)
	}
	if !strings.Contains(e.logs.String(), "input/output error") {
		t.Errorf("logs:\n%s", e.logs.String())
	}
}

// TestCommitJournalFailureAbortsTheWrite: when the intent cannot be
// journaled, the store is told to abort the change.
func TestCommitJournalFailureAbortsTheWrite(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_append", appendArgs)), openaitest.Text("done"))
	var n int
	e.faultMu.Lock()
	e.fault = func(op, _ string) error {
		if op == durable.Fsync {
			n++
			if n == 3 { // the run line (with the turn), the step, then the intent
				return syscall.ENOSPC
			}
		}
		return nil
	}
	e.faultMu.Unlock()
	e.add(turn("alice", "t1", "I'm Ada"))
	e.waitFor("the failure", func() bool { return strings.Contains(e.logs.String(), "will retry") })
	e.settle()
	if v := e.mem.version("alice", "episodes/2026-03.md"); v != "" {
		t.Fatalf("the change was made without its intent journaled: %q", v)
	}
	if !strings.Contains(e.logs.String(), "could not journal the change first") {
		t.Errorf("logs:\n%s", e.logs.String())
	}
}

// TestContextLengthSplitsTheBatch: turns too long together are reflected
// in halves; a turn too long alone is cut with a note and reflected.
func TestContextLengthSplitsTheBatch(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 3 })
	huge := strings.Repeat("HUGE ", 2000)
	e.srv.Handle(func(req openaitest.Request) (openaitest.Reply, bool) {
		msg := req.LastUser()
		if strings.Count(msg, "## Turn ") > 1 || (strings.Contains(msg, "HUGE") && !strings.Contains(msg, "[mnemo: cut here")) {
			return openaitest.Error(400, "context_length_exceeded", "too long"), true
		}
		return openaitest.Text("nothing to remember"), true
	})
	e.add(turn("alice", "t1", "one"))
	e.add(turn("alice", "t2", "two"))
	e.add(turn("alice", "t3", huge))
	e.drain("the reflections")
	var ok []string
	for _, req := range e.srv.Requests() {
		msg := req.LastUser()
		if strings.Count(msg, "## Turn ") == 1 && (!strings.Contains(msg, "HUGE") || strings.Contains(msg, "[mnemo: cut here")) {
			ok = append(ok, msg)
		}
	}
	if len(ok) != 3 {
		t.Fatalf("%d turns reflected alone, want 3", len(ok))
	}
	if !strings.Contains(ok[2], "the message was 10000 bytes") {
		t.Errorf("the cut turn carries no note: %.300s", ok[2])
	}
	for _, want := range []string{"reflecting them in parts", "reflecting it cut down"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("logs lack %q", want)
		}
	}
	if strings.Contains(e.logs.String(), "will retry") {
		t.Error("a split counted as a failure")
	}
}

// TestCutTurnThatStillFailsGivesUp: a cut turn that still does not fit
// fails like any run, and after MaxAttempts moves to the failed folder,
// which FailedTurns lists.
func TestCutTurnThatStillFailsGivesUp(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Error(400, "context_length_exceeded", "too long"), true
	})
	tr := turn("alice", "t1", strings.Repeat("x", 5000))
	tr.Context = []ContextMessage{{Author: "a", Text: "1"}, {Author: "b", Text: "2"}, {Author: "c", Text: "3"}, {Author: "d", Text: strings.Repeat("y", 5000)}}
	e.add(tr)
	e.failUntilGiveUp()
	files, err := FailedTurns(e.dir)
	if err != nil || len(files) != 1 || files[0].User != "alice" {
		t.Fatalf("FailedTurns = %v, %v", files, err)
	}
	data, err := os.ReadFile(files[0].Path)
	must(t, err)
	if !strings.Contains(string(data), `"cut":true`) || !strings.Contains(string(data), `"kind":"failed"`) ||
		!strings.Contains(string(data), "context window") || strings.Contains(string(data), `"author":"a"`) {
		t.Fatalf("failed file:\n%s", data)
	}
	if e.journalLines("alice") != nil {
		t.Fatalf("journal left: %q", e.journalLines("alice"))
	}
}

// TestGiveUpOnAResumedRunMovesItsRecords: a run that journaled changes and
// keeps failing moves with its records, all of its turns together.
func TestGiveUpOnAResumedRunMovesItsRecords(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.r.crash()
	e.mem.versions["alice/episodes/2026-03.md"] = "v-after"
	e.journalRun("v-after", true)
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Error(400, "", "broken"), true })
	e.r = e.open()
	e.failUntilGiveUp()
	files, _ := FailedTurns(e.dir)
	if len(files) != 1 {
		t.Fatalf("failed files: %v", files)
	}
	data, _ := os.ReadFile(files[0].Path)
	for _, want := range []string{`"taskId":"t1"`, `"kind":"run"`, `"kind":"done"`, "broken"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("failed file lacks %s:\n%s", want, data)
		}
	}
	if n := e.callsNamed("memory_append"); n != 0 {
		t.Errorf("the done append was made again %d times", n)
	}
}

func TestFailedTurnsWithoutFolder(t *testing.T) {
	files, err := FailedTurns(t.TempDir())
	if err != nil || files != nil {
		t.Fatalf("FailedTurns = %v, %v", files, err)
	}
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "reflector"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "reflector", "failed"), nil, 0o600))
	if _, err := FailedTurns(dir); err == nil {
		t.Fatal("a failed folder that is a file gave no error")
	}
}

// TestMoveFailedFaults: when the failed folder cannot be written, the turns
// stay journaled and are retried.
func TestMoveFailedFaults(t *testing.T) {
	for _, op := range []string{durable.Create, durable.Rename, durable.FsyncDir} {
		t.Run(op, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
			e.r.crash()
			e.writeJournal("alice.jsonl", mustLine(t, turn("alice", "t1", "poison"), MaxAttempts-1))
			e.srv.Enqueue(openaitest.Error(400, "", "poison"))
			e.faultMu.Lock()
			e.fault = func(o, name string) error {
				if o == op && strings.Contains(name, "failed") {
					return syscall.EROFS
				}
				return nil
			}
			e.faultMu.Unlock()
			e.r = e.open()
			e.clock.Advance(time.Hour)
			e.waitFor("the failure", func() bool { return strings.Contains(e.logs.String(), "will retry") })
			e.settle()
			if !strings.Contains(e.logs.String(), "could not move the failed turns") || e.r.Pending() != 1 {
				t.Fatalf("pending %d; logs:\n%s", e.r.Pending(), e.logs.String())
			}
			if files, _ := FailedTurns(e.dir); len(files) != 0 {
				t.Fatalf("failed files: %v", files)
			}
			entries, _ := os.ReadDir(filepath.Join(e.dir, "reflector", "failed"))
			for _, de := range entries {
				t.Errorf("left in the failed folder: %s", de.Name())
			}
		})
	}
	e := newEnv(t, nil)
	must(t, os.WriteFile(filepath.Join(e.dir, "reflector", "failed"), nil, 0o600))
	if err := e.r.j.moveFailed("alice", nil, nil, errors.New("x"), time.Now()); err == nil || !errors.Is(err, mnemo.ErrStorage) {
		t.Fatalf("moveFailed into a file = %v", err)
	}
}

// TestFailedFileMovedBack: a failed file an admin moves back as the journal
// is reflected again; its note line is not an error.
func TestFailedFileMovedBack(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	e.r.crash()
	e.writeJournal("alice.jsonl", mustLine(t, turn("alice", "t1", "I'm Ada"), MaxAttempts)+`{"kind":"failed","user":"alice","error":"x"}`+"\n")
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.r = e.open()
	e.clock.Advance(time.Hour)
	e.drain("the reflection")
	if strings.Contains(e.logs.String(), "unreadable") || len(e.srv.Requests()) != 1 {
		t.Fatalf("logs:\n%s", e.logs.String())
	}
}

// failUntilGiveUp lets the runs fail MaxAttempts times, then waits for the
// turns to be given up.
func (e *env) failUntilGiveUp() {
	e.t.Helper()
	for i := 0; i < MaxAttempts; i++ {
		e.waitFor("a failure", func() bool { return strings.Count(e.logs.String(), "will retry") == i+1 })
		e.settle()
		e.clock.Advance(time.Hour)
	}
	e.waitFor("the give-up", func() bool { return e.r.Pending() == 0 })
}

// TestStepRecordLayout: a step is journaled in the layout go-openai gave
// it (role, content, tool_calls with id, type and function{name,
// arguments}), so a journal written now still reads in an older mnemo, and
// one written by an older mnemo reads now.
func TestStepRecordLayout(t *testing.T) {
	msg := llm.Message{Role: llm.RoleAssistant, Content: "Saving.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "memory_list", Arguments: `{}`}}}
	b, err := json.Marshal(record{Kind: kindStep, Run: "r1", Step: 1, Message: toStep(msg)})
	must(t, err)
	const want = `{"kind":"step","run":"r1","step":1,"message":{"role":"assistant","content":"Saving.","tool_calls":[{"id":"c1","type":"function","function":{"name":"memory_list","arguments":"{}"}}]}}`
	if string(b) != want {
		t.Errorf("step record:\n%s\nwant\n%s", b, want)
	}
	rec, err := parseRecord([]byte(strings.TrimSpace(stepLine(t))))
	must(t, err)
	got := rec.Message.message()
	if got.Role != llm.RoleAssistant || len(got.ToolCalls) != 1 || got.ToolCalls[0] != (llm.ToolCall{ID: "c1", Name: "memory_append", Arguments: appendArgs}) {
		t.Errorf("old step line read as %+v", got)
	}
	back, err := json.Marshal(toStep(got))
	must(t, err)
	if rt := toStep(llm.Message{}); rt.Role != "" || rt.ToolCalls != nil {
		t.Errorf("empty message: %+v", rt)
	}
	if !strings.Contains(string(back), `"name":"memory_append"`) {
		t.Errorf("round trip: %s", back)
	}
}
