package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Remove deletes one memory file.
func (u *User) Remove(p string) error { return u.remove(p, false, nil) }

// RemoveIfUnchanged deletes one memory file only while it is still
// version base (an Undo of the keeping that made it): a change since is
// a conflict, and nothing is deleted.
func (u *User) RemoveIfUnchanged(p string, base Version) error { return u.remove(p, false, &base) }

// forgetRollups deletes the roll-ups that summarise episode month p
// after a forget took lines from it, their history with them: the roll-up
// job makes them again from what is left.
func (u *User) forgetRollups(p string) error {
	if _, ok := MonthOf(p); !ok {
		return nil
	}
	q, y := coverers(p)
	for _, r := range []string{q, y} {
		if err := u.remove(r, true, nil); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%s: forgotten, but the roll-up %s that summarises it could not be deleted (%w); delete it by hand", p, r, err)
		}
		u.found.forget(r)
	}
	return nil
}

// remove is Remove; forget tells the history to drop the file's
// versions; with base, only that version is removed.
func (u *User) remove(p string, forget bool, base *Version) error {
	if _, err := ParsePath(p); err != nil {
		return err
	}
	u.wmu.Lock()
	defer u.wmu.Unlock()
	root, ref, err := u.openRoot(false)
	if err != nil {
		return err
	}
	if root == nil {
		return notFound(p)
	}
	defer ref.release()
	li, err := root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound(p)
	}
	if err != nil {
		return err
	}
	if li.IsDir() {
		return fmt.Errorf("%s: %w (it is a folder)", p, ErrNotRegular)
	}
	if base != nil {
		if _, now, err := currentVersion(root, p); err != nil {
			return err
		} else if !now.Same(*base) {
			return conflict(p, *base, now)
		}
	}
	u.own(p, Version{})
	// A symlink, FIFO or hard link is removed as a name: nothing is followed.
	var last []byte
	if err = u.s.fault.At(durable.Remove, p); err == nil {
		last = u.lastText(root, p, li)
		err = root.Remove(p)
	}
	u.done(p)
	if err != nil {
		return diskError("remove", p, err)
	}
	u.idx.invalidate(p)
	u.s.log.Info("memory: removed", "user", u.name, "path", p)
	u.changed(Commit{User: u.name, Path: p, Kind: ChangeDelete, Before: Version{Exists: true, Size: li.Size()}, Previous: last, Forget: forget})
	return errors.Join(syncDir(root, u.s.fault, path.Dir(p)), u.idx.removeCache(p))
}

// lastText is the text of p just before Remove removes it, told to
// Options.OnChange as the delete's Previous: a person's save that landed
// just before the remove, which the watcher may only look at once the
// file is gone, is then kept in the history all the same. It is nil when
// nobody is told, for what is not a regular file (removed as a name,
// never read), for an empty file (a save in progress, never kept), and
// when it cannot be read (logged): the remove goes on, as before.
func (u *User) lastText(root *os.Root, p string, li fs.FileInfo) []byte {
	if u.s.opts.OnChange == nil || !li.Mode().IsRegular() {
		return nil
	}
	data, _, err := readRegular(root, p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			u.s.log.Warn("memory: could not read a file before removing it; its last text may be missing from the history", "user", u.name, "path", p, "err", err)
		}
		return nil
	}
	if len(data) == 0 {
		return nil
	}
	return data
}

// RemoveAll deletes the user's whole memory folder.
func (u *User) RemoveAll() error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	u.s.pool.drop(u)
	li, err := u.s.base.Lstat(u.name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s has no memory folder: %w", u.name, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if !li.IsDir() {
		return fmt.Errorf("memory folder of %s is a %s; remove it by hand", u.name, describeMode(li.Mode()))
	}
	if err := u.s.base.RemoveAll(u.name); err != nil {
		return fmt.Errorf("remove memory of %s: %w", u.name, err)
	}
	u.idx.invalidateAll(false, false)
	u.found.forget("")
	u.s.log.Info("memory: removed user", "user", u.name)
	return u.idx.removeCache("")
}
