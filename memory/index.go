package memory

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// entry is one indexed file: what List shows of it (its path is the key
// of the index's map) and what it was read at. It is the per-file state of
// every user a process serves: each field is one the index needs, in an
// order without padding but the flags' (72 bytes; with the path in it and
// the flags apart it was 96, and the map's slots that hold it a third
// larger).
type entry struct {
	Summary string
	Size    int64
	key     statKey // of the file as read; zero: unknown (never trusted)
	readAt  int64   // when it was read (ns since the epoch)
	gen     uint64  // changes whenever the entry does
	Shared  bool    // the header says "> Visibility: shared" (IsShared)
	kept    bool    // the caller of keepEach keeps this version (see User.KeepEach)
	// checked: read, written or checked against the disk in this run;
	// while an index started from its cache is lazy, only checked entries
	// are sure to be current (indexcache.go).
	checked bool
}

// info is the entry of file p as List shows it.
func (e *entry) info(p string) FileInfo {
	return FileInfo{Path: p, Summary: e.Summary, Size: e.Size, Shared: e.Shared}
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
	// all is sorted with its counts and version; shared is its shared
	// files (a channel's view), made when first asked for and remade only
	// after sorted was.
	all    listing
	shared listing
	ver    uint64 // the last listing version given out
	stale  bool   // sorted changed since all was made of it
	edits  int    // changes made to sorted in place since the last list
	gen    uint64
	// drops counts entries dropped: with gen, the search index (search.go)
	// tells from two numbers whether any file changed since it looked.
	drops uint64
	// rendered keeps each view's index as last rendered (View.Index),
	// with the listing versions it was rendered from; guarded by rmu.
	rmu      sync.Mutex
	rendered map[renderKey]renderedIndex
	// cache is where the index is kept between runs ("": nowhere); loaded
	// tells whether it was read; changed whether the entries differ from it.
	cache   string
	loaded  bool
	changed bool
	// cacheRoot, when set, is cache's folder: the file is opened in it.
	cacheRoot *os.Root
	// lazy: entries came from the cache unchecked against the disk; those
	// checked (or read) since say so (entry.checked, indexcache.go).
	lazy bool
	// marks vouch for the names of the two folders (facts, episodes):
	// while a folder's own stat is its mark, the entries in it are its
	// memory files' names (dirMark).
	marks [2]dirMark
	// listings counts the folders listed (openDir): tests see a listing
	// spared by a mark.
	listings atomic.Int32
	// leftover, when set, removes the temp files crashed writers left in
	// the folders as they are listed, and is told of each (removeLeftover).
	leftover func(p string, err error)
}

// heads are refresh's buffers (the start of a file, for its summary),
// reused: a rescan reads thousands of files, and a process serves many
// users, each with an index.
var heads = sync.Pool{New: func() any { return new([summaryHead]byte) }}

func newIndex(now func() time.Time, cache string) *index {
	return &index{now: now, files: map[string]entry{}, dirty: map[string]struct{}{}, full: true, cache: cache}
}

// invalidate marks p changed: the next List reads it again (and changes
// the list in place, see put).
func (x *index) invalidate(p string) {
	x.mu.Lock()
	x.dirty[p] = struct{}{}
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
	e.checked = true
	old, had := x.files[p]
	x.files[p] = e
	x.changed = true
	if !had {
		x.marks[folderOf(p)] = dirMark{} // a name the mark did not vouch for
	}
	if !had || old.info(p) != e.info(p) {
		x.edit(p, e.info(p), true)
	}
}

// markChecked marks p's entry checked against the disk (entry.checked).
func (x *index) markChecked(p string) {
	if e, ok := x.files[p]; ok && !e.checked {
		e.checked = true
		x.files[p] = e
	}
}

func (x *index) drop(p string) {
	if _, ok := x.files[p]; ok {
		delete(x.files, p)
		x.drops++
		x.changed = true
		x.marks[folderOf(p)] = dirMark{}
		x.edit(p, FileInfo{Path: p}, false)
	}
}

