package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// faults is a Hook for the Log tests: it fails an op while set, and can
// hold the next fsync of the file until released.
type faults struct {
	mu     sync.Mutex
	fail   map[string]error
	ops    []string
	hold   chan struct{} // the next file fsync waits for it to close
	held   chan struct{} // told when a fsync is held
	halfOn string        // a failing write to this file leaves half a line first
}

func newFaults() *faults { return &faults{fail: map[string]error{}} }

func (f *faults) set(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, op)
	} else {
		f.fail[op] = err
	}
}

func (f *faults) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, o := range f.ops {
		if o == op {
			n++
		}
	}
	return n
}

func (f *faults) hook(op, name string) error {
	f.mu.Lock()
	f.ops = append(f.ops, op)
	err := f.fail[op]
	hold, held := f.hold, f.held
	if op == Fsync && hold != nil {
		f.hold = nil
	} else {
		hold = nil
	}
	half := f.halfOn
	f.mu.Unlock()
	if hold != nil {
		held <- struct{}{}
		<-hold
	}
	if op == Write && err != nil && half != "" && name == half {
		w, _ := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		w.WriteString(`{"half`)
		w.Close()
	}
	return err
}

type logWorld struct {
	dir  string
	f    *faults
	log  *Log
	path string
}

func newLogWorld(t *testing.T) *logWorld {
	dir := t.TempDir()
	f := newFaults()
	l := NewLog(Dir(dir), "j.jsonl", LogOptions{Hook: f.hook})
	t.Cleanup(func() { l.Close() })
	return &logWorld{dir: dir, f: f, log: l, path: filepath.Join(dir, "j.jsonl")}
}

func (w *logWorld) commit(t *testing.T, lines string) {
	t.Helper()
	if err := w.log.Commit(w.log.Add([]byte(lines))); err != nil {
		t.Fatal(err)
	}
}

// A Log of no FS keeps nothing and fails nothing.
func TestLogInMemory(t *testing.T) {
	l := NewLog(nil, "", LogOptions{})
	b := l.Add([]byte("{}\n"))
	if !b.Durable() || l.Commit(b) != nil || l.Write([]byte("{}\n")) != nil || l.Sync() != nil ||
		l.Replace(nil) != nil || l.Remove() != nil || l.Close() != nil || l.Name() != "" || l.Size() != 0 {
		t.Error("a memory-only Log did something")
	}
}

// The first append creates the file; its first fsync fsyncs the folder
// too, and later ones do not.
func TestLogCreates(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{a}\n")
	w.commit(t, "{b}\n")
	if got := read(t, w.path); got != "{a}\n{b}\n" {
		t.Errorf("file %q", got)
	}
	if got := strings.Join(w.f.ops, " "); got != "create write fsync fsyncdir write fsync" {
		t.Errorf("ops %s", got)
	}
	if w.log.Size() != 8 || w.log.Name() != w.path {
		t.Errorf("Size %d Name %q", w.log.Size(), w.log.Name())
	}
	fi, _ := os.Stat(w.path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

// An existing file is appended to; a folder where it should be is refused.
func TestLogOpen(t *testing.T) {
	w := newLogWorld(t)
	put(t, w.path, "{old}\n")
	w.commit(t, "{new}\n")
	if got := read(t, w.path); got != "{old}\n{new}\n" {
		t.Errorf("file %q", got)
	}
	os.MkdirAll(filepath.Join(w.dir, "d.jsonl"), 0o700)
	l := NewLog(Dir(w.dir), "d.jsonl", LogOptions{})
	if err := l.Write([]byte("{}\n")); !IsDisk(err) || !strings.Contains(err.Error(), "open journal "+filepath.Join(w.dir, "d.jsonl")) {
		t.Errorf("a folder: %v", err)
	}
	if err := os.Symlink(os.DevNull, filepath.Join(w.dir, "dev.jsonl")); err == nil {
		l = NewLog(Dir(w.dir), "dev.jsonl", LogOptions{})
		if err := l.Write([]byte("{}\n")); !IsDisk(err) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a device: %v", err)
		}
	}
	w.f.set(Create, syscall.EMFILE)
	l = NewLog(Dir(w.dir), "e.jsonl", LogOptions{Hook: w.f.hook})
	if err := l.Write([]byte("{}\n")); !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "open journal "+filepath.Join(w.dir, "e.jsonl")) {
		t.Errorf("open fails: %v", err)
	}
}

