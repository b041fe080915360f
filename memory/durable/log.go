package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync"
)

// ErrClosed is returned by a Log's writes after Close.
var ErrClosed = errors.New("the journal is closed")

// Log is one append-only journal file (JSON lines, one record a line: the
// schema is its user's). It is safe for concurrent use.
//
// Two ways to append: Add and Commit share one write and one fsync
// between concurrent callers (group commit: the first caller to find no
// writer writes batch after batch until none is left, and nothing returns
// before its own lines are durable); Write appends at once and leaves the
// fsync to a later Sync (a caller that batches fsyncs by time). A failed
// append is cut back, so no line that was not acknowledged stays; when the
// cut fails too, the next append starts on a new line, so the partial one
// is a line Scan skips. The file is opened (created) by the first append;
// a creation or a Replace is made durable with a folder fsync, retried
// before the next append counts when it failed.
//
// A Log of a nil FS keeps nothing: every append succeeds at once (a
// journal in memory only).
type Log struct {
	fsys  FS
	name  string
	shown string // name as errors and the Hook show it
	hook  Hook
	perm  fs.FileMode

	// syncMu is held by whoever fsyncs, replaces or closes f outside mu,
	// so a Sync never fsyncs a file being replaced; Write does not take
	// it, so it never waits for a Sync (only for a Commit's write).
	syncMu sync.Mutex

	mu        sync.Mutex
	idle      *sync.Cond // broadcast when the writer or an exclusive step ends
	open      *Batch     // lines waiting for the writer
	writing   bool       // a Commit caller is the writer: it takes every batch waiting
	appending bool       // a Write is running
	exclusive bool       // a Replace, Remove or Close is running
	closed    bool

	f        *os.File // nil: not open
	size     int64    // bytes in the file
	dirty    bool     // written since its last fsync
	dirDirty bool     // created or renamed since the folder's last fsync
	torn     bool     // a cut failed: the file may end in a partial line
}

// Batch is lines written with one write and one fsync.
type Batch struct {
	buf   []byte
	lines int
	done  chan struct{} // closed once written (or failed)
	err   error
}

// written is the batch of a Log that keeps nothing.
var written = func() *Batch { b := &Batch{done: make(chan struct{})}; close(b.done); return b }()

// Wait waits until b is written (by its Commit) and returns why it could
// not be.
func (b *Batch) Wait() error {
	<-b.done
	return b.err
}

// Durable reports, without waiting, whether b was written and fsynced.
func (b *Batch) Durable() bool {
	select {
	case <-b.done:
		return b.err == nil
	default:
		return false
	}
}

// LogOptions configures a Log.
type LogOptions struct {
	Hook Hook        // before each disk operation
	Perm fs.FileMode // of the file when created; 0 → 0o600
}

// NewLog is the journal name in fsys (nil: kept in memory only), opened by
// its first append.
func NewLog(fsys FS, name string, o LogOptions) *Log {
	if o.Perm == 0 {
		o.Perm = 0o600
	}
	l := &Log{fsys: fsys, name: name, hook: o.Hook, perm: o.Perm}
	if fsys != nil {
		l.shown = display(fsys, name)
	}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// Name is the file as errors show it ("" in memory only).
func (l *Log) Name() string { return l.shown }

// Size is the number of bytes in the file (0 before it is opened).
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Queued is the number of lines added and not yet taken by the writer.
func (l *Log) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		return 0
	}
	return l.open.lines
}

// Add queues lines (each ending in '\n') for the next group write and
// returns their batch; Commit it. Lines added in one order are written
// in that order, so a caller that keeps state beside the journal adds
// under its own lock and commits outside it.
func (l *Log) Add(lines []byte) *Batch {
	if l.fsys == nil {
		return written
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		l.open = &Batch{done: make(chan struct{})}
	}
	l.open.buf = append(l.open.buf, lines...)
	l.open.lines += bytes.Count(lines, []byte{'\n'})
	return l.open
}

