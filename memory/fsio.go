package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// maxFileSize bounds what mnemo reads of any memory file, so a stray huge
// file cannot exhaust memory; it is refused with a clear error.
const maxFileSize = 8 << 20

// tempMarker is part of every temp file name (durable's); leftovers are
// removed when their folder is listed (index.removeLeftover).
const tempMarker = durable.TempMarker

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
// mnemo.ErrStorage, so the reflector keeps the turns and retries.
func diskError(op, name string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", mnemo.ErrStorage, op, name, err)
}

// writeAtomic replaces name with data (durable.WriteFile: a temp file in
// the same folder, written, fsynced, renamed over name, the folder
// fsynced), so a crash leaves the old file or the new one and never a torn
// one. check runs just before the rename; an error from it aborts the
// write. Every failure of the disk itself is wrapped with mnemo.ErrStorage.
func writeAtomic(root *os.Root, hook durable.Hook, name string, data []byte, perm fs.FileMode, check func() error) error {
	return storage(durable.WriteFile(root, name, data, durable.WriteOptions{Perm: perm, Hook: hook, Check: check}))
}

// syncDir makes a rename or removal in dir durable.
func syncDir(root *os.Root, hook durable.Hook, dir string) error {
	return storage(durable.SyncDir(root, dir, hook))
}

// storage marks a failure of the disk with mnemo.ErrStorage.
func storage(err error) error {
	if durable.IsDisk(err) {
		return fmt.Errorf("%w: %w", mnemo.ErrStorage, err)
	}
	return err
}

func isTempName(name string) bool { return durable.IsTemp(name) }