// Group commit: while one fsync runs, the lines that come meanwhile wait
// and go in the next write together; nothing returns before it is durable.
func TestLogGroupCommit(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{first}\n")
	start := w.f.count(Fsync)
	release, held := make(chan struct{}), make(chan struct{}, 1)
	w.f.mu.Lock()
	w.f.hold, w.f.held = release, held
	w.f.mu.Unlock()
	var wg sync.WaitGroup
	commit := func(line string, b *Batch) {
		wg.Go(func() {
			if err := w.log.Commit(b); err != nil || !b.Durable() {
				t.Errorf("Commit(%s) = %v", line, err)
			}
		})
	}
	commit("{held}", w.log.Add([]byte("{held}\n")))
	<-held // the writer's fsync is running
	const n = 20
	for i := range n {
		line := fmt.Sprintf("{m%d}", i)
		b := w.log.Add([]byte(line + "\n")) // queued at once, behind the held write
		if b.Durable() {
			t.Fatal("a queued batch is durable")
		}
		commit(line, b)
	}
	if got := w.log.Queued(); got != n {
		t.Errorf("Queued = %d; want %d", got, n)
	}
	close(release)
	wg.Wait()
	if got := w.f.count(Fsync) - start; got != 2 {
		t.Errorf("%d fsyncs for %d commits; want 2", got, n+1)
	}
	if got := strings.Count(read(t, w.path), "\n"); got != n+2 {
		t.Errorf("%d lines", got)
	}
	if w.log.Queued() != 0 {
		t.Error("lines left queued")
	}
}

// A failed write or fsync is cut back; when the cut fails too, the next
// append starts on a new line, and the Log knows the size again after it.
func TestLogCutBack(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{a}\n")
	w.f.halfOn = w.path
	for _, op := range []string{Write, Fsync} {
		w.f.set(op, syscall.EIO)
		err := w.log.Commit(w.log.Add([]byte("{lost}\n")))
		var de *Error
		if !errors.As(err, &de) || de.Op != op || !strings.Contains(err.Error(), op+" "+w.path) {
			t.Errorf("%s fault: %v", op, err)
		}
		w.f.set(op, nil)
		if got := read(t, w.path); got != "{a}\n" {
			t.Errorf("after a failed %s: %q", op, got)
		}
	}
	w.f.set(Write, syscall.ENOSPC)
	w.f.set(Truncate, syscall.EIO)
	if err := w.log.Write([]byte("{lost}\n")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write = %v", err)
	}
	w.f.set(Write, nil)
	w.f.set(Truncate, nil)
	w.commit(t, "{b}\n")
	if got := read(t, w.path); got != "{a}\n{\"half\n{b}\n" {
		t.Errorf("after a failed cut: %q", got)
	}
	if w.log.Size() != int64(len(read(t, w.path))) {
		t.Errorf("Size %d", w.log.Size())
	}
	lines, skips := scanAll(read(t, w.path))
	if len(lines) != 2 || len(skips) != 1 {
		t.Errorf("the partial line is not one Scan skips: %q %v", lines, skips)
	}
}

// Write leaves the fsync to Sync, which covers everything written; a
// failed Sync is retried whole by the next.
func TestLogWriteAndSync(t *testing.T) {
	w := newLogWorld(t)
	if err := w.log.Sync(); err != nil || len(w.f.ops) != 0 {
		t.Fatalf("Sync of nothing: %v %v", err, w.f.ops)
	}
	for _, l := range []string{"{a}\n", "{b}\n"} {
		if err := w.log.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	w.f.set(FsyncDir, syscall.EIO)
	if err := w.log.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v", err)
	}
	w.f.set(FsyncDir, nil)
	w.f.set(Fsync, syscall.EIO)
	if err := w.log.Sync(); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "fsync "+w.path) {
		t.Fatalf("Sync = %v", err)
	}
	w.f.set(Fsync, nil)
	if err := w.log.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.f.ops, " "); got != "create write write fsync fsyncdir fsync fsync fsyncdir" {
		t.Errorf("ops %s", got)
	}
	if err := w.log.Sync(); err != nil || w.f.count(Fsync) != 3 {
		t.Errorf("a clean Sync fsynced: %v", err)
	}
}