// Commit returns once b is written and fsynced, or failed: the first
// caller to find no writer becomes it and writes batch after batch until
// none is left, so callers that come meanwhile share a write and an fsync.
func (l *Log) Commit(b *Batch) error {
	l.mu.Lock()
	for l.exclusive || l.appending {
		l.idle.Wait()
	}
	if l.writing {
		l.mu.Unlock()
		return b.Wait()
	}
	l.writing = true
	for l.open != nil {
		cur := l.open
		l.open = nil
		l.mu.Unlock()
		err := l.append(cur.buf, true)
		l.mu.Lock()
		cur.err, cur.buf = err, nil
		close(cur.done)
	}
	l.writing = false
	l.idle.Broadcast()
	l.mu.Unlock()
	return b.Wait()
}

// Write appends lines at once, without an fsync: Sync makes them durable.
// A failed write is cut back.
func (l *Log) Write(lines []byte) error {
	if l.fsys == nil {
		return nil
	}
	l.mu.Lock()
	for l.writing || l.appending || l.exclusive {
		l.idle.Wait()
	}
	l.appending = true
	l.mu.Unlock()
	err := l.append(lines, false)
	l.mu.Lock()
	l.appending = false
	l.idle.Broadcast()
	l.mu.Unlock()
	return err
}

// append writes buf (and, with sync, fsyncs the file, and the folder when
// a creation or rename is not durable yet); on a failure the file is cut
// back to where it was. The caller holds the writer role.
func (l *Log) append(buf []byte, sync bool) error {
	l.mu.Lock()
	err := l.openLocked()
	f, size, torn, dirDirty := l.f, l.size, l.torn, l.dirDirty
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if torn {
		buf = append([]byte{'\n'}, buf...) // never extend a partial line
	}
	err = l.put(f, buf, sync, dirDirty)
	cut := err != nil && l.hook.At(Truncate, l.shown) == nil && f.Truncate(size) == nil
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.torn = l.torn || !cut
		return err
	case l.torn:
		if fi, serr := f.Stat(); serr == nil {
			l.size = fi.Size()
		}
		l.torn = false
	default:
		l.size += int64(len(buf))
	}
	l.dirty = !sync
	l.dirDirty = l.dirDirty && !sync
	return nil
}

// put writes buf to f and, with sync, makes it durable.
func (l *Log) put(f *os.File, buf []byte, sync, dirDirty bool) error {
	if err := l.hook.At(Write, l.shown); err != nil {
		return &Error{Op: Write, Name: l.shown, Err: err}
	}
	if _, err := f.Write(buf); err != nil {
		return &Error{Op: Write, Name: l.shown, Err: err}
	}
	if !sync {
		return nil
	}
	err := l.hook.At(Fsync, l.shown)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return &Error{Op: Fsync, Name: l.shown, Err: err}
	}
	if dirDirty {
		return SyncDir(l.fsys, path.Dir(l.name), l.hook)
	}
	return nil
}

// openLocked opens the file for appending, creating it (then its folder
// needs an fsync too). l.mu held.
func (l *Log) openLocked() error {
	if l.f != nil {
		return nil
	}
	if l.closed {
		return ErrClosed
	}
	var f *os.File
	err := l.hook.At(Create, l.shown)
	if err == nil {
		f, err = l.fsys.OpenFile(l.name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, l.perm)
	}
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = l.fsys.OpenFile(l.name, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return &Error{Op: opOpen, Name: l.shown, Err: err, what: "open journal"}
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file")
	}
	if err != nil {
		f.Close()
		return &Error{Op: opOpen, Name: l.shown, Err: err, what: "open journal"}
	}
	l.f, l.size, l.torn = f, fi.Size(), false
	l.dirDirty = l.dirDirty || created
	return nil
}

