package intake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// faults is a disk-fault hook that can make the journal's writes, fsyncs
// and cuts, a rewrite's temp file, and the folder's fsync, fail; it
// counts file fsyncs.
type faults struct {
	mu        sync.Mutex
	write     error // journal and temp file writes (a journal's leaves half a line, as a full disk does)
	sync      error // journal and temp file fsyncs
	truncate  error
	dirSync   error
	open      error         // creating a temp file
	syncs     int           // fsyncs of a file (not the folder)
	holdSync  chan struct{} // when set, the next file fsync waits for it to close
	heldSyncs chan struct{} // receives when a fsync is held
}

func (f *faults) hook(op, name string) error {
	f.mu.Lock()
	switch op {
	case durable.Create:
		err := f.open
		f.mu.Unlock()
		if err != nil && durable.IsTemp(name) {
			return err
		}
		return nil
	case durable.Write:
		err := f.write
		f.mu.Unlock()
		if err != nil && !durable.IsTemp(name) {
			partial, _ := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
			partial.WriteString(`{"op":"add","id":"half`) // a partial write, as a full disk leaves
			partial.Close()
		}
		return err
	case durable.Truncate:
		defer f.mu.Unlock()
		return f.truncate
	case durable.FsyncDir:
		defer f.mu.Unlock()
		return f.dirSync
	case durable.Fsync:
		f.syncs++
		err, hold, held := f.sync, f.holdSync, f.heldSyncs
		f.holdSync = nil
		f.mu.Unlock()
		if hold != nil {
			held <- struct{}{}
			<-hold
		}
		return err
	}
	f.mu.Unlock()
	return nil
}

func (f *faults) set(fn func(f *faults)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faults) syncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// world is a journal folder with logs and a clock.
type world struct {
	dir    string
	logs   *bottest.LogBuffer
	faults *faults
	mu     sync.Mutex
	now    time.Time
}

