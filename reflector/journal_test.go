package reflector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

func TestJournalLineRoundTrip(t *testing.T) {
	tr := Turn{TaskID: "t1", User: "slack-T1-U2", Conversation: "C1/1700000000.1", Platform: "slack", Speaker: "Ada",
		UserText: "line one\nline two \"quoted\"", ReplyText: "ok", Time: time.Date(2026, 3, 5, 14, 2, 0, 0, time.UTC),
		Context: []ContextMessage{{Author: "bob", Text: "hi"}, {Author: "Ada", Text: "yo", FromSpeaker: true}}, Failed: true,
		Origin: mnemo.Origin{Place: "#C1 thread", Link: "https://acme.slack.com/archives/C1/p1700000000000100"}}
	line, err := encodeLine(entry{turn: tr, attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	e, err := parseLine(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	if e.attempts != 2 || e.turn.UserText != tr.UserText || !e.turn.Time.Equal(tr.Time) || len(e.turn.Context) != 2 ||
		!e.turn.Context[1].FromSpeaker || !e.turn.Failed || e.turn.Speaker != "Ada" || e.turn.Conversation != tr.Conversation ||
		e.turn.Origin != tr.Origin {
		t.Fatalf("round trip: %+v", e)
	}
}

func TestParseLineRefuses(t *testing.T) {
	for _, line := range []string{
		``, `{`, `[]`, `null`, `"x"`, `{"user":""}`, `{"user":"../x"}`, `{"user":"alice","attempts":-1}`,
		`{"user":"alice","attempts":"1"}`, `{"user":"alice"} {"user":"alice"}`, `{"user":"alice","time":"yesterday"}`,
		`{"user":"alice","context":{}}`,
	} {
		if _, err := parseLine([]byte(line)); err == nil {
			t.Errorf("parseLine(%q) accepted", line)
		}
	}
	if e, err := parseLine([]byte(`{"user":"alice","future":"field"}`)); err != nil || e.turn.User != "alice" {
		t.Errorf("unknown fields should be ignored: %v", err)
	}
}

// FuzzJournal: the line parser never panics, and whatever it accepts
// encodes to exactly one line that parses back to the same encoding.
func FuzzJournal(f *testing.F) {
	seed := func(tr Turn, attempts int) {
		b, err := encodeLine(entry{turn: tr, attempts: attempts})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSuffix(b, []byte("\n")))
		f.Add(b[:len(b)/2]) // torn
	}
	seed(turn("alice", "t1", "I'm Ada"), 0)
	seed(Turn{User: "discord-1", UserText: "```\n\u202e\U000E0041", Time: time.Unix(0, 0).UTC(),
		Context: []ContextMessage{{Author: "bob\n", Text: "x"}}, Failed: true}, 2)
	for _, s := range []string{``, `{}`, `{"user":"a"}`, `{"user":"a","attempts":1e9}`, `{"user":"a","time":"0000-01-01T00:00:00Z"}`,
		`{"user":"a","userText":"\ud800"}`, "{\"user\":\"a\",\"userText\":\"\xff\"}", `{"user":"a","context":[null]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseLine(data)
		if err != nil {
			return
		}
		if validUser(e.turn.User) != nil || e.attempts < 0 {
			t.Fatalf("accepted an invalid entry: %+v", e)
		}
		line, err := encodeLine(e)
		if err != nil {
			return // a time JSON cannot encode (year past 9999 after a zone shift)
		}
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("encoding is not one line: %q", line)
		}
		e2, err := parseLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", line, err)
		}
		line2, err := encodeLine(e2)
		if err != nil || !bytes.Equal(line, line2) {
			t.Fatalf("not stable:\n%q\n%q (%v)", line, line2, err)
		}
		if strings.ContainsRune(string(line[:len(line)-1]), '\n') {
			t.Fatal("raw newline inside the line")
		}
	})
}

func TestJournalFileErrors(t *testing.T) {
	dir := t.TempDir()
	j := newJournal(dir, nil)
	// A journal name that resolves to something other than a file.
	if err := os.Symlink(os.DevNull, filepath.Join(dir, "alice.jsonl")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := j.append(entry{turn: turn("alice", "t1", "x")}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("append to a device = %v", err)
	}
	// Removing a journal that is a non-empty folder fails.
	must(t, os.MkdirAll(filepath.Join(dir, "bob.jsonl", "x"), 0o700))
	if err := j.rewrite("bob", nil, nil); err == nil || !strings.Contains(err.Error(), "remove journal") {
		t.Errorf("rewrite = %v", err)
	}
	// A folder that is gone.
	gone := newJournal(filepath.Join(dir, "gone"), nil)
	if err := gone.rewrite("alice", nil, nil); err == nil || !strings.Contains(err.Error(), "for fsync") {
		t.Errorf("rewrite in a missing folder = %v", err)
	}
	if err := gone.rewrite("alice", []entry{{turn: turn("alice", "t1", "x")}}, nil); err == nil || !strings.Contains(err.Error(), "rewrite journal") {
		t.Errorf("rewrite in a missing folder = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the folder appeared")
	}
}

// countOps makes e count the disk operations op (on any file) and signal
// each on the returned channel.
func (e *env) countOps(op string) (n *atomic.Int32, each chan struct{}) {
	n, each = &atomic.Int32{}, make(chan struct{}, 100)
	e.faultMu.Lock()
	e.fault = func(o, _ string) error {
		if o == op {
			n.Add(1)
			each <- struct{}{}
		}
		return nil
	}
	e.faultMu.Unlock()
	return n, each
}

// TestTurnsAreFsyncedTogetherAfterTheWindow: Add writes the turn but does
// not fsync it; when the sync window ends one fsync covers every turn of
// the window; a window opens again with the next turn.
func TestTurnsAreFsyncedTogetherAfterTheWindow(t *testing.T) {
	e := newEnv(t, nil)
	fsyncs, each := e.countOps(durable.Fsync)
	for i := range 5 {
		e.add(turn("alice", fmt.Sprint("t", i), "hi"))
	}
	if n := fsyncs.Load(); n != 0 {
		t.Fatalf("%d fsyncs before the window ended", n)
	}
	if lines := e.journalLines("alice"); len(lines) != 5 {
		t.Fatalf("the turns are not in the file before Add returned: %q", lines)
	}
	e.clock.Advance(DefaultSyncWindow - 1)
	if n := fsyncs.Load(); n != 0 {
		t.Fatalf("%d fsyncs before the window ended", n)
	}
	e.clock.Advance(1)
	<-each
	e.add(turn("alice", "t5", "again"))
	if e.clock.Armed() != 2 { // the idle timer and the new window
		t.Fatalf("%d timers armed", e.clock.Armed())
	}
	e.endWindow()
	<-each
	if n := fsyncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 6 turns in two windows, want 2", n)
	}
}

// TestCloseFsyncsBeforeItReturns: a clean shutdown inside a window makes
// the turns durable before the runs start, without waiting for the window.
func TestCloseFsyncsBeforeItReturns(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Error(400, "", "nope"), true // the turns stay journaled
	})
	fsyncs, _ := e.countOps(durable.Fsync)
	e.add(turn("alice", "t1", "one"))
	e.add(turn("bob", "b1", "two"))
	if err := e.r.Close(context.Background()); err == nil {
		t.Fatal("Close reported nothing left journaled")
	}
	if n := fsyncs.Load(); n < 2 {
		t.Fatalf("%d fsyncs at Close, want one per file at least", n)
	}
	r := e.open()
	if r.Pending() != 2 {
		t.Fatalf("after a restart: %d pending, want 2", r.Pending())
	}
}

// TestReflectedTurnsAreMarkedThenCompacted: a run that succeeds while other
// turns wait appends a "reflected" line rather than rewriting the file; a
// restart skips the reflected turns and compacts the file; past
// compactBytes of reflected content the file is compacted at once.
func TestReflectedTurnsAreMarkedThenCompacted(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	arrived, release := e.gateModel("nothing to remember")
	e.add(turn("alice", "t1", "one"))
	<-arrived
	e.add(turn("alice", "t2", "two"))
	release <- struct{}{}
	<-arrived // t2's run
	e.waitFor("the mark", func() bool { return len(e.journalLines("alice")) == 3 })
	lines := e.journalLines("alice")
	if !strings.Contains(lines[2], `"kind":"reflected"`) || !strings.Contains(lines[2], `"turns":1`) {
		t.Fatalf("journal %q", lines)
	}
	e.r.crash()
	close(release)
	e.cfg.MaxTurns = 20
	e.r = e.open()
	if e.r.Pending() != 1 {
		t.Fatalf("after a restart %d pending, want t2 only", e.r.Pending())
	}
	if lines := e.journalLines("alice"); len(lines) != 1 || !strings.Contains(lines[0], `"t2"`) {
		t.Fatalf("not compacted at Open: %q", lines)
	}

	// A big turn still pending is not what counts: only reflected content.
	e3 := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	arrived, release = e3.gateModel("nothing to remember")
	e3.add(turn("alice", "t1", "one"))
	<-arrived
	e3.add(turn("alice", "t2", strings.Repeat("x", compactBytes)))
	release <- struct{}{}
	<-arrived
	e3.waitFor("the mark", func() bool { return len(e3.journalLines("alice")) == 3 })
	close(release)

	// Past compactBytes the file is compacted by the run's end.
	e2 := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	arrived, release = e2.gateModel("nothing to remember")
	defer close(release)
	e2.add(turn("alice", "t1", strings.Repeat("x", compactBytes)))
	<-arrived
	e2.add(turn("alice", "t2", "two"))
	release <- struct{}{}
	<-arrived
	e2.waitFor("the compaction", func() bool { return len(e2.journalLines("alice")) == 1 })
	if lines := e2.journalLines("alice"); !strings.Contains(lines[0], `"t2"`) {
		t.Fatalf("journal %q", lines)
	}
}

// TestBadReflectedLines: a "reflected" line covering more turns than are
// journaled is skipped with a warning; an offline forget counts only the
// turns still pending.
func TestBadReflectedLines(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	t1, t2 := mustLine(t, turn("alice", "t1", "one"), 0), mustLine(t, turn("alice", "t2", "two"), 0)
	data := t1 + `{"kind":"reflected","run":"r1","turns":2}` + "\n" + t2 + `{"kind":"reflected","run":"r1","turns":1}` + "\n"
	entries, run, dirty := parseJournal("alice", "alice.jsonl", []byte(data), log)
	if len(entries) != 1 || run != nil || !dirty || entries[0].turn.TaskID != "t2" {
		t.Fatalf("entries %+v, run %v, dirty %v", entries, run, dirty)
	}
	if !strings.Contains(logs.String(), "2 turns reflected but 1 are journaled") {
		t.Fatalf("logs:\n%s", logs.String())
	}
	// A mark may cover every turn journaled before it.
	t3 := mustLine(t, turn("alice", "t3", "three"), 0)
	entries, _, _ = parseJournal("alice", "alice.jsonl", []byte(t1+t2+`{"kind":"reflected","run":"r1","turns":2}`+"\n"+t3), log)
	if len(entries) != 1 || entries[0].turn.TaskID != "t3" {
		t.Fatalf("entries after a mark of all turns: %+v", entries)
	}
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "reflector"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "reflector", "alice.jsonl"), []byte(data), 0o600))
	if n, err := ForgetJournaled(dir, "alice"); n != 1 || err != nil {
		t.Fatalf("ForgetJournaled = %d, %v; want the one pending turn", n, err)
	}
}

// TestReplayRemovesTempFiles: temp files of a rewrite cut short (renameio's
// names, and older mnemos') are removed at Open; a stray dot file is not.
func TestReplayRemovesTempFiles(t *testing.T) {
	e := newEnv(t, nil)
	e.r.crash()
	for _, name := range []string{".alice.jsonl123456", ".alice.jsonl.tmp-abcdef", ".notes"} {
		e.writeJournal(name, "x")
	}
	e.r = e.open()
	des, err := os.ReadDir(filepath.Join(e.dir, "reflector"))
	must(t, err)
	var left []string
	for _, de := range des {
		left = append(left, de.Name())
	}
	if len(left) != 1 || left[0] != ".notes" {
		t.Fatalf("left in the journal folder: %v", left)
	}
}

// TestCloseRewritesAJournalItCannotFsync: at shutdown a file whose fsync
// fails is rewritten whole before the runs, so the turns are durable and
// the next start has them.
func TestCloseRewritesAJournalItCannotFsync(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Error(400, "", "nope"), true // the turn stays journaled
	})
	var fsyncs atomic.Int32
	e.faultMu.Lock()
	e.fault = func(op, _ string) error {
		if op == durable.Fsync && fsyncs.Add(1) == 1 {
			return errors.New("fsync failed")
		}
		return nil
	}
	e.faultMu.Unlock()
	e.add(turn("alice", "t1", "one"))
	if err := e.r.Close(context.Background()); err == nil {
		t.Fatal("Close reported nothing left journaled")
	}
	for _, want := range []string{"could not make the journal durable at shutdown", "journal rewritten after a failed fsync"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Fatalf("logs lack %q:\n%s", want, e.logs.String())
		}
	}
	if r := e.open(); r.Pending() != 1 {
		t.Fatalf("after a restart: %d pending", r.Pending())
	}
}

// TestRecordFsyncsTheFolderOfANewFile: a run's first record, appended to a
// file created since the last fsync, makes the file's creation durable
// too; later records fsync the file only.
func TestRecordFsyncsTheFolderOfANewFile(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxTurns = 1 })
	var mu sync.Mutex
	var ops []string
	e.faultMu.Lock()
	e.fault = func(op, name string) error {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op+":"+filepath.Base(name))
		return nil
	}
	e.faultMu.Unlock()
	e.srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`)), openaitest.Text("nothing"))
	e.add(turn("alice", "t1", "I'm Ada"))
	e.waitFor("the run", func() bool { return e.r.Pending() == 0 })
	mu.Lock()
	defer mu.Unlock()
	want := []string{"create:alice.jsonl", "write:alice.jsonl", "write:alice.jsonl", "fsync:alice.jsonl", "fsyncdir:reflector",
		"write:alice.jsonl", "fsync:alice.jsonl", "remove:alice.jsonl", "fsyncdir:reflector"}
	if strings.Join(ops, " ") != strings.Join(want, " ") {
		t.Fatalf("disk operations:\n%v\nwant\n%v", ops, want)
	}
}

