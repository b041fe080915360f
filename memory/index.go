package memory

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
)

// summaryHead is how much of a file is read to find its summary line.
const summaryHead = 16 << 10

// FileInfo is one line of memory_list: a file, its summary and size.
type FileInfo struct {
	Path    string `json:"path"`
	Summary string `json:"summary"`
	Size    int64  `json:"size"`
}

// index is one user's list of files. Events mark paths dirty (or the whole
// user); List recomputes only what is dirty, so it is never stale and
// costs nothing when nothing changed.
type index struct {
	mu        sync.Mutex
	files     map[string]FileInfo
	dirty     map[string]struct{}
	full      bool // rescan both folders at the next List
	unwatched bool // no events arrive: rescan at every List
	sorted    []FileInfo
}

func newIndex() *index {
	return &index{files: map[string]FileInfo{}, dirty: map[string]struct{}{}, full: true}
}

func (x *index) invalidate(p string) {
	x.mu.Lock()
	x.dirty[p] = struct{}{}
	x.sorted = nil
	x.mu.Unlock()
}

func (x *index) invalidateAll(unwatched bool) {
	x.mu.Lock()
	x.full = true
	x.unwatched = x.unwatched || unwatched
	x.sorted = nil
	x.mu.Unlock()
}

// set records what a store write just produced, so the writer's own next
// List sees it without waiting for the event.
func (x *index) set(p string, text []byte) {
	x.mu.Lock()
	x.files[p] = FileInfo{Path: p, Summary: FileSummary(string(text)), Size: int64(len(text))}
	x.sorted = nil
	x.mu.Unlock()
}

// list returns the current files (read-only); root may be nil when the
// user has no folder.
func (x *index) list(root *os.Root) []FileInfo {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.full || x.unwatched {
		x.rescan(root)
	} else {
		for p := range x.dirty {
			x.refresh(root, p)
		}
	}
	clear(x.dirty)
	if x.sorted == nil {
		x.sorted = make([]FileInfo, 0, len(x.files))
		for _, f := range x.files {
			x.sorted = append(x.sorted, f)
		}
		sortFiles(x.sorted)
	}
	// Shared, never modified: a change builds a new slice.
	return x.sorted
}

func (x *index) rescan(root *os.Root) {
	x.full = false
	x.sorted = nil
	seen := map[string]bool{}
	if root != nil {
		for _, sub := range []string{factsDir, episodesDir} {
			for _, name := range readDirNames(root, sub) {
				p := sub + "/" + name
				if _, err := ParsePath(p); err == nil {
					seen[p] = true
					x.refresh(root, p)
				}
			}
		}
	}
	for p := range x.files {
		if !seen[p] {
			delete(x.files, p)
		}
	}
}

// refresh re-reads one file's size and summary; a file that is gone or is
// not a plain file drops out of the index.
func (x *index) refresh(root *os.Root, p string) {
	x.sorted = nil
	if root == nil {
		delete(x.files, p)
		return
	}
	f, fi, err := openRegular(root, p)
	if err != nil {
		delete(x.files, p)
		return
	}
	defer f.Close()
	head := make([]byte, summaryHead)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		delete(x.files, p)
		return
	}
	x.files[p] = FileInfo{Path: p, Summary: FileSummary(string(head[:n])), Size: fi.Size()}
}

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