func newWorld(t *testing.T) *world {
	return &world{dir: filepath.Join(t.TempDir(), "intake"), logs: &bottest.LogBuffer{}, faults: &faults{},
		now: time.Date(2026, 3, 5, 14, 0, 0, 0, time.UTC)}
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

func (w *world) options() Options {
	return Options{Dir: w.dir, Name: "slack", Now: w.clock, Faults: w.faults.hook,
		Logger: slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

func (w *world) open(t *testing.T) *Journal {
	t.Helper()
	j, err := Open(w.options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// reopen closes j and opens the journal again (a restart), checking what
// it has pending.
func (w *world) reopen(t *testing.T, j *Journal, want string) {
	t.Helper()
	j.Close()
	if got := ids(w.open(t).Pending()); got != want {
		t.Errorf("pending after a restart: %s, want %s; file:\n%s", got, want, w.file(t))
	}
}

func (w *world) path() string { return filepath.Join(w.dir, "slack.jsonl") }

func (w *world) file(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(w.path())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func msg(id string, keys ...string) Entry {
	return Entry{ID: id, Keys: keys, User: "alice", Data: json.RawMessage(fmt.Sprintf(`{"text":%q}`, "text of "+id))}
}

func add(t *testing.T, j *Journal, es ...Entry) {
	t.Helper()
	for i, err := range j.Add(es...) {
		if err != nil {
			t.Fatalf("Add(%s) = %v", es[i].ID, err)
		}
	}
}

func ids(es []Entry) string {
	var out []string
	for _, e := range es {
		s := e.ID
		if e.Posting {
			s += "(" + e.Reply + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// A message added is durable: it is pending after a restart, in the order
// messages came, with its data; a decided reply comes back too; a done
// message does not, and its keys still dedupe.
func TestReplayAfterRestart(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	if strings.Contains(w.logs.String(), "still to be answered") {
		t.Error("a new journal says it has messages to answer")
	}
	add(t, j, msg("m1", "event:E1"), msg("m2", "event:E2", "client:C2"))
	add(t, j, msg("m3", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8")) // as many keys as may be
	if err := j.Posting("m2", "the reply\nto m2"); err != nil {
		t.Fatal(err)
	}
	if err := j.Done("m1"); err != nil {
		t.Fatal(err)
	}
	if j.Len() != 2 || len(j.Pending()) != 0 {
		t.Fatalf("Len %d, Pending %v on a new journal", j.Len(), j.Pending())
	}
	j.Close()

	j2 := w.open(t)
	got := j2.Pending()
	if ids(got) != "m2(the reply\nto m2) m3" {
		t.Fatalf("pending after restart: %s", ids(got))
	}
	e := got[0]
	if e.User != "alice" || string(e.Data) != `{"text":"text of m2"}` || !e.At.Equal(w.now) ||
		strings.Join(e.Keys, ",") != "event:E2,client:C2" {
		t.Errorf("entry %+v", e)
	}
	// Redeliveries of each, by any key, are duplicates; a new one is not.
	errs := j2.Add(msg("m1"), msg("x", "event:E1"), msg("y", "client:C2"), msg("z", "k8"), msg("m4"))
	for i, want := range []error{ErrDuplicate, ErrDuplicate, ErrDuplicate, ErrDuplicate, nil} {
		if !errors.Is(errs[i], want) {
			t.Errorf("Add #%d = %v; want %v", i, errs[i], want)
		}
	}
	// Pending is what the last run left, not what came since.
	if ids(j2.Pending()) != "m2(the reply\nto m2) m3" || j2.Len() != 3 {
		t.Errorf("Pending %s, Len %d", ids(j2.Pending()), j2.Len())
	}
	if !strings.Contains(w.logs.String(), "messages received before a restart are still to be answered") {
		t.Error("the leftover messages were not logged")
	}
}

// The order of many messages survives restarts and rewrites.
func TestReplayOrder(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	var want []string
	for i := range 50 {
		id := fmt.Sprintf("m%02d", (i*17)%50) // ids not in sorted order
		add(t, j, msg(id))
		if i%3 == 0 {
			if err := j.Done(id); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want = append(want, id)
	}
	j.Close()
	for range 2 { // each Open rewrites the file
		j = w.open(t)
		if got := ids(j.Pending()); got != strings.Join(want, " ") {
			t.Fatalf("order after restart:\n%s\nwant\n%s", got, want)
		}
		j.Close()
	}
}

// A crash in the middle of an append leaves a torn last line: it is
// dropped (its message was never acknowledged), the rest is replayed, and
// the rewritten file has no trace of it. An unreadable line elsewhere is
// skipped with a warning.
func TestTornAndBadLines(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j, msg("m1"), msg("m2"))
	j.Close()
	good := w.file(t)
	lines := strings.SplitAfter(good, "\n")
	torn := lines[1][:len(lines[1])/2] // m2's add, cut short
	bad := good[:len(lines[0])] + `{"op":"add","id":"bad"}` + "\n" + "not json\n" + `{"op":"nope","id":"x"}` + "\n" +
		`{"op":"add","id":"","data":{}}` + "\n" + `{"op":"done","id":"k","keys":["1","2","3","4","5","6","7","8","9"]}` + "\n" +
		lines[1] + "\n\n" + `{"op":"post","id":"m1","text":"hi"}` + "\n" + torn
	if err := os.WriteFile(w.path(), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	j = w.open(t)
	if got := ids(j.Pending()); got != "m1(hi) m2" {
		t.Fatalf("pending %s", got)
	}
	logs := w.logs.String()
	if !strings.Contains(logs, "dropping the torn last line") || strings.Count(logs, "skipping an unreadable journal line") != 5 ||
		!strings.Contains(logs, "line=2 ") || !strings.Contains(logs, "line=6 ") || !strings.Contains(logs, "line=11\n") {
		t.Errorf("logs:\n%s", logs)
	}
	j.Close()
	if strings.Contains(w.file(t), "bad") || strings.Contains(w.file(t), "not json") {
		t.Errorf("the rewrite kept bad lines:\n%s", w.file(t))
	}
	w.logs = &bottest.LogBuffer{}
	j = w.open(t)
	if got := ids(j.Pending()); got != "m1(hi) m2" || strings.Contains(w.logs.String(), "WARN") {
		t.Errorf("second open: %s\n%s", got, w.logs.String())
	}
}

// Duplicates within one Add, across concurrent Adds and against answered
// messages; answered keys are forgotten after DoneTTL.
func TestDedupe(t *testing.T) {
	w := newWorld(t)
	o := w.options()
	o.DoneTTL = time.Hour
	j, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	errs := j.Add(msg("m1", "event:E1"), msg("m1"), msg("other", "event:E1"), msg("m2"))
	if errs[0] != nil || !errors.Is(errs[1], ErrDuplicate) || !errors.Is(errs[2], ErrDuplicate) || errs[3] != nil {
		t.Fatalf("Add = %v", errs)
	}
	var wg sync.WaitGroup
	results := make([]error, 20)
	for i := range results {
		wg.Go(func() { results[i] = j.Add(msg("m3"))[0] })
	}
	wg.Wait()
	news := 0
	for _, err := range results {
		switch {
		case err == nil:
			news++
		case !errors.Is(err, ErrDuplicate):
			t.Errorf("concurrent Add: %v", err)
		}
	}
	if news != 1 {
		t.Errorf("%d of 20 concurrent deliveries were new", news)
	}
	if err := j.Done("m1"); err != nil {
		t.Fatal(err)
	}
	w.advance(time.Hour) // DoneTTL to the nanosecond: still remembered
	if err := j.Add(msg("again", "event:E1"))[0]; !errors.Is(err, ErrDuplicate) {
		t.Errorf("within DoneTTL: %v", err)
	}
	if j.Start("m1") {
		t.Error("Start of an answered message")
	}
	w.advance(time.Nanosecond)
	if err := j.Add(msg("m1"))[0]; err != nil {
		t.Errorf("after DoneTTL: %v", err)
	}
	// Done of what the journal does not hold is nothing.
	if err := j.Done("unknown"); err != nil || j.Posting("unknown", "x") != nil || !j.Start("unknown") {
		t.Error("unknown ids")
	}
	// Bad entries are refused, not written.
	for _, e := range []Entry{{ID: "", Data: json.RawMessage(`{}`)}, {ID: "x", Data: json.RawMessage(`{`)},
		{ID: "y", Data: json.RawMessage(`{}`), Keys: strings.Split("a b c d e f g h i", " ")}} {
		if err := j.Add(e)[0]; err == nil || errors.Is(err, ErrDuplicate) {
			t.Errorf("Add(%+v) = %v", e, err)
		}
	}
}

// At most DoneMax keys are remembered, the oldest dropped first.
func TestDoneMax(t *testing.T) {
	w := newWorld(t)
	o := w.options()
	o.DoneMax = 100
	j, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		id := fmt.Sprint("m", i)
		add(t, j, msg(id))
		j.Done(id)
		w.advance(time.Second)
	}
	if err := j.Add(msg("m0"))[0]; err != nil {
		t.Errorf("the oldest key is still remembered: %v", err)
	}
	if err := j.Add(msg("m199"))[0]; !errors.Is(err, ErrDuplicate) {
		t.Errorf("the newest key is not remembered: %v", err)
	}
	j.Close()
	// The rewrite at Open keeps the remembered keys, no more.
	j, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Add(msg("m150"))[0]; !errors.Is(err, ErrDuplicate) {
		t.Errorf("after restart: %v", err)
	}
	if n := strings.Count(w.file(t), `"op":"done"`); n > 100 {
		t.Errorf("%d done records kept", n)
	}
}

// Forget drops the user's messages waiting for their turn, for good; not
// those being answered or posted, nor other users'.
func TestForget(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	bob := msg("b1")
	bob.User = "bob"
	add(t, j, msg("a1", "event:A1"), msg("a2"), msg("a3"), msg("a4"), bob)
	if !j.Start("a2") || !j.Start("a3") {
		t.Fatal("Start")
	}
	if err := j.Posting("a3", "reply"); err != nil {
		t.Fatal(err)
	}
	if n := j.Forget("alice"); n != 2 {
		t.Fatalf("Forget = %d; want 2 (a1, a4)", n)
	}
	// The file no longer holds what the dropped messages said.
	if data, err := os.ReadFile(j.Path()); err != nil || strings.Contains(string(data), "text of a1") || strings.Contains(string(data), "text of a4") || !strings.Contains(string(data), "text of b1") {
		t.Errorf("the journal after Forget (%v):\n%s", err, data)
	}
	if !strings.Contains(w.logs.String(), `msg="slack: queued messages dropped: their user's memory is forgotten" memory_user=alice messages=2`) {
		t.Errorf("the forget is not logged:\n%s", w.logs.String())
	}
	// The purge: what the dropped messages said is gone from the file.
	if f := w.file(t); strings.Contains(f, "text of a1") || strings.Contains(f, "text of a4") || !strings.Contains(f, "text of a2") {
		t.Errorf("after Forget the file holds:\n%s", f)
	}
	if j.Start("a1") || j.Start("a4") || !j.Start("b1") || !j.Start("a2") {
		t.Error("Start after Forget")
	}
	if n := j.Forget("alice"); n != 0 {
		t.Errorf("second Forget = %d", n)
	}
	if n := strings.Count(w.logs.String(), "queued messages dropped"); n != 1 {
		t.Errorf("a forget that dropped nothing is logged too (%d lines):\n%s", n, w.logs.String())
	}
	if err := j.Add(msg("again", "event:A1"))[0]; !errors.Is(err, ErrDuplicate) {
		t.Errorf("a redelivery of a forgotten message: %v", err)
	}
	j.Close()
	if n := j.Forget("bob"); n != 0 {
		t.Errorf("Forget after Close = %d", n)
	}
	j = w.open(t)
	if got := ids(j.Pending()); got != "a2 a3(reply) b1" {
		t.Errorf("pending after restart: %s", got)
	}
}

// An fsync that fails means the messages of that write are not
// acknowledged: Add returns the error, naming the file and the cause, an
// ERROR is logged, the file is cut back, and a redelivery is new.
func TestFsyncError(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j, msg("m1"))
	before := w.file(t)
	w.faults.set(func(f *faults) { f.sync = syscall.EIO })
	errs := j.Add(msg("m2"), msg("m3"), msg("m1"))
	for i, err := range errs[:2] {
		if err == nil || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "fsync "+w.path()) {
			t.Errorf("Add #%d = %v", i, err)
		}
	}
	if !errors.Is(errs[2], ErrDuplicate) {
		t.Errorf("m1 again = %v", errs[2])
	}
	logs := w.logs.String()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "file="+w.path()) || !strings.Contains(logs, "input/output error") {
		t.Errorf("not logged with the file and cause:\n%s", logs)
	}
	if w.file(t) != before || j.Len() != 1 {
		t.Errorf("after a failed fsync: Len %d, file\n%s", j.Len(), w.file(t))
	}
	// Posting and Done fail the same way; the caller goes on.
	if err := j.Posting("m1", "r"); !errors.Is(err, syscall.EIO) {
		t.Errorf("Posting = %v", err)
	}
	if err := j.Done("m1"); !errors.Is(err, syscall.EIO) {
		t.Errorf("Done = %v", err)
	}
	if n := j.Forget("alice"); n != 0 {
		t.Errorf("Forget = %d", n)
	}
	w.faults.set(func(f *faults) { f.sync = nil })
	add(t, j, msg("m2"))
	// m1's done was not durable: it is checked again
	w.reopen(t, j, "m1 m2")
}

// A write that fails (a full disk) is cut back; when the cut fails too, the
// next write starts on a new line, so no later record is lost.
func TestWriteError(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	w.faults.set(func(f *faults) { f.write = syscall.ENOSPC })
	if err := j.Add(msg("m1"))[0]; !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "write "+w.path()) {
		t.Fatalf("Add = %v", err)
	}
	if w.file(t) != "" {
		t.Errorf("a failed write left %q", w.file(t))
	}
	w.faults.set(func(f *faults) { f.write = nil })
	add(t, j, msg("m0"))
	w.faults.set(func(f *faults) { f.write, f.truncate = syscall.ENOSPC, syscall.EIO })
	if err := j.Add(msg("m2"))[0]; !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Add = %v", err)
	}
	if w.file(t) == "" {
		t.Fatal("the fault left nothing: this test tests nothing")
	}
	w.faults.set(func(f *faults) { f.write, f.truncate = nil, nil })
	add(t, j, msg("m3"))
	add(t, j, msg("m4"))
	// The journal knows the file's size again: a failure now cuts exactly
	// what it wrote.
	w.faults.set(func(f *faults) { f.write = syscall.ENOSPC })
	if err := j.Add(msg("m5"))[0]; err == nil {
		t.Fatal("Add succeeded")
	}
	w.faults.set(func(f *faults) { f.write = nil })
	add(t, j, msg("m6"))
	w.reopen(t, j, "m0 m3 m4 m6")
}

// Concurrent callers share fsyncs: while one fsync runs, the records that
// come meanwhile wait and go in the next write together.
func TestGroupCommit(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	start := w.faults.syncCount()
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	w.faults.set(func(f *faults) { f.holdSync, f.heldSyncs = release, held })
	var wg sync.WaitGroup
	addAsync := func(id string) {
		wg.Go(func() {
			if err := j.Add(msg(id))[0]; err != nil {
				t.Errorf("Add(%s) = %v", id, err)
			}
		})
	}
	addAsync("first")
	<-held // the first fsync is running
	const n = 30
	for i := range n {
		addAsync(fmt.Sprint("m", i))
	}
	bottest.WaitFor(t, "the adds to queue", 10*time.Second, func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.file.Queued() == n
	})
	close(release)
	wg.Wait()
	if got := w.faults.syncCount() - start; got != 2 {
		t.Errorf("%d fsyncs for 31 adds; want 2", got)
	}
	if j.Len() != n+1 {
		t.Errorf("Len %d", j.Len())
	}
}

// The file is rewritten once it has grown past what it holds: pending
// messages and remembered keys survive, the size drops.
func TestCompaction(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	big := json.RawMessage(`"` + strings.Repeat("x", 4000) + `"`)
	for i := range 400 {
		e := msg(fmt.Sprint("m", i), fmt.Sprint("event:E", i))
		e.Data = big
		add(t, j, e)
		if i%100 != 7 {
			if err := j.Done(e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	fi, err := os.Stat(w.path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 2*minCompact {
		t.Errorf("the journal grew to %d bytes", fi.Size())
	}
	if err := j.Add(msg("x", "event:E12"))[0]; !errors.Is(err, ErrDuplicate) {
		t.Errorf("a key remembered before the rewrite: %v", err)
	}
	w.reopen(t, j, "m7 m107 m207 m307")
	des, _ := os.ReadDir(w.dir)
	if len(des) != 1 {
		t.Errorf("files left: %v", des)
	}
}

// rewriteNext makes j's next write rewrite the file.
func rewriteNext(j *Journal) {
	j.mu.Lock()
	j.compactAt = 0
	j.mu.Unlock()
}

// A rewrite that fails leaves the journal appending to its file; a folder
// fsync that fails after the rename is retried before the next write may
// count as durable.
func TestCompactionErrors(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j, msg("m1"))
	rewriteNext(j)
	w.faults.set(func(f *faults) { f.open = syscall.EMFILE })
	add(t, j, msg("m2"))
	add(t, j, msg("m2b")) // not tried again at once
	if n := strings.Count(w.logs.String(), "cannot rewrite the journal; appending to it still"); n != 1 {
		t.Fatalf("%d failed rewrites; logs:\n%s", n, w.logs.String())
	}
	w.faults.set(func(f *faults) { f.open = nil })
	add(t, j, msg("m3"))

	// The rename fails: a folder is where the file was.
	rewriteNext(j)
	os.Rename(w.path(), w.path()+".moved")
	os.MkdirAll(filepath.Join(w.path(), "sub"), 0o700)
	add(t, j, msg("m4"))
	if strings.Count(w.logs.String(), "cannot rewrite the journal") != 2 {
		t.Fatalf("logs:\n%s", w.logs.String())
	}
	os.RemoveAll(w.path())
	os.Rename(w.path()+".moved", w.path())

	// The temp file's fsync fails: the rewrite is abandoned.
	rewriteNext(j)
	w.faults.set(func(f *faults) { f.sync = syscall.EIO })
	if err := j.Add(msg("x"))[0]; !errors.Is(err, syscall.EIO) {
		t.Fatalf("Add = %v", err)
	}
	if n := strings.Count(w.logs.String(), "cannot rewrite the journal"); n != 3 {
		t.Fatalf("%d failed rewrites; logs:\n%s", n, w.logs.String())
	}
	w.faults.set(func(f *faults) { f.sync = nil })

	// The folder fsync fails after the rename.
	rewriteNext(j)
	w.faults.set(func(f *faults) { f.dirSync = syscall.EIO })
	add(t, j, msg("m5"))
	if !strings.Contains(w.logs.String(), "cannot fsync the journal folder after a rewrite") {
		t.Fatalf("logs:\n%s", w.logs.String())
	}
	if err := j.Add(msg("m6"))[0]; !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "fsync folder "+w.dir) {
		t.Errorf("a write while the rename is not durable = %v", err)
	}
	w.faults.set(func(f *faults) { f.dirSync = nil })
	add(t, j, msg("m6"))
	w.reopen(t, j, "m1 m2 m2b m3 m4 m5 m6")
}

// Open refuses what it cannot use, naming it; a temp file a crashed rewrite
// left is removed.
func TestOpen(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j, msg("m1"))
	j.Close()
	stale := filepath.Join(w.dir, ".slack.jsonl.tmp-0123") // of an older mnemo
	staleNew := filepath.Join(w.dir, ".slack.jsonl"+durable.TempMarker+"0123")
	os.WriteFile(staleNew, []byte("junk"), 0o600)
	other := filepath.Join(w.dir, "discord.jsonl")
	os.WriteFile(stale, []byte("junk"), 0o600)
	os.WriteFile(other, []byte("{}\n"), 0o600)
	j = w.open(t)
	for _, p := range []string{stale, staleNew} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the stale temp file %s is still there", p)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("another journal was touched")
	}
	if j.Path() != w.path() {
		t.Errorf("Path = %q", j.Path())
	}
	j.Close()

	for name, o := range map[string]func(*Options){
		"journal name":      func(o *Options) { o.Name = "../x" },
		"journal name \"\"": func(o *Options) { o.Name = "" },
		"create the journal folder": func(o *Options) {
			os.WriteFile(filepath.Join(filepath.Dir(w.dir), "file"), nil, 0o600)
			o.Dir = filepath.Join(filepath.Dir(w.dir), "file", "intake")
		},
		"read the journal": func(o *Options) { o.Name = "dir"; os.MkdirAll(filepath.Join(w.dir, "dir.jsonl"), 0o700) },
		"rewrite the journal": func(o *Options) {
			o.Faults = func(string, string) error { return syscall.EACCES }
		},
	} {
		opts := w.options()
		o(&opts)
		if j, err := Open(opts); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Open = %v", name, err)
			if j != nil {
				j.Close()
			}
		}
	}
}

// After Close nothing is taken; Close may be called again.
func TestClosed(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j, msg("m1"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Add(msg("m2"))[0]; !errors.Is(err, ErrClosed) {
		t.Errorf("Add = %v", err)
	}
	if !errors.Is(j.Posting("m1", "x"), ErrClosed) || !errors.Is(j.Done("m1"), ErrClosed) {
		t.Error("Posting or Done after Close")
	}
}

// With no folder the journal works in memory and writes nothing.
func TestInMemory(t *testing.T) {
	j, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	add(t, j, msg("m1"))
	if err := j.Add(msg("m1"))[0]; !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate = %v", err)
	}
	if j.Posting("m1", "r") != nil || j.Done("m1") != nil || j.Len() != 0 || j.Path() != "" || j.Close() != nil {
		t.Error("in memory")
	}
}

// benchData is a typical Slack DM as the adapter journals it.
var benchData = json.RawMessage(`{"workspace":"T0TEAM","team":"T0TEAM","user":"U0ADA","channel":"D0DM","ts":"1700000000.000100","dm":true,"text":"Hello, I'm Ada Lovelace. What did we fix last time?","conversation":"slack:T0TEAM:D0DM:"}`)

// benchJournal opens a journal on disk that counts its fsyncs.
func benchJournal(b *testing.B) (*Journal, *faults) {
	f := &faults{}
	j, err := Open(Options{Dir: b.TempDir(), Name: "bench", Faults: f.hook})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j, f
}

func reportSyncs(b *testing.B, f *faults, start int) {
	b.ReportMetric(float64(f.syncCount()-start)/float64(b.N), "fsyncs/msg")
}

// BenchmarkAdd is one message at a time (Discord's gateway goroutine):
// one write and one fsync each.
func BenchmarkAdd(b *testing.B) {
	j, f := benchJournal(b)
	start := f.syncCount()
	b.ResetTimer()
	for i := range b.N {
		if err := j.Add(Entry{ID: fmt.Sprint("msg:", i), Keys: []string{fmt.Sprint("event:", i)}, User: "ada", Data: benchData})[0]; err != nil {
			b.Fatal(err)
		}
	}
	reportSyncs(b, f, start)
}

// BenchmarkAddBatch64 is a Slack burst: the 64 events socketmode has
// waiting are journaled with one write and one fsync.
func BenchmarkAddBatch64(b *testing.B) {
	j, f := benchJournal(b)
	start := f.syncCount()
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		es := make([]Entry, 0, 64)
		for k := i; k < i+64 && k < b.N; k++ {
			es = append(es, Entry{ID: fmt.Sprint("msg:", k), User: "ada", Data: benchData})
		}
		for _, err := range j.Add(es...) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportSyncs(b, f, start)
}

// BenchmarkMessage is one message's whole journal life (add, post, done),
// by 64 concurrent callers, as a burst is answered: the group commit shares
// fsyncs between them.
func BenchmarkMessage(b *testing.B) {
	j, f := benchJournal(b)
	start := f.syncCount()
	var n sync.Mutex
	next := 0
	b.SetParallelism(32) // × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Lock()
			next++
			id := fmt.Sprint("msg:", next)
			n.Unlock()
			if err := j.Add(Entry{ID: id, User: "ada", Data: benchData})[0]; err != nil {
				b.Error(err)
				return
			}
			j.Start(id)
			j.Posting(id, "Noted.")
			j.Done(id)
		}
	})
	reportSyncs(b, f, start)
}

// A message whose add is still being written is not forgotten (it was
// not acknowledged yet); once durable, it is.
func TestForgetWaitsForDurable(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	w.faults.set(func(f *faults) { f.holdSync, f.heldSyncs = release, held })
	done := make(chan error, 1)
	go func() { done <- j.Add(msg("m1"))[0] }()
	<-held
	if n := j.Forget("alice"); n != 0 {
		t.Errorf("Forget of a message being written = %d", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := j.Forget("alice"); n != 1 {
		t.Errorf("Forget = %d", n)
	}
}

// Two adds in the file that share a key (a redelivery written by an older
// version) are one message.
func TestReplayDuplicateKeys(t *testing.T) {
	w := newWorld(t)
	os.MkdirAll(w.dir, 0o700)
	lines := `{"op":"add","id":"m1","keys":["event:E1"],"data":{}}` + "\n" +
		`{"op":"add","id":"m2","keys":["event:E1"],"data":{}}` + "\n" +
		`{"op":"add","id":"m3","keys":["","client:C3"],"data":{}}` + "\n" +
		`{"op":"done","id":"m3","keys":["","client:C3"]}` + "\n"
	if err := os.WriteFile(w.path(), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	j := w.open(t)
	if got := ids(j.Pending()); got != "m1" {
		t.Errorf("pending %s", got)
	}
}

// A rewrite that failed is tried again only once the file has doubled,
// not at every write.
func TestFailedRewriteBacksOff(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	w.faults.set(func(f *faults) { f.open = syscall.EMFILE })
	big := json.RawMessage(`"` + strings.Repeat("x", 8000) + `"`)
	for i := range 200 { // 1.6 MB: past minCompact, below twice it plus minCompact
		e := msg(fmt.Sprint("m", i))
		e.Data = big
		add(t, j, e)
	}
	if n := strings.Count(w.logs.String(), "cannot rewrite the journal"); n != 1 {
		t.Errorf("%d failed rewrites", n)
	}
}

// ForgetFile drops a user's queued messages from a journal no adapter has
// open, for `mnemo memory forget` while nothing serves.
func TestForgetFile(t *testing.T) {
	w := newWorld(t)
	if n, err := ForgetFile(w.dir, "slack", "alice"); n != 0 || err != nil {
		t.Fatalf("ForgetFile without a journal = %d, %v", n, err)
	}
	j := w.open(t)
	bob := msg("b1")
	bob.User = "bob"
	add(t, j, msg("a1"), bob)
	j.Close()
	name := strings.TrimSuffix(filepath.Base(j.Path()), ".jsonl")
	if n, err := ForgetFile(w.dir, name, "alice"); n != 1 || err != nil {
		t.Fatalf("ForgetFile = %d, %v; want 1", n, err)
	}
	j = w.open(t)
	if got := ids(j.Pending()); got != "b1" {
		t.Errorf("pending after ForgetFile: %s", got)
	}
	j.Close()
	if err := os.WriteFile(filepath.Join(w.dir, "x.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w.dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(w.dir, 0o700)
	if os.Geteuid() != 0 {
		if _, err := ForgetFile(w.dir, "x", "alice"); err == nil {
			t.Error("ForgetFile on a read-only folder gave no error")
		}
	}
}

// The messages a streamed reply shows are pending after a restart with
// their message (with or without the reply decided), also after the
// journal is rewritten; more than a reply may have are refused, and a
// draft line naming too many is skipped.
func TestDrafted(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j, msg("m1"), msg("m2"))
	if err := j.Drafted("m1", []string{"p1", "p2"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Drafted("m2", []string{"q1"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Posting("m2", "reply"); err != nil {
		t.Fatal(err)
	}
	if err := j.Drafted("m1", make([]string, maxDrafts+1)); err == nil {
		t.Error("too many drafts taken")
	}
	if err := j.Drafted("gone", []string{"x"}); err != nil {
		t.Errorf("a message not held: %v", err)
	}
	j.Close()
	j = w.open(t)
	check := func(what string, es []Entry) {
		t.Helper()
		if len(es) != 2 || !slices.Equal(es[0].Drafts, []string{"p1", "p2"}) || es[0].Posting ||
			!slices.Equal(es[1].Drafts, []string{"q1"}) || !es[1].Posting {
			t.Errorf("%s: pending %+v", what, es)
		}
	}
	check("after a restart", j.Pending())
	j.mu.Lock()
	err := j.compactLocked()
	j.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	check("after a rewrite", w.open(t).Pending())
	if _, err := parseRecord([]byte(`{"op":"draft","id":"m","msgs":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}`)); err == nil {
		t.Error("a draft record naming 17 messages parsed")
	}
}

// The journal is opened through its folder's root: a journal file that is
// a link out of the folder is refused at Open, its target never read into
// the queue nor appended to.
func TestJournalLinkedOutIsRefused(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "slack.jsonl")); err != nil {
		t.Fatal(err)
	}
	j, err := Open(Options{Dir: dir, Name: "slack"})
	if err == nil {
		j.Close()
		t.Fatal("a journal linked out of its folder was opened")
	}
	if !durable.IsEscape(err) || !strings.Contains(err.Error(), "intake: read the journal") {
		t.Errorf("Open = %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
