package memory

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// summaryHead is how much of a file is read to find its summary line.
const summaryHead = 16 << 10

// racySlack: a file whose modification time is this close to (or after)
// the moment it was read may have changed again within the same tick of
// the file system's clock without its size, time or inode changing, so its
// cached summary is not trusted (git's "racily clean" entries).
const racySlack = 2 * time.Second

// FileInfo is one line of memory_list: a file, its summary and size.
type FileInfo struct {
	Path    string `json:"path"`
	Summary string `json:"summary"`
	Size    int64  `json:"size"`
	// Shared: the header says "> Visibility: shared" (see IsShared).
	// Not in memory_list's result: a view lists only what it may see.
	Shared bool `json:"-"`
}

// statKey is what a file's summary is cached against: a change to the
// file changes at least one of them (modulo racySlack).
type statKey struct {
	Size  int64
	MTime int64 // nanoseconds since the epoch
	Ino   uint64
}

func keyOf(fi fs.FileInfo) statKey {
	ino, _ := fileIno(fi)
	return statKey{Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Ino: ino}
}

// entry is one indexed file: what List shows, and what it was read at.
type entry struct {
	FileInfo
	key    statKey // of the file as read; zero: unknown (never trusted)
	readAt int64   // when it was read (ns since the epoch)
	kept   bool    // the caller of keepEach keeps this version (see User.KeepEach)
	gen    uint64  // changes whenever the entry does
}

// trusted reports whether e still describes a file with key k: same
// size, time and inode, and not racily clean.
func (e entry) trusted(k statKey) bool {
	return e.key != statKey{} && k == e.key && e.key.MTime < e.readAt-int64(racySlack)
}

// trustedStat is trusted for the file name in the folder open as dirfd,
// which must be a plain file with one link (see checkRegular).
func (e entry) trustedStat(dirfd int, name string) bool {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG || uint64(st.Nlink) != 1 {
		return false
	}
	return e.trusted(statKey{Size: st.Size, MTime: st.Mtim.Nano(), Ino: uint64(st.Ino)})
}

// index is one user's list of files. Events mark paths dirty (or the whole
// user); List recomputes only what is dirty, so it is never stale and
// costs nothing when nothing changed. A full rescan re-reads only the files
// whose size, time or inode changed since they were read; the entries may
// come from the index cache (indexcache.go) of an earlier run.
type index struct {
	mu        sync.Mutex
	now       func() time.Time
	files     map[string]entry
	dirty     map[string]struct{}
	full      bool // rescan both folders at the next List
	reread    bool // and re-read every file: events may have been lost
	unwatched bool // no events arrive: rescan at every List
	sorted    []FileInfo
	// shared is the shared files of sorted, made when first asked for
	// (a channel's view), and remade only after sorted was.
	shared   []FileInfo
	sharedOf []FileInfo
	gen      uint64
	// cache is where the index is kept between runs ("": nowhere); loaded
	// tells whether it was read; changed whether the entries differ from it.
	cache   string
	loaded  bool
	changed bool
	// cacheRoot, when set, is cache's folder: the file is opened in it.
	cacheRoot *os.Root
	// lazy: entries came from the cache unchecked against the disk;
	// checked holds those checked (or read) since (indexcache.go).
	lazy    bool
	checked map[string]struct{}
}

func newIndex(now func() time.Time, cache string) *index {
	return &index{now: now, files: map[string]entry{}, dirty: map[string]struct{}{}, full: true, cache: cache}
}

func (x *index) invalidate(p string) {
	x.mu.Lock()
	x.dirty[p] = struct{}{}
	x.sorted = nil
	x.mu.Unlock()
}

// invalidateAll makes the next List rescan; reread: and re-read every
// file (events were lost); unwatched: at every List from now on.
func (x *index) invalidateAll(unwatched, reread bool) {
	x.mu.Lock()
	x.full = true
	x.reread = x.reread || reread
	x.unwatched = x.unwatched || unwatched
	x.sorted = nil
	x.mu.Unlock()
}

// put stores e as p's entry.
func (x *index) put(p string, e entry) {
	x.gen++
	e.gen = x.gen
	x.files[p] = e
	x.sorted = nil
	x.changed = true
	if x.lazy {
		x.checked[p] = struct{}{}
	}
}

func (x *index) drop(p string) {
	if _, ok := x.files[p]; ok {
		delete(x.files, p)
		x.sorted = nil
		x.changed = true
	}
}

// set records what a store write just produced, so the writer's own next
// List sees it without waiting for the event.
func (x *index) set(p string, text []byte) {
	// Read the text before taking the lock: the lock guards the map only.
	e := entry{FileInfo: FileInfo{Path: p, Summary: FileSummary(string(text)), Size: int64(len(text)), Shared: IsShared(string(text))}}
	x.mu.Lock()
	x.put(p, e)
	x.mu.Unlock()
}