// maxEdits is how many files one update changes in place in the sorted
// list (a copy each, O(n)); past it, the list is sorted again once.
const maxEdits = 8

// edit changes the sorted list for file p: f is its line now (keep), or
// it is gone. The list is shared with callers, so the new one is a copy:
// O(n) per change instead of a sort of every file, unless many files
// change at once (a rescan), when it is made again once.
func (x *index) edit(p string, f FileInfo, keep bool) {
	if x.sorted == nil {
		return
	}
	if x.edits++; x.edits > maxEdits {
		x.sorted = nil
		return
	}
	i, found := slices.BinarySearchFunc(x.sorted, f, cmpFiles)
	var out []FileInfo
	switch {
	case keep && found:
		out = slices.Clone(x.sorted)
		out[i] = f
	case keep:
		out = make([]FileInfo, 0, len(x.sorted)+1)
		out = append(append(append(out, x.sorted[:i]...), f), x.sorted[i:]...)
	case found:
		out = make([]FileInfo, 0, len(x.sorted)-1)
		out = append(append(out, x.sorted[:i]...), x.sorted[i+1:]...)
	default:
		return
	}
	x.sorted, x.stale = out, true
}

// set records what a store write just produced, so the writer's own next
// List sees it without waiting for the event.
func (x *index) set(p string, text []byte) {
	// Read the text before taking the lock: the lock guards the map only.
	e := fileEntry(string(text), int64(len(text)), statKey{}, 0)
	x.mu.Lock()
	x.put(p, e)
	x.mu.Unlock()
}

// listing is one version of an index's list (or of its shared files):
// the files in List's order, facts first, with what a message needs of
// them counted once when the list is made, not for every message.
type listing struct {
	files     []FileInfo // shared, never modified: a change makes a new one
	shown     []FileInfo // files without those a roll-up there covers (foldRollups)
	facts     int        // files[:facts] are the fact files
	factBytes int64      // their sizes together
	ver       uint64     // changes whenever files does; 0: never made
}

// makeListing counts files (List's order) into a listing of version ver.
func makeListing(files []FileInfo, ver uint64) listing {
	l := listing{files: files, shown: foldRollups(files), ver: ver}
	for _, f := range files {
		if !strings.HasPrefix(f.Path, factsDir+"/") {
			break
		}
		l.facts++
		l.factBytes += f.Size
	}
	return l
}

// current is the list when nothing needs the folder to make it: the
// index is watched, no change or rescan is pending and every entry was
// checked since the start. Then a message's List is a lock and a few
// loads, whatever the number of files: the list changes only when the
// watcher or a write reports a change.
func (x *index) current(shared bool) (listing, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.full || x.unwatched || len(x.dirty) > 0 || x.lazy {
		return listing{}, false
	}
	return x.made(shared), true
}

// listShared returns the current files whose header says they are shared
// (read-only, like list's): what a channel's view lists, kept until a
// change, so a channel message costs what a DM does.
func (x *index) listShared(root *os.Root) listing {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.update(root, -1)
	return x.made(true)
}

// list returns the current files (read-only); root may be nil when the
// user has no folder.
func (x *index) list(root *os.Root) listing { return x.listHead(root, -1) }

// listHead is list where only the first n files (n < 0: all) are sure to
// have been checked against the disk since a start (checkHead).
func (x *index) listHead(root *os.Root, n int) listing {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.update(root, n)
	return x.made(false)
}

// starting reports whether the index is yet to start (a rescan pending:
// a start may take the cache, checking only what is shown) or has
// started from the cache with entries not all checked yet.
func (x *index) starting() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lazy || x.full
}

// update applies what is pending: a start from the cache (only the first
// n files checked, n >= 0), a rescan, or the changed paths.
func (x *index) update(root *os.Root, n int) {
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
	x.edits = 0
}