// Replace compacts: the file holds the new content, appends go to it, the
// old handle is gone; Remove deletes the file and the next append makes
// it again.
func TestLogReplaceAndRemove(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{a}\n{b}\n{c}\n")
	if err := w.log.Replace([]byte("{b}\n")); err != nil {
		t.Fatal(err)
	}
	w.commit(t, "{d}\n")
	if got := read(t, w.path); got != "{b}\n{d}\n" {
		t.Errorf("after Replace: %q", got)
	}
	if w.log.Size() != 8 {
		t.Errorf("Size %d", w.log.Size())
	}
	if err := w.log.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.path); !os.IsNotExist(err) || w.log.Size() != 0 {
		t.Errorf("after Remove: %v, Size %d", err, w.log.Size())
	}
	w.commit(t, "{e}\n")
	if got := read(t, w.path); got != "{e}\n" {
		t.Errorf("after Remove and an append: %q", got)
	}
	if left := temps(t, w.dir); left != nil {
		t.Errorf("temp files left: %v", left)
	}
}

// Per-user purge is a Replace with the person's records left out: no byte
// of them stays in the file.
func TestLogPurge(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, `{"user":"ada","text":"secret"}`+"\n"+`{"user":"bob","text":"hi"}`+"\n")
	var keep []byte
	Scan([]byte(read(t, w.path)), func(line []byte) error {
		if !strings.Contains(string(line), `"user":"ada"`) {
			keep = append(append(keep, line...), '\n')
		}
		return nil
	}, nil)
	if err := w.log.Replace(keep); err != nil {
		t.Fatal(err)
	}
	if got := read(t, w.path); strings.Contains(got, "ada") || strings.Contains(got, "secret") || !strings.Contains(got, "bob") {
		t.Errorf("after the purge: %q", got)
	}
}

// A crash at each step of a compaction leaves the whole old file or the
// whole new one, never a mix, and at most a temp file for the next start
// to remove.
func TestLogReplaceCrashPoints(t *testing.T) {
	const old, new = "{a}\n{b}\n{c}\n", "{c}\n"
	// A run without a crash counts the steps.
	w := newLogWorld(t)
	w.commit(t, old)
	before := len(w.f.ops)
	if err := w.log.Replace([]byte(new)); err != nil {
		t.Fatal(err)
	}
	steps := w.f.ops[before:]
	if strings.Join(steps, " ") != "create write fsync rename fsyncdir" {
		t.Fatalf("steps %v", steps)
	}
	crash := errors.New("killed")
	for n := range steps {
		t.Run(fmt.Sprintf("before-%d-%s", n+1, steps[n]), func(t *testing.T) {
			w := newLogWorld(t)
			w.commit(t, old)
			w.f.set(steps[n], crash) // the process dies there: nothing after it runs
			if err := w.log.Replace([]byte(new)); !errors.Is(err, crash) {
				t.Fatalf("Replace = %v", err)
			}
			got := read(t, w.path)
			want := old
			if n > 3 { // after the rename
				want = new
			}
			if got != want {
				t.Errorf("file %q; want %q", got, want)
			}
		})
	}
}

// A folder fsync that fails after the rename is an *Error of FsyncDir,
// and is retried before the next append counts as durable.
func TestLogReplaceFolderRetry(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{a}\n")
	w.f.set(FsyncDir, syscall.EIO)
	err := w.log.Replace([]byte("{b}\n"))
	var de *Error
	if !errors.As(err, &de) || de.Op != FsyncDir {
		t.Fatalf("Replace = %v", err)
	}
	if err := w.log.Commit(w.log.Add([]byte("{c}\n"))); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "fsync folder "+w.dir) {
		t.Errorf("an append while the rename is not durable = %v", err)
	}
	w.f.set(FsyncDir, nil)
	n := w.f.count(FsyncDir)
	w.commit(t, "{c}\n")
	w.commit(t, "{d}\n")
	if got := w.f.count(FsyncDir) - n; got != 1 {
		t.Errorf("%d folder fsyncs after the retry; want 1", got)
	}
	if got := read(t, w.path); got != "{b}\n{c}\n{d}\n" {
		t.Errorf("file %q", got)
	}
}

