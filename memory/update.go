package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"
)

// The one write path every change to a memory file takes: wait out an
// editor, read, compute, and rename into place only over the version read.

// update is the one write path: wait out an editor, read the current
// version, compute the new text, and rename it into place only if the file
// is still what was read — re-reading a few times if it keeps changing.
// commit (when set) is told just before the rename, as kind (or
// ChangeCreate when there was no file).
func (u *User) update(p string, kind ChangeKind, create bool, commit CommitHook, compute func(cur []byte, v Version) ([]byte, error)) (Version, error) {
	return u.updateForgetting(p, kind, create, commit, nil, compute)
}

// updateForgetting is update for a change that may forget lines: compute
// leaves them in *forgot (see forgetting), and the change is made only
// once Options.Forgetting has them.
func (u *User) updateForgetting(p string, kind ChangeKind, create bool, commit CommitHook, forgot *[]string, compute func(cur []byte, v Version) ([]byte, error)) (Version, error) {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	root, ref, err := u.openRoot(create)
	if err != nil {
		return Version{}, err
	}
	defer ref.release()
	if root == nil { // no folder and nothing to create: the file is absent
		_, err := compute(nil, Version{})
		return Version{}, err
	}
	if err := u.waitForEditor(root, p); err != nil {
		return Version{}, err
	}
	var emptySince time.Time
	for attempt := 1; ; attempt++ {
		cur, v, err := currentVersion(root, p)
		if err != nil {
			return Version{}, err
		}
		out, err := compute(cur, v)
		if errors.Is(err, errEmptyOnDisk) {
			if emptySince, err = u.waitForText(p, emptySince); err != nil {
				return Version{}, err
			}
			attempt--
			continue
		}
		if err != nil {
			return Version{}, err
		}
		var lines []string
		if forgot != nil {
			lines = *forgot
		}
		raced, err := u.writeIfUnchanged(root, p, kind, commit, v, out, lines)
		if raced && attempt < conflictRetries {
			continue // re-read and recompute on the new text
		}
		if err != nil {
			return Version{}, err
		}
		return u.wrote(root, p, kind, v, cur, out, lines), nil
	}
}

// waitForText waits a little for a file found empty to get its text back:
// saving in place truncates first, then writes, so update waits for the
// text rather than build on nothing, and never renames over a save under
// way. emptySince is when the file was first found empty (zero the first
// time); the error says when the wait is over (memory.editWait, or the
// store closing).
func (u *User) waitForText(p string, emptySince time.Time) (time.Time, error) {
	now := u.s.clock.Now()
	if emptySince.IsZero() {
		emptySince = now
	}
	if now.Sub(emptySince) >= u.s.opts.EditWait {
		return emptySince, fmt.Errorf("%s %w: it is empty on disk (a save in progress, or emptied by hand); nothing was appended; try again, or delete the empty file", p, ErrConflict)
	}
	if !u.s.sleep(20 * time.Millisecond) {
		return emptySince, fmt.Errorf("%s is empty on disk and the store is closing: %w", p, ErrConflict)
	}
	return emptySince, nil
}

// writeIfUnchanged writes out to p atomically (mode 0600 whatever the file
// had: a hand-made 0644 file is no longer readable by every local user
// once mnemo rewrites it; its folders are tightened to 0700 alike) if p is
// still version v just before the rename; raced reports that it
// was not (another writer or a hand edit came first) and nothing was
// written. commit, when set, is told just before the rename. update
// calls it with u.wmu held.
func (u *User) writeIfUnchanged(root *os.Root, p string, kind ChangeKind, commit CommitHook, v Version, out []byte, forgot []string) (raced bool, err error) {
	perm := filePerm
	dir := path.Dir(p)
	if err := root.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("create %s folder: %w", dir, err)
	}
	tightenDir(root, ".")
	tightenDir(root, dir)
	err = writeAtomic(root, u.s.fault, p, out, perm, func() error {
		_, now, err := currentVersion(root, p)
		if err != nil {
			return err
		}
		if !now.Same(v) {
			raced = true
			return fmt.Errorf("%s %w during the write", p, ErrConflict)
		}
		// Noted before the rename: the watcher may see it before
		// this goroutine goes on, and must not take it for a hand edit,
		// nor the text it replaces (a late event of the write before).
		u.own(p, versionOf(out, 0))
		c := u.change(p, kind, v, versionOf(out, 0))
		c.Forgotten = forgot
		if len(forgot) > 0 && u.s.opts.Forgetting != nil {
			// Before the change: a crash after it must not leave the
			// forgotten lines in the history.
			if err := u.s.opts.Forgetting(c); err != nil {
				return fmt.Errorf("%s: the history could not be told to forget, so nothing was deleted: %w", p, err)
			}
		}
		if commit != nil {
			return commit(c)
		}
		return nil
	})
	u.done(p)
	return raced, err
}

// wrote updates the index after out replaced version v (cur) of p, logs
// the write and tells the change to the watchers; it returns the new
// version. update calls it with u.wmu held, after the rename.
func (u *User) wrote(root *os.Root, p string, kind ChangeKind, v Version, cur, out []byte, forgot []string) Version {
	u.idx.set(p, out)
	nv := versionOf(out, 0)
	if fi, err := root.Lstat(p); err == nil {
		nv.Ino, _ = fileIno(fi)
	}
	u.s.log.Info("memory: wrote", "user", u.name, "path", p, "bytes", len(out), "version", nv.String(), "previous", v.String())
	c := u.change(p, kind, v, nv)
	c.Forgotten = forgot
	if u.s.opts.OnChange != nil {
		c.Text, c.Previous = out, cur
	}
	u.changed(c)
	return nv
}

// waitForEditor waits while vim's swap file for p exists, then refuses.
func (u *User) waitForEditor(root *os.Root, p string) error {
	dir, base := path.Split(p)
	swaps := []string{dir + "." + base + ".swp", dir + "." + base + ".swo"}
	deadline := u.s.clock.Now().Add(u.s.opts.EditWait)
	for {
		found := ""
		for _, sw := range swaps {
			if _, err := root.Lstat(sw); err == nil {
				found = sw
				break
			}
		}
		if found == "" {
			return nil
		}
		if !u.s.clock.Now().Before(deadline) {
			return fmt.Errorf("%s is %w (the swap file %s exists); try again once the edit is saved and the editor closed; if nobody is editing it, delete the stale swap file", p, ErrEditing, found)
		}
		if !u.s.sleep(50 * time.Millisecond) {
			return fmt.Errorf("%s is %w and the store is closing", p, ErrEditing)
		}
	}
}