// TestSyncWindowIsConfigured: a window set in the Config is the one the
// flusher waits for.
func TestSyncWindowIsConfigured(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SyncWindow = time.Second })
	fsyncs, each := e.countOps(durable.Fsync)
	e.add(turn("alice", "t1", "one"))
	e.clock.Advance(time.Second - time.Nanosecond)
	if n := fsyncs.Load(); n != 0 || e.clock.Armed() != 2 {
		t.Fatalf("%d fsyncs, %d timers before the window ended", n, e.clock.Armed())
	}
	e.clock.Advance(time.Nanosecond)
	<-each
}

// linkedOut is a state folder dir whose journal folder (dir/reflector,
// open as root) holds user's journal file as a link to victim, a file
// outside it that says "keep me".
func linkedOut(t *testing.T, user string) (dir string, root *os.Root, victim string) {
	t.Helper()
	dir = t.TempDir()
	jdir := filepath.Join(dir, "reflector")
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(jdir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	victim = filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(jdir, user+".jsonl")); err != nil {
		t.Fatal(err)
	}
	return dir, root, victim
}

// With Config.JournalRoot the journal is written through that root: a
// user's file that is a link out of it is refused, its target untouched.
func TestJournalThroughARoot(t *testing.T) {
	dir, root, victim := linkedOut(t, "ann")
	jdir := filepath.Join(dir, "reflector")
	j := newJournal(jdir, nil)
	j.fs = durable.RootDir{Root: root}
	err := j.append(entry{turn: Turn{User: "ann", TaskID: "t1", UserText: "secret"}})
	if err == nil || !strings.Contains(err.Error(), "path escapes from parent") || !strings.Contains(err.Error(), filepath.Join(jdir, "ann.jsonl")) {
		t.Errorf("a turn through a link out: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}

// Open uses Config.JournalRoot for the journal's writes.
func TestOpenWithJournalRoot(t *testing.T) {
	dir, root, victim := linkedOut(t, "alice")
	e := newEnv(t, func(c *Config) { c.StateDir, c.JournalRoot = dir, root })
	if err := e.r.Add(turn("alice", "t1", "secret")); err == nil || !strings.Contains(err.Error(), "path escapes from parent") {
		t.Errorf("Add through a link out: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
