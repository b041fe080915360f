package memory

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/fault"
)

// maxFileSize bounds what mnemo reads of any memory file, so a stray huge
// file cannot exhaust memory; it is refused with a clear error.
const maxFileSize = 8 << 20

// tempMarker is part of every temp file name; leftovers are removed at start.
const tempMarker = ".mnemo-tmp-"

// ErrNotRegular is wrapped when a memory path names a symlink, FIFO, device,
// socket, folder or hard-linked file: mnemo reads and writes only plain files.
var ErrNotRegular = errors.New("not a regular file")

// Version identifies one content of a file. Two versions are the same when
// size and SHA-256 agree; the inode is kept to explain conflicts in logs.
type Version struct {
	Exists bool
	Size   int64
	Hash   [sha256.Size]byte
	Ino    uint64
}

// Same reports whether v and o describe the same content (or both absence).
func (v Version) Same(o Version) bool {
	return v.Exists == o.Exists && v.Size == o.Size && v.Hash == o.Hash
}

func (v Version) String() string {
	if !v.Exists {
		return "absent"
	}
	return fmt.Sprintf("%d bytes sha256:%s", v.Size, hex.EncodeToString(v.Hash[:6]))
}

func versionOf(data []byte, ino uint64) Version {
	return Version{Exists: true, Size: int64(len(data)), Hash: sha256.Sum256(data), Ino: ino}
}

func fileIno(fi fs.FileInfo) (ino, nlink uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), uint64(st.Nlink)
	}
	return 0, 1
}

func checkRegular(name string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (it is a %s); replace it with a plain Markdown file", name, ErrNotRegular, describeMode(fi.Mode()))
	}
	if _, nlink := fileIno(fi); nlink > 1 {
		return fmt.Errorf("%s: %w (it has %d hard links, so it may be a file outside this user's folder); replace it with a copy: cp --remove-destination", name, ErrNotRegular, nlink)
	}
	return nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// openRegular opens name for reading only when it is a plain file with one
// link. os.Root follows a symlink in the last part when it stays inside, so
// the file is Lstat-ed first and the open file must be that same inode;
// O_NONBLOCK keeps a FIFO from hanging the open. A file replaced between the
// two (an editor saving by rename) is simply tried again.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	for try := 0; ; try++ {
		f, fi, again, err := openRegularOnce(root, name)
		if !again || try == 4 {
			return f, fi, err
		}
	}
}

func openRegularOnce(root *os.Root, name string) (f *os.File, fi fs.FileInfo, again bool, err error) {
	li, err := root.Lstat(name)
	if err != nil {
		return nil, nil, false, err
	}
	if err := checkRegular(name, li); err != nil {
		return nil, nil, false, err
	}
	f, err = root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// Gone or replaced by a symlink since the Lstat: look again.
		return nil, nil, true, err
	}
	fi, err = f.Stat()
	if err == nil && !os.SameFile(li, fi) {
		err, again = fmt.Errorf("%s keeps changing while being opened; try again", name), true
	}
	if err == nil {
		err = checkRegular(name, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, again, err
	}
	return f, fi, false, nil
}

// readRegular reads a whole memory file and its version. A missing file is
// returned as an absent version and fs.ErrNotExist.
func readRegular(root *os.Root, name string) ([]byte, Version, error) {
	f, fi, err := openRegular(root, name)
	if err != nil {
		return nil, Version{}, err
	}
	defer f.Close()
	if fi.Size() > maxFileSize {
		return nil, Version{}, fmt.Errorf("%s is %d bytes, over mnemo's %d-byte limit for a memory file; split it into smaller files", name, fi.Size(), maxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, Version{}, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxFileSize {
		return nil, Version{}, fmt.Errorf("%s grew over mnemo's %d-byte limit for a memory file; split it into smaller files", name, maxFileSize)
	}
	ino, _ := fileIno(fi)
	return data, versionOf(data, ino), nil
}

// currentVersion is readRegular without keeping the text; a missing file is
// an absent version with a nil error.
func currentVersion(root *os.Root, name string) ([]byte, Version, error) {
	data, v, err := readRegular(root, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Version{}, nil
	}
	return data, v, err
}

// diskError marks a failure of the disk (not of the caller's request) with
// agent.ErrStorage, so the reflector keeps the turns and retries.
func diskError(op, name string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", agent.ErrStorage, op, name, err)
}

// writeAtomic replaces name with data: a temp file in the same folder
// (O_EXCL), written, fsynced, renamed over name, then the folder fsynced, so
// a crash leaves the old file or the new one and never a torn one. check
// runs just before the rename; an error from it aborts the write. Every
// failure of the disk itself is wrapped with agent.ErrStorage.
func writeAtomic(root *os.Root, hook fault.Hook, name string, data []byte, perm fs.FileMode, check func() error) (err error) {
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	tmp := path.Join(dir, "."+base+tempMarker+rand.Text())
	var f *os.File
	if err = hook.At(fault.Create, tmp); err == nil {
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	}
	if err != nil {
		return diskError("create temp file for", name, err)
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	if err = hook.At(fault.Write, tmp); err == nil {
		_, err = f.Write(data)
	}
	if err != nil {
		f.Close()
		return diskError("write", name, err)
	}
	if err = hook.At(fault.Fsync, tmp); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return diskError("fsync", name, err)
	}
	if err = f.Close(); err != nil {
		return diskError("close", name, err)
	}
	if check != nil {
		if err = check(); err != nil {
			return err
		}
	}
	if err = hook.At(fault.Rename, name); err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		return diskError("rename into", name, err)
	}
	return syncDir(root, hook, dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(root *os.Root, hook fault.Hook, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return diskError("open folder for fsync", dir, err)
	}
	defer d.Close()
	if err = hook.At(fault.FsyncDir, dir); err == nil {
		err = d.Sync()
	}
	if err != nil {
		return diskError("fsync folder", dir, err)
	}
	return nil
}

func isTempName(name string) bool { return strings.Contains(name, tempMarker) }
