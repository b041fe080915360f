package intake

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// appendLocked adds r to the batch the writer takes next.
func (j *Journal) appendLocked(r record) *durable.Batch { return j.file.Add(r.encode()) }

// commit returns once b is written and fsynced (or failed): callers that
// come meanwhile share a write and an fsync (durable.Log's group commit).
// A failure is logged with the file and the cause. Then, with no batch
// waiting, the file is rewritten when it has grown well past what it
// holds.
func (j *Journal) commit(b *durable.Batch) error {
	err := j.file.Commit(b)
	if err != nil {
		j.log.Error("intake: cannot write the journal; the messages in this write are not acknowledged", "file", j.path, "error", err)
		err = j.failed(err)
	}
	j.mu.Lock()
	if !j.closed && j.path != "" && j.file.Size() >= j.compactAt {
		j.rewriteLocked()
	}
	j.mu.Unlock()
	return err
}

// failed is the error of a write that failed with err.
func (j *Journal) failed(err error) error {
	if errors.Is(err, durable.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("intake: %w", err)
}

// purge rewrites the file with only what it still holds, so that what a
// forgotten user's dropped messages said is gone from the disk too.
func (j *Journal) purge() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed && j.path != "" {
		j.rewriteLocked()
	}
}

// rewriteLocked compacts the file, logging a failure: the journal goes on
// appending to the file it has.
func (j *Journal) rewriteLocked() {
	err := j.compactLocked()
	switch {
	case err == nil:
	case renamed(err):
		j.log.Warn("intake: cannot fsync the journal folder after a rewrite; retrying before the next write", "file", j.path, "error", err)
	default:
		j.log.Warn("intake: cannot rewrite the journal; appending to it still", "file", j.path, "error", err)
		j.compactAt = 2*j.file.Size() + minCompact
	}
}

// renamed: err is a rewrite's that happened, whose folder fsync failed
// (retried before the next write counts).
func renamed(err error) bool {
	var de *durable.Error
	return errors.As(err, &de) && de.Op == durable.FsyncDir
}

// compactLocked replaces the file by the pending messages and the
// remembered keys (durable.Log.Replace: a temp file, fsynced, renamed
// over it, the folder fsynced). Called with j.mu held, so no record is
// added meanwhile and the memory state is what is durable.
func (j *Journal) compactLocked() error {
	var buf bytes.Buffer
	for _, r := range j.done.records(j.now()) {
		buf.Write(r.encode())
	}
	for _, it := range j.sorted() {
		buf.Write(record{Op: opAdd, ID: it.ID, Keys: it.Keys, User: it.User, At: it.At, Data: it.Data}.encode())
		if len(it.Drafts) > 0 {
			buf.Write(record{Op: opDraft, ID: it.ID, Msgs: it.Drafts}.encode())
		}
		if it.Posting {
			buf.Write(record{Op: opPost, ID: it.ID, Text: it.Reply}.encode())
		}
	}
	err := j.file.Replace(buf.Bytes())
	if err == nil || renamed(err) {
		j.compactAt = max(minCompact, 2*j.file.Size())
	}
	if err != nil && !renamed(err) {
		return fmt.Errorf("intake: rewrite the journal %s: %w", j.path, err)
	}
	return err
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
