package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Mode is the state folder's mode: its owner's alone.
const Mode fs.FileMode = 0o700

// State is the state folder, opened.
type State struct {
	dir  string
	root *os.Root
	// was is the folder's mode before Open tightened it (0: untouched).
	was fs.FileMode
}

// Open makes dir (and its missing parents, 0700) when it is missing,
// checks who owns it and its mode (see the package doc) and opens it as an
// os.Root. Close it when done.
func Open(dir string) (*State, error) {
	if err := os.MkdirAll(dir, Mode); err != nil {
		return nil, fmt.Errorf("state folder %s: %w (it holds mnemo's lock and journals and must be a folder mnemo may write; set state.dir elsewhere)", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("state folder %s: %w (it holds mnemo's lock and journals and must be a folder mnemo may write; set state.dir elsewhere)", dir, err)
	}
	s := &State{dir: dir, root: root}
	if err := s.ownAlone(); err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

// ownAlone tightens the folder to Mode when it is this user's, or refuses
// a looser one of another user. It works on the open folder, not its path,
// so that what is checked is what is used.
func (s *State) ownAlone() error {
	f, err := s.root.Open(".")
	if err != nil {
		return fmt.Errorf("state folder %s: %w", s.dir, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("state folder %s: %w", s.dir, err)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	owner, me := ownerOf(fi), os.Geteuid()
	if owner != me {
		return fmt.Errorf("state folder %s is mode %v and belongs to %s, not to this user (%s): other users could put links or files there that mnemo would trust; run mnemo as its owner (sudo -u %s mnemo …), or have the owner run chmod 700 %s",
			s.dir, perm, userName(owner), userName(me), sudoUser(owner), s.dir)
	}
	if err := f.Chmod(Mode); err != nil {
		return fmt.Errorf("state folder %s is mode %v, readable or writable by other users, and could not be made %v: %w; run chmod 700 %s", s.dir, perm, Mode, err, s.dir)
	}
	s.was = perm
	return nil
}

// ownerOf is the uid that owns the file fi describes (-1: unknown).
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// userName is uid as a message shows it: "mnemo (uid 998)".
func userName(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

// sudoUser is uid as sudo -u takes it: its name, or '#UID'.
func sudoUser(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username
	}
	return "'#" + id + "'"
}

// Tightened is the folder's mode before Open made it 0700, or 0 when Open
// did not change it (callers log it).
func (s *State) Tightened() fs.FileMode { return s.was }

// Close closes the root. Roots and files opened from it stay open.
func (s *State) Close() error { return s.root.Close() }

// ErrLink is matched (errors.Is) by the errors of OpenFile and Sub that
// refuse a symbolic link.
var ErrLink = errors.New("mnemo does not follow symbolic links in its state folder")

// OpenFile opens name (slash-separated, relative to the state folder) as
// os.OpenFile does, through the root, and never through a symbolic link:
// a link at name itself is refused, and so is one on the way that leads
// out of the state folder (os.Root); the errors say which and the fix.
func (s *State) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := s.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link; remove it (%w)", filepath.Join(s.dir, name), ErrLink)
	}
	f, err := s.root.OpenFile(name, flag, perm)
	if err != nil {
		return nil, s.explain(name, err)
	}
	return f, nil
}

// Sub is the subfolder name of the state folder (made 0700 when missing)
// as an os.Root of its own, for a package that keeps its files there.
func (s *State) Sub(name string) (*os.Root, error) {
	if err := s.root.MkdirAll(name, Mode); err != nil {
		return nil, s.explain(name, err)
	}
	r, err := s.root.OpenRoot(name)
	if err != nil {
		return nil, s.explain(name, err)
	}
	return r, nil
}

// explain adds to err, when a link leads out of the state folder, what
// mnemo does not do and the fix.
func (s *State) explain(name string, err error) error {
	if IsEscape(err) {
		return fmt.Errorf("%s: a symbolic link on the way leads out of the state folder; remove it (%w: %w)", filepath.Join(s.dir, name), ErrLink, err)
	}
	return err
}

// IsEscape reports whether err is (or wraps) an os.Root's refusal of a
// path, or a link, that leads out of its folder (durable.IsEscape).
func IsEscape(err error) bool { return durable.IsEscape(err) }