// sort makes x.sorted when a change dropped it. x.mu is held.
func (x *index) sort() {
	if x.sorted == nil {
		x.sorted = make([]FileInfo, 0, len(x.files))
		for p, e := range x.files {
			x.sorted = append(x.sorted, e.info(p))
		}
		sortFiles(x.sorted)
		x.stale = true
	}
}

// made is the list (or its shared files), made again only when a change
// dropped it. x.mu is held.
func (x *index) made(shared bool) listing {
	x.sort()
	x.edits = 0
	if x.stale {
		x.ver++
		x.all = makeListing(x.sorted, x.ver)
		x.stale = false
	}
	if !shared {
		return x.all
	}
	if x.shared.ver != x.all.ver {
		var files []FileInfo
		for _, f := range x.all.files {
			if f.Shared {
				files = append(files, f)
			}
		}
		x.shared = makeListing(files, x.all.ver)
	}
	return x.shared
}

// renderKey names a view's rendered index: private or shared, the
// channel's index beside it (nil: none), and the budget.
type renderKey struct {
	shared bool
	ch     *index
	budget int
}

// renderedIndex is a view's index as rendered from the listings of
// versions own and ch.
type renderedIndex struct {
	own, ch uint64
	text    string
}

// maxRendered bounds the views whose index an index keeps (a person in
// many channels): past it, the kept ones are dropped.
const maxRendered = 16

// renderedFor is the index of view k rendered from the listings of
// versions own and ch, when it was kept.
func (x *index) renderedFor(k renderKey, own, ch uint64) (string, bool) {
	x.rmu.Lock()
	defer x.rmu.Unlock()
	r, ok := x.rendered[k]
	return r.text, ok && r.own == own && r.ch == ch
}

// keepRendered keeps text as view k's index for those versions.
func (x *index) keepRendered(k renderKey, own, ch uint64, text string) {
	x.rmu.Lock()
	defer x.rmu.Unlock()
	if x.rendered == nil || len(x.rendered) >= maxRendered {
		x.rendered = map[renderKey]renderedIndex{}
	}
	x.rendered[k] = renderedIndex{own: own, ch: ch, text: text}
}

func (x *index) rescan(root *os.Root) {
	if !x.loaded {
		x.loaded = true
		x.load()
	}
	reread := x.reread
	x.full, x.reread = false, false
	x.lazy = false // every file is checked below
	seen := make(map[string]bool, len(x.files))
	var marks [2]dirMark
	var listed [2][]dirFile
	if root != nil {
		// Both folders are checked at once (x.files is only read): with
		// thousands of files, their stats are most of a start's work.
		var wg sync.WaitGroup
		wg.Go(func() { listed[0], marks[0] = x.scanDir(root, factsDir, reread) })
		listed[1], marks[1] = x.scanDir(root, episodesDir, reread)
		wg.Wait()
		for _, files := range listed {
			for _, f := range files {
				seen[f.path] = true
				if !f.trusted {
					x.refresh(root, f.path)
				}
			}
		}
	}
	for p := range x.files {
		if !seen[p] {
			x.drop(p)
		}
	}
	for k := range marks {
		x.setMark(k, marks[k], listed[k])
	}
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
	head := heads.Get().(*[summaryHead]byte)
	defer heads.Put(head)
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		x.drop(p)
		return
	}
	x.put(p, fileEntry(string(head[:n]), fi.Size(), keyOf(fi), readAt))
}

// fileEntry is the entry of a file whose text starts with head. The
// summary is copied out: a summary that is a substring of head (one word)
// would otherwise keep all of head alive for as long as the entry.
// A head shorter than the file is cut: its last part-line is not read.
func fileEntry(head string, size int64, key statKey, readAt int64) entry {
	shared := IsShared(head)
	if int64(len(head)) < size {
		shared = isSharedHead(head[:min(len(head), summaryHead)], true)
	}
	return entry{Summary: strings.Clone(FileSummary(head)), Size: size, Shared: shared, key: key, readAt: readAt}
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

func validPath(p string) bool {
	_, err := ParsePath(p)
	return err == nil
}
