package durable

import (
	"crypto/rand"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// TempMarker is part of the name of every temp file WriteFile and Replace
// make (".<name>" + TempMarker + this process's token + "-" + random), so
// that leftovers of a crash are known by IsTemp, and told from this
// process's own writes in flight by IsLeftover.
const TempMarker = ".mnemo-tmp-"

// procToken is this process's mark in its temp file names: one process
// writes a data folder (the owner of its lock), so a temp file without
// the mark is a crashed writer's, even while this process writes beside
// it. 40 random bits, made at the first write.
var procToken = sync.OnceValue(func() string { return rand.Text()[:8] })

// Temps lists the temp files a crash left of the file at the OS path
// name (WriteFile's, Replace's): they hold what was being written, so
// whatever deletes name for good deletes them too.
func Temps(name string) []string {
	dir, base := filepath.Split(name)
	m, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+TempMarker+"*"))
	return m
}

// globEscape quotes the pattern characters of s for filepath.Glob.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}

// IsTemp reports whether a file name is a temp file of WriteFile.
func IsTemp(name string) bool { return strings.Contains(name, TempMarker) }

// IsLeftover reports whether a file name is a temp file (IsTemp) that no
// write of this process made: in a folder only this process writes, it is
// what a crashed writer left, safe to remove even while this process
// writes (its own temp files carry its token and are not leftovers).
func IsLeftover(name string) bool {
	return IsTemp(name) && !strings.Contains(name, TempMarker+procToken()+"-")
}

// tempName is a fresh temp file name beside name.
func tempName(name string) string {
	dir, base := path.Split(name)
	return dir + "." + base + TempMarker + procToken() + "-" + rand.Text()
}

// WriteOptions tunes WriteFile.
type WriteOptions struct {
	Perm fs.FileMode // of the new file; 0 → 0o600
	Hook Hook        // called before each disk operation
	// Check runs just before the rename; an error from it aborts the
	// write (the temp file is removed) and is returned as it is.
	Check func() error
	// NoDirSync leaves the folder fsync to the caller, who writes several
	// files and then calls SyncDir once.
	NoDirSync bool
	// NoSync fsyncs nothing: for a file that is rebuilt when lost (a
	// cache), which still must never be torn or written through a link.
	NoSync bool
}

// WriteFile replaces name in fsys with data atomically: a temp file in the
// same folder (O_EXCL), written, fsynced, renamed over name, then the
// folder fsynced, so that a crash leaves the old file or the new one and
// never a torn one. A failure before the rename leaves name as it was and
// no temp file. Every failure of the disk is an *Error.
func WriteFile(fsys FS, name string, data []byte, o WriteOptions) error {
	f, tmp, err := writeTemp(fsys, name, data, o.Perm, o.Hook, !o.NoSync)
	if err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		_ = fsys.Remove(tmp)
		return &Error{Op: Close, Name: display(fsys, name), Err: err}
	}
	if o.Check != nil {
		if err = o.Check(); err != nil {
			_ = fsys.Remove(tmp)
			return err
		}
	}
	if err = rename(fsys, tmp, name, o.Hook); err != nil || o.NoDirSync || o.NoSync {
		return err
	}
	return SyncDir(fsys, path.Dir(name), o.Hook)
}

// writeTemp writes data to a new temp file beside name and fsyncs it
// (when sync); the file is returned open (for appending), with its name.
func writeTemp(fsys FS, name string, data []byte, perm fs.FileMode, h Hook, sync bool) (*os.File, string, error) {
	if perm == 0 {
		perm = 0o600
	}
	tmp := tempName(name)
	shown := display(fsys, tmp)
	var f *os.File
	err := h.At(Create, shown)
	if err == nil {
		f, err = fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, perm)
	}
	if err != nil {
		return nil, "", &Error{Op: Create, Name: display(fsys, name), Err: err}
	}
	op := Write
	if err = h.At(Write, shown); err == nil {
		_, err = f.Write(data)
	}
	if err == nil && sync {
		op = Fsync
		if err = h.At(Fsync, shown); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		_ = fsys.Remove(tmp)
		return nil, "", &Error{Op: op, Name: display(fsys, name), Err: err}
	}
	return f, tmp, nil
}

// rename moves the temp file tmp over name; on a failure tmp is removed.
func rename(fsys FS, tmp, name string, h Hook) error {
	err := h.At(Rename, display(fsys, name))
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return &Error{Op: Rename, Name: display(fsys, name), Err: err}
	}
	return nil
}

// SyncDir fsyncs the folder dir of fsys ("." for its top), so that a
// creation, rename or removal in it survives a crash of the machine.
func SyncDir(fsys FS, dir string, h Hook) error {
	d, err := fsys.Open(dir)
	if err != nil {
		return &Error{Op: FsyncDir, Name: display(fsys, dir), Err: err, what: "open folder for fsync"}
	}
	defer d.Close()
	if err = h.At(FsyncDir, display(fsys, dir)); err == nil {
		err = d.Sync()
	}
	if err != nil {
		return &Error{Op: FsyncDir, Name: display(fsys, dir), Err: err}
	}
	return nil
}

// RemoveFile removes name and fsyncs its folder; a missing file is not an
// error (the folder is still fsynced).
func RemoveFile(fsys FS, name string, h Hook) error {
	err := h.At(Remove, display(fsys, name))
	if err == nil {
		err = fsys.Remove(name)
	}
	if err != nil && !os.IsNotExist(err) {
		return &Error{Op: Remove, Name: display(fsys, name), Err: err}
	}
	return SyncDir(fsys, path.Dir(name), h)
}