// listShared returns the current files whose header says they are shared
// (read-only, like list's): what a channel's view lists, kept until a
// change, so a channel message costs what a DM does.
func (x *index) listShared(root *os.Root) []FileInfo {
	all := x.list(root)
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(all) == 0 {
		return nil
	}
	if len(x.sharedOf) != len(all) || &x.sharedOf[0] != &all[0] {
		x.shared = nil
		for _, f := range all {
			if f.Shared {
				x.shared = append(x.shared, f)
			}
		}
		x.sharedOf = all
	}
	return x.shared
}

// list returns the current files (read-only); root may be nil when the
// user has no folder.
func (x *index) list(root *os.Root) []FileInfo { return x.listHead(root, -1) }

// listHead is list where only the first n files (n < 0: all) are sure to
// have been checked against the disk since a start (checkHead).
func (x *index) listHead(root *os.Root, n int) []FileInfo {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.full || x.unwatched {
		if n < 0 || !x.quickStart(root) {
			x.rescan(root)
		}
	} else {
		for p := range x.dirty {
			x.refresh(root, p)
		}
	}
	clear(x.dirty)
	x.checkHead(root, n)
	x.sort()
	// Shared, never modified: a change builds a new slice.
	return x.sorted
}

// sort makes x.sorted when a change cleared it.
func (x *index) sort() {
	if x.sorted == nil {
		x.sorted = make([]FileInfo, 0, len(x.files))
		for _, f := range x.files {
			x.sorted = append(x.sorted, f.FileInfo)
		}
		sortFiles(x.sorted)
	}
}

func (x *index) rescan(root *os.Root) {
	if !x.loaded {
		x.loaded = true
		x.load()
	}
	reread := x.reread
	x.full, x.reread = false, false
	x.lazy, x.checked = false, nil // every file is checked below
	seen := make(map[string]bool, len(x.files))
	if root != nil {
		// Both folders are checked at once (x.files is only read): with
		// thousands of files, their stats are most of a start's work.
		var facts, episodes []dirFile
		var wg sync.WaitGroup
		wg.Go(func() { facts = x.scanDir(root, factsDir, reread) })
		episodes = x.scanDir(root, episodesDir, reread)
		wg.Wait()
		for _, f := range append(facts, episodes...) {
			seen[f.path] = true
			if !f.trusted {
				x.refresh(root, f.path)
			}
		}
	}
	for p := range x.files {
		if !seen[p] {
			x.drop(p)
		}
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
func (x *index) scanDir(root *os.Root, sub string, reread bool) []dirFile {
	d, names := openDir(root, sub)
	if d == nil {
		return nil
	}
	defer d.Close()
	out := make([]dirFile, 0, len(names))
	for _, name := range names {
		if p := sub + "/" + name; validPath(p) {
			out = append(out, dirFile{path: p})
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
	return out
}

// refresh re-reads one file's size and summary; a file that is gone or is
// not a plain file drops out of the index.
func (x *index) refresh(root *os.Root, p string) {
	if root == nil {
		x.drop(p)
		return
	}
	readAt := x.now().UnixNano()
	f, fi, err := openRegular(root, p)
	if err != nil {
		x.drop(p)
		return
	}
	defer f.Close()
	head := make([]byte, summaryHead)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		x.drop(p)
		return
	}
	x.put(p, entry{FileInfo: FileInfo{Path: p, Summary: FileSummary(string(head[:n])), Size: fi.Size(), Shared: IsShared(string(head[:n]))},
		key: keyOf(fi), readAt: readAt})
}

// unkept lists the entries not marked kept, with their generation.
func (x *index) unkept() map[string]uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]uint64{}
	for p, e := range x.files {
		if !e.kept {
			out[p] = e.gen
		}
	}
	return out
}

// markKept marks p's entry kept when it is still generation gen and
// nothing says it changed since: no event pending, no rescan due, and
// events arriving at all.
func (x *index) markKept(p string, gen uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.files[p]
	if _, dirty := x.dirty[p]; !ok || dirty || e.gen != gen || x.full || x.unwatched {
		return false
	}
	e.kept = true
	x.files[p] = e
	x.changed = true
	return true
}

func readDirNames(root *os.Root, dir string) []string {
	d, names := openDir(root, dir)
	if d != nil {
		d.Close()
	}
	return names
}

// openDir opens folder dir and reads its names; nil when either fails.
// The caller closes the folder.
func openDir(root *os.Root, dir string) (*os.File, []string) {
	d, err := root.Open(dir)
	if err != nil {
		return nil, nil
	}
	names, err := d.Readdirnames(-1)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.Close()
		return nil, nil
	}
	return d, names
}

func validPath(p string) bool {
	_, err := ParsePath(p)
	return err == nil
}