// Sync makes what Write wrote durable: an fsync of the file (and of the
// folder when the file is new). Lines written meanwhile do not wait for
// it; they are covered by the next one. After a failure the kernel may
// have dropped the written pages: the caller rewrites the file (Replace).
func (l *Log) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	f, dirty, dirDirty := l.f, l.dirty, l.dirDirty
	l.dirty, l.dirDirty = false, false
	l.mu.Unlock()
	if f == nil || (!dirty && !dirDirty) {
		return nil
	}
	err := l.hook.At(Fsync, l.shown)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		err = &Error{Op: Fsync, Name: l.shown, Err: err}
	} else if dirDirty {
		err = SyncDir(l.fsys, path.Dir(l.name), l.hook)
	}
	if err != nil {
		l.mu.Lock()
		l.dirty, l.dirDirty = l.dirty || dirty, l.dirDirty || dirDirty
		l.mu.Unlock()
	}
	return err
}

// exclusively runs step with no writer, no Sync and no batch waiting.
func (l *Log) exclusively(step func() error) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	for l.writing || l.appending || l.exclusive || l.open != nil {
		l.idle.Wait()
	}
	l.exclusive = true
	l.mu.Unlock()
	err := step()
	l.mu.Lock()
	l.exclusive = false
	l.idle.Broadcast()
	l.mu.Unlock()
	return err
}

// Replace compacts the journal: data (what it still holds, as its schema
// writes it; for a purge, without a person's records) replaces the file
// atomically (WriteFile's steps), and the new file is the one appended
// to. It waits for the appends in progress, so the caller snapshots its
// state under the lock it adds under and calls Replace holding it. Before
// the rename a failure leaves the file as it was; after it, a failed
// folder fsync is an *Error of FsyncDir and is retried before the next
// append counts.
func (l *Log) Replace(data []byte) error {
	if l.fsys == nil {
		return nil
	}
	return l.exclusively(func() error {
		if l.closed {
			return ErrClosed
		}
		f, tmp, err := writeTemp(l.fsys, l.name, data, l.perm, l.hook, true)
		if err != nil {
			return err
		}
		if err = rename(l.fsys, tmp, l.name, l.hook); err != nil {
			f.Close()
			return err
		}
		l.mu.Lock()
		old := l.f
		l.f, l.size, l.torn, l.dirty, l.dirDirty = f, int64(len(data)), false, false, true
		l.mu.Unlock()
		if old != nil {
			old.Close()
		}
		if err := SyncDir(l.fsys, path.Dir(l.name), l.hook); err != nil {
			return err
		}
		l.mu.Lock()
		l.dirDirty = false
		l.mu.Unlock()
		return nil
	})
}

// Remove deletes the file (nothing is left to keep) and fsyncs the
// folder; the next append creates it again.
func (l *Log) Remove() error {
	if l.fsys == nil {
		return nil
	}
	return l.exclusively(func() error {
		l.closeFile()
		return RemoveFile(l.fsys, l.name, l.hook)
	})
}

// closeFile closes the handle; the next append opens the file again.
func (l *Log) closeFile() {
	l.mu.Lock()
	f := l.f
	l.f, l.size, l.dirty, l.torn = nil, 0, false, false
	l.mu.Unlock()
	if f != nil {
		_ = f.Close() // what was written is in the file whatever Close says
	}
}

// Close waits for the append in progress and closes the file; what it
// holds stays for the next start. Appends fail with ErrClosed after it.
// It may be called more than once.
func (l *Log) Close() error {
	if l.fsys == nil {
		return nil
	}
	var err error
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	// a batch added before Close is still written (or fails with
	// ErrClosed if its Commit comes after)
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	for l.writing || l.appending || l.exclusive {
		l.idle.Wait()
	}
	f := l.f
	l.f = nil
	l.mu.Unlock()
	if f != nil {
		if cerr := f.Close(); cerr != nil {
			err = &Error{Op: Close, Name: l.shown, Err: cerr}
		}
	}
	return err
}

// opOpen is the Op of an Error opening the journal.
const opOpen = "open"