// Replace waits for the appends in progress: a commit whose fsync is held
// is written before the rewrite starts.
func TestLogReplaceWaitsForWriter(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{a}\n")
	release, held := make(chan struct{}), make(chan struct{}, 1)
	w.f.mu.Lock()
	w.f.hold, w.f.held = release, held
	w.f.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- w.log.Commit(w.log.Add([]byte("{b}\n"))) }()
	<-held
	replaced := make(chan error, 1)
	go func() { replaced <- w.log.Replace([]byte("{a}\n{b}\n{new}\n")) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-replaced; err != nil {
		t.Fatal(err)
	}
	w.commit(t, "{c}\n")
	if got := read(t, w.path); got != "{a}\n{b}\n{new}\n{c}\n" {
		t.Errorf("file %q", got)
	}
}

// After Close every append fails with ErrClosed; Close may be called again.
func TestLogClose(t *testing.T) {
	w := newLogWorld(t)
	w.commit(t, "{a}\n")
	b := w.log.Add([]byte("{late}\n"))
	if err := w.log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.log.Commit(b); !errors.Is(err, ErrClosed) {
		t.Errorf("a batch committed after Close: %v", err)
	}
	if err := w.log.Write([]byte("{x}\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := w.log.Replace([]byte("{x}\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Replace after Close: %v", err)
	}
	if err := w.log.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := read(t, w.path); got != "{a}\n" {
		t.Errorf("file %q", got)
	}
}

// An append that comes while a Replace runs waits for it and goes to the
// new file.
func TestLogAppendWaitsForReplace(t *testing.T) {
	dir := t.TempDir()
	inReplace, release := make(chan struct{}), make(chan struct{})
	hook := func(op, name string) error {
		if op == Create && IsTemp(name) {
			close(inReplace)
			<-release
		}
		return nil
	}
	l := NewLog(Dir(dir), "j.jsonl", LogOptions{Hook: hook})
	defer l.Close()
	if err := l.Commit(l.Add([]byte("{a}\n"))); err != nil {
		t.Fatal(err)
	}
	replaced := make(chan error, 1)
	go func() { replaced <- l.Replace([]byte("{new}\n")) }()
	<-inReplace
	committed, written := make(chan error, 1), make(chan error, 1)
	go func() { committed <- l.Commit(l.Add([]byte("{b}\n"))) }()
	go func() { written <- l.Write([]byte("{c}\n")) }()
	close(release)
	for _, c := range []chan error{replaced, committed, written} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	got := read(t, filepath.Join(dir, "j.jsonl"))
	if got != "{new}\n{b}\n{c}\n" && got != "{new}\n{c}\n{b}\n" {
		t.Errorf("file %q", got)
	}
}

// handles is a Dir that keeps every file it opens, so a test can tell
// whether each was closed.
type handles struct {
	Dir
	files []*os.File
}

func (h *handles) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := h.Dir.OpenFile(name, flag, perm)
	if err == nil {
		h.files = append(h.files, f)
	}
	return f, err
}

// open counts the handles not closed yet.
func (h *handles) open() int {
	n := 0
	for _, f := range h.files {
		if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
			n++
		}
	}
	return n
}

// A Replace closes the handle it replaces, a Remove the file's handle,
// and Close the last: a journal rewritten every compaction for months
// holds one descriptor, not one per compaction.
func TestLogClosesWhatItReplaces(t *testing.T) {
	h := &handles{Dir: Dir(t.TempDir())}
	l := NewLog(h, "j.jsonl", LogOptions{})
	if err := l.Commit(l.Add([]byte("{a}\n"))); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Replace([]byte("{b}\n")); err != nil {
			t.Fatal(err)
		}
		if n := h.open(); n != 1 {
			t.Fatalf("after Replace %d: %d handles open, want 1 (of %d opened)", i+1, n, len(h.files))
		}
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if n := h.open(); n != 0 {
		t.Fatalf("after Remove: %d handles open", n)
	}
	if err := l.Commit(l.Add([]byte("{c}\n"))); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := h.open(); n != 0 {
		t.Fatalf("after Close: %d handles open", n)
	}
}
