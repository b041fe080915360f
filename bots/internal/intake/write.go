package intake

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// appendLocked adds r to the batch the writer takes next.
func (j *Journal) appendLocked(r record) *batch {
	if j.open == nil {
		j.open = &batch{done: make(chan struct{})}
	}
	j.open.buf = append(j.open.buf, r.encode()...)
	return j.open
}

// commit returns once b is written and fsynced (or failed). The first
// caller to find no writer becomes it and writes batch after batch until
// none is left, so callers that come meanwhile share a write and an fsync.
func (j *Journal) commit(b *batch) error {
	j.mu.Lock()
	if j.writing {
		j.mu.Unlock()
		<-b.done
		return b.err
	}
	j.writing = true
	for j.open != nil {
		cur := j.open
		j.open = nil
		j.mu.Unlock()
		err := j.write(cur.buf)
		j.mu.Lock()
		cur.err, cur.buf = err, nil
		close(cur.done)
		if j.open == nil && j.f != nil && j.size >= j.compactAt {
			if err := j.compactLocked(); err != nil {
				j.log.Warn("intake: cannot rewrite the journal; appending to it still", "file", j.path, "error", err)
				j.compactAt = 2*j.size + minCompact
			}
		}
	}
	j.writing = false
	j.idle.Broadcast()
	j.mu.Unlock()
	<-b.done
	return b.err
}

// write appends buf to the file and fsyncs it. On a failure the file is
// cut back, so that nothing that was not acknowledged stays; the error is
// logged with the file and the cause.
func (j *Journal) write(buf []byte) error {
	if j.f == nil {
		if j.path != "" {
			return ErrClosed
		}
		return nil // in memory only
	}
	err := j.syncDirIfDirty()
	if err == nil {
		if j.torn {
			buf = append([]byte{'\n'}, buf...) // never extend a partial line
		}
		if _, err = j.f.Write(buf); err != nil {
			err = fmt.Errorf("write %s: %w", j.path, err)
		} else if err = j.f.Sync(); err != nil {
			err = fmt.Errorf("fsync %s: %w", j.path, err)
		}
		if err != nil && j.f.Truncate(j.size) != nil {
			j.torn = true
		}
	}
	if err != nil {
		j.log.Error("intake: cannot write the journal; the messages in this write are not acknowledged", "file", j.path, "error", err)
		return fmt.Errorf("intake: %w", err)
	}
	j.size += int64(len(buf))
	if j.torn {
		if fi, err := j.f.Stat(); err == nil {
			j.size = fi.Size()
		}
		j.torn = false
	}
	return nil
}

// syncDirIfDirty retries the folder fsync a rewrite could not do: until
// it succeeds the rename may not survive a crash, and nothing written
// after it counts as durable.
func (j *Journal) syncDirIfDirty() error {
	if !j.dirDirty {
		return nil
	}
	if err := j.syncDir(); err != nil {
		return err
	}
	j.dirDirty = false
	return nil
}

func (j *Journal) syncDir() error {
	d, err := j.openFile(j.opts.Dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", j.opts.Dir, err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("fsync %s: %w", j.opts.Dir, err)
	}
	return nil
}

// compactLocked replaces the file by the pending messages and the
// remembered keys: a temp file, fsynced, renamed over it, the folder
// fsynced. The temp file's handle becomes the journal's. Called by Open
// and by the writer with no batch waiting, so the memory state is what is
// durable.
func (j *Journal) compactLocked() error {
	var buf bytes.Buffer
	for _, r := range j.done.records(j.now()) {
		buf.Write(r.encode())
	}
	for _, it := range j.sorted() {
		buf.Write(record{Op: opAdd, ID: it.ID, Keys: it.Keys, User: it.User, At: it.At, Data: it.Data}.encode())
		if it.Posting {
			buf.Write(record{Op: opPost, ID: it.ID, Text: it.Reply}.encode())
		}
	}
	tmp := filepath.Join(j.opts.Dir, "."+j.opts.Name+ext+".tmp-"+rand.Text())
	f, err := j.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("intake: rewrite the journal %s: %w", j.path, err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("intake: rewrite the journal %s: %w", j.path, err)
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.size, j.torn = f, int64(buf.Len()), false
	j.compactAt = max(minCompact, 2*j.size)
	if err := j.syncDir(); err != nil {
		j.dirDirty = true // retried before the next write counts
		j.log.Warn("intake: cannot fsync the journal folder after a rewrite; retrying before the next write", "file", j.path, "error", err)
	}
	return nil
}

// ForgetFile drops user's queued messages from the journal Dir/Name.jsonl
// for a process that runs no adapter (`mnemo memory forget` while nothing
// serves), so the next start does not answer them. No journal: 0.
func ForgetFile(dir, name, user string) (int, error) {
	if _, err := os.Stat(filepath.Join(dir, name+".jsonl")); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	j, err := Open(Options{Dir: dir, Name: name})
	if err != nil {
		return 0, err
	}
	n := j.Forget(user)
	return n, j.Close()
}
