package durable

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// FS is the folder the durable operations work in: *os.Root satisfies it
// (names stay inside the root, so a sandbox holds), and so does Dir. Names
// are slash-separated and relative to it.
type FS interface {
	Open(name string) (*os.File, error)
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Rename(oldname, newname string) error
	Remove(name string) error
}

// Dir is a plain folder as an FS, for state files outside any sandbox
// (the journals). Its names are joined to the folder's path.
type Dir string

func (d Dir) path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

// Open opens name for reading.
func (d Dir) Open(name string) (*os.File, error) { return os.Open(d.path(name)) }

// OpenFile opens name as os.OpenFile does.
func (d Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(d.path(name), flag, perm)
}

// Rename renames oldname to newname.
func (d Dir) Rename(oldname, newname string) error {
	return os.Rename(d.path(oldname), d.path(newname))
}

// Remove removes name.
func (d Dir) Remove(name string) error { return os.Remove(d.path(name)) }

// RootDir is an opened folder (an os.Root) as an FS whose files errors
// and the Hook name by their full path, as Dir's: for state files, where
// the path says which file, opened through a root so that a link that
// leads out of it is never followed.
type RootDir struct{ *os.Root }

// display is name as errors and the Hook show it: a Dir's or a RootDir's
// full path.
func display(fsys FS, name string) string {
	switch d := fsys.(type) {
	case Dir:
		return d.path(name)
	case RootDir:
		return filepath.Join(d.Name(), filepath.FromSlash(name))
	}
	return name
}

// ReadFile reads the whole of name in fsys.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Error is a failure of the disk at one operation (one of the Hook's ops,
// or Close) on Name. Callers that tell storage failures apart from their
// own (memory wraps them with mnemo.ErrStorage) look for it with
// errors.As.
type Error struct {
	Op   string
	Name string
	Err  error
	what string // the step in words, when not the Op's
}

// Close is the Op of an Error closing a file.
const Close = "close"

func (e *Error) Error() string {
	what := e.what
	switch {
	case what != "":
	case e.Op == Create:
		what = "create temp file for"
	case e.Op == Rename:
		what = "rename into"
	case e.Op == FsyncDir:
		what = "fsync folder"
	default:
		what = e.Op
	}
	return fmt.Sprintf("%s %s: %v", what, e.Name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsDisk reports whether err is (or wraps) a failure of the disk.
func IsDisk(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// IsEscape reports whether err is (or wraps) an os.Root's refusal of a
// path, or of a symbolic link, that leads out of its folder. os does not
// export that error, so it is known by its text.
func IsEscape(err error) bool {
	switch {
	case err == nil:
		return false
	case err.Error() == "path escapes from parent":
		return true
	}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		return slices.ContainsFunc(m.Unwrap(), IsEscape)
	}
	return IsEscape(errors.Unwrap(err))
}
