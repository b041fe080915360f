package memory

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// dirMark is a folder's own stat: creating, removing or renaming a name
// in a folder changes its change time (and modification time), which no
// one can set back, and a folder replaced is another inode. So while a
// folder's stat is a mark taken before it was listed, its names are still
// those listed then, and the index's entries in it (which were those
// names, every one a memory file read or cached) need no listing to be
// exact. A mark is taken only of a folder not changed within racySlack
// of its stat (a change in the same tick of the file system's clock would
// not show); any entry that comes or goes drops its folder's mark (put,
// drop). Zero: none. A file's content is no folder's concern: each file
// is still checked on its own (entry.trusted).
type dirMark struct {
	Ino   uint64
	MTime int64 // ns since the epoch
	CTime int64
}

// folderOf is the index in index.marks of a valid path's folder.
func folderOf(p string) int {
	if strings.HasPrefix(p, factsDir+"/") {
		return 0
	}
	return 1
}

// markOf is the mark of a folder with stat fi, taken at now (ns): zero
// when it is not a folder or changed within racySlack of now.
func markOf(fi fs.FileInfo, now int64) dirMark {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return dirMark{}
	}
	m := dirMark{Ino: uint64(st.Ino), MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
	if m.Ino == 0 || m.MTime <= 0 || m.CTime <= 0 || m.MTime >= now-int64(racySlack) || m.CTime >= now-int64(racySlack) {
		return dirMark{}
	}
	return m
}

// vouches reports whether mark m, taken before, vouches for the names in
// folder sub: it is the folder's stat now.
func vouches(root *os.Root, sub string, m dirMark) bool {
	if m == (dirMark{}) {
		return false
	}
	fi, err := root.Lstat(sub)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && m == dirMark{Ino: uint64(st.Ino), MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
}

// inFolder counts the entries in folder k (folderOf). x.mu is held.
func (x *index) inFolder(k int) int {
	facts := 0
	if x.sorted != nil && len(x.sorted) == len(x.files) {
		for _, f := range x.sorted { // List's order: facts first
			if !strings.HasPrefix(f.Path, factsDir+"/") {
				break
			}
			facts++
		}
	} else {
		for p := range x.files {
			if folderOf(p) == 0 {
				facts++
			}
		}
	}
	if k == 1 {
		return len(x.files) - facts
	}
	return facts
}

// setMark makes mark (taken before files were listed in folder k) the
// folder's, when every memory file listed has its entry now: a file that
// is not a plain file, or could not be read, has none, and may become
// one without its folder changing. x.mu is held.
func (x *index) setMark(k int, mark dirMark, listed []dirFile) {
	for _, f := range listed {
		if _, ok := x.files[f.path]; !ok {
			mark = dirMark{}
			break
		}
	}
	x.keepMark(k, mark)
}

// keepMark makes mark folder k's. x.mu is held.
func (x *index) keepMark(k int, mark dirMark) {
	if x.marks[k] != mark {
		x.marks[k], x.changed = mark, true
	}
}

// dirFile is a memory file found in a folder, and whether its entry is
// still trusted (entry.trusted).
type dirFile struct {
	path    string
	trusted bool
}

// scanDir lists the memory files in folder sub. Trust is checked with one
// fstatat per file against the open folder (os.Root.Lstat walks the path
// for each); with reread, nothing is trusted.
func (x *index) scanDir(root *os.Root, sub string, reread bool) ([]dirFile, dirMark) {
	d, names, mark := x.openDir(root, sub)
	if d == nil {
		return nil, dirMark{}
	}
	defer d.Close()
	out := make([]dirFile, 0, len(names))
	for _, name := range names {
		if p := sub + "/" + name; validPath(p) {
			out = append(out, dirFile{path: p})
		} else if x.removeLeftover(root, p) {
			mark = dirMark{}
		}
	}
	if rc, err := d.SyscallConn(); err == nil && !reread {
		rc.Control(func(fd uintptr) { // an error leaves every file untrusted
			for i, f := range out {
				if e, ok := x.files[f.path]; ok {
					out[i].trusted = e.trustedStat(int(fd), f.path[len(sub)+1:])
				}
			}
		})
	}
	return out, mark
}

// readDirNames is the names in folder dir; nil when it cannot be read.
func readDirNames(root *os.Root, dir string) []string {
	d, err := root.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return names
}

// openDir opens folder dir and reads its names, with its mark (markOf)
// as it was before they were read; nil when either fails. The caller
// closes the folder.
func (x *index) openDir(root *os.Root, dir string) (*os.File, []string, dirMark) {
	d, err := root.Open(dir)
	if err != nil {
		return nil, nil, dirMark{}
	}
	x.listings.Add(1)
	now := x.now().UnixNano()
	var mark dirMark
	if fi, err := d.Stat(); err == nil {
		mark = markOf(fi, now)
	}
	names, err := d.Readdirnames(-1)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.Close()
		return nil, nil, dirMark{}
	}
	return d, names, mark
}

// removeLeftover removes p, a name listed in one of the folders that is
// not a memory file, when it is a plain temp file that no write of this
// process made (durable.IsLeftover): a crashed writer's. Only the folders'
// owner (Options.Clean) removes them, as it lists them: a temp file of
// this process's own write in flight stays. It reports whether p is a
// temp file at all: a folder listed with one gets no mark (dirMark), so
// the next start lists it again rather than leave a temp file that was
// not removed (this process's, or one it may not remove) unseen.
func (x *index) removeLeftover(root *os.Root, p string) bool {
	if !durable.IsTemp(p) {
		return false
	}
	if x.leftover == nil || !durable.IsLeftover(p) {
		return true
	}
	if fi, err := root.Lstat(p); err == nil && fi.Mode().IsRegular() {
		x.leftover(p, root.Remove(p))
	}
	return true
}
