package memory

import (
	"os"
	"strings"
	"sync"
)

// A start answers from the cache without checking every file. The names
// are exact: a folder whose stat is still the mark the cache noted holds
// the cached names (dirMark); any other is listed (one getdents pass, no
// stat), so a file created, deleted or renamed while mnemo was stopped is
// seen at once, and a new one is read. Whether a cached file's content is
// still what its summary says needs its own stat (size, time, inode):
// a save in place changes nothing about its folder, so no folder's time
// or marker can vouch for it. So an index shows only files checked since
// the start (checkHead: the few its budget can show, ~200 of 4 KB), and
// anything that lists them all (memory_list, /memory, the history's
// baseline after the first reply, a reflection) checks the rest first,
// once. Until then the entries are lazy; the watcher's events and the
// store's writes make an entry current (put), as before.

// quickStart loads the cache and lists the folders its marks do not vouch
// for instead of a rescan, when the index is watched, was never loaded and
// a cache has entries; false: rescan.
func (x *index) quickStart(root *os.Root) bool {
	if x.loaded || x.unwatched || x.reread || root == nil || x.cache == "" {
		return false
	}
	had := len(x.files) // read in this run before: checked (entry.checked)
	x.loaded = true
	x.load()
	if len(x.files) == had {
		return false // nothing cached: a rescan reads every file anyway
	}
	x.full = false
	x.lazy = true
	// A folder whose mark vouches for its names is not listed: its
	// entries are its files. Another is listed, and a name is looked up
	// as sub/name made in buf (no string per file); only a file new since
	// the cache was written gets its own.
	var buf []byte
	var fresh [2][]string
	var names [2][]string
	var marks [2]dirMark
	var skip [2]bool
	listed, cached := 0, len(x.files)
	for k, sub := range [2]string{factsDir, episodesDir} {
		if skip[k] = vouches(root, sub, x.marks[k]); skip[k] {
			listed += x.inFolder(k)
			continue
		}
		var d *os.File
		if d, names[k], marks[k] = x.openDir(root, sub); d != nil {
			d.Close()
		}
		for _, name := range names[k] {
			buf = append(append(append(buf[:0], sub...), '/'), name...)
			if _, ok := x.files[string(buf)]; ok {
				listed++
			} else if p := string(buf); validPath(p) {
				fresh[k] = append(fresh[k], p)
			} else if x.removeLeftover(root, p) {
				marks[k] = dirMark{}
			}
		}
	}
	if listed < cached { // some are gone (names are unique)
		seen := make(map[string]bool, listed)
		for k, sub := range [2]string{factsDir, episodesDir} {
			for _, name := range names[k] {
				seen[sub+"/"+name] = true
			}
		}
		for p := range x.files {
			if !skip[folderOf(p)] && !seen[p] {
				x.drop(p)
			}
		}
	}
	for k := range fresh {
		for _, p := range fresh[k] {
			x.refresh(root, p) // new since the cache was written
		}
		if !skip[k] {
			m := marks[k]
			for _, p := range fresh[k] {
				if _, ok := x.files[p]; !ok {
					m = dirMark{} // not a plain file: see setMark
				}
			}
			x.keepMark(k, m)
		}
	}
	return true
}

// checkHead checks against the disk the lazy entries among the first n
// files of List's order (n < 0: all of them), re-reading those that
// changed; the order is the paths', so a re-read moves nothing, and a
// file gone brings the next one into the head, checked in turn.
func (x *index) checkHead(root *os.Root, n int) {
	x.checkPicked(root, func(sorted []FileInfo) []FileInfo { return headOf(sorted, n) })
}

// headOf is the start of sorted that holds its first n files as the index
// shows them (foldRollups: a roll-up in place of the files it covers), the
// covered ones among them; all of sorted for n < 0.
func headOf(sorted []FileInfo, n int) []FileInfo {
	if n < 0 || n >= len(sorted) {
		return sorted
	}
	shown := foldRollups(sorted)
	if len(shown) == len(sorted) || n == 0 {
		return sorted[:n]
	}
	if n >= len(shown) {
		return sorted
	}
	// The files of both are in one order: the n-th shown is found walking.
	last, i := shown[n-1].Path, 0
	for sorted[i].Path != last {
		i++
	}
	return sorted[:i+1]
}

// checkPicked checks against the disk the lazy entries among the files
// pick chooses from List's order (without repeating one), re-reading
// those that changed, and picks again until all it picks are checked: a
// re-read changes a size pick may have counted, and a file gone brings
// another into what it picks. When pick takes every file, no entry is
// lazy any more. x.mu is held.
func (x *index) checkPicked(root *os.Root, pick func(sorted []FileInfo) []FileInfo) {
	for x.lazy {
		x.sort()
		picked := pick(x.sorted)
		var todo []string
		for _, f := range picked {
			if !x.files[f.Path].checked {
				todo = append(todo, f.Path)
			}
		}
		if len(todo) == 0 {
			if len(picked) == len(x.sorted) {
				x.lazy = false // every entry is checked
			}
			return
		}
		for _, p := range x.untrusted(root, todo) {
			x.refresh(root, p)
		}
		for _, p := range todo {
			x.markChecked(p)
		}
	}
}

// preloadPick is what a reflection's pre-load (preload) of factsBudget
// shows of sorted, List's order: the fact files in order until their
// sizes together pass factsBudget (all of them while they fit: their
// text is pre-loaded, read afresh, and the choice between text and
// index rests on their sizes), at least as many as the facts' index can
// show, and as many episode files as the episodes' index can show.
// Checked, these make the pre-load what it would be with every entry
// checked: the sum of sizes it compares with factsBudget is exact when
// it fits, and past factsBudget in the checked ones alone when it does
// not (a file's size is never below 0), whatever the others hold.
func preloadPick(sorted []FileInfo, factsBudget int) []FileInfo {
	nf := 0
	for nf < len(sorted) && strings.HasPrefix(sorted[nf].Path, factsDir+"/") {
		nf++
	}
	var sum int64
	n := 0
	for n < nf && sum <= int64(factsBudget) {
		sum += sorted[n].Size
		n++
	}
	n = min(max(n, indexLines(max(factsBudget/4, DefaultIndexBudget))), nf)
	eps := headOf(sorted[nf:], indexLines(DefaultIndexBudget)) // the episode index, roll-ups in place
	if n == nf {
		return sorted[:nf+len(eps)]
	}
	return append(sorted[:n:n], eps...)
}

// preloadListing is List for a reflection's pre-load of factsBudget
// (Session.Preload): while a start's entries are lazy, only the files
// the pre-load shows are checked against the disk (preloadPick), not
// every file.
func (u *User) preloadListing(factsBudget int) (listing, error) {
	if l, ok := u.idx.current(false); ok {
		return l, nil
	}
	root, ref, err := u.openRoot(false)
	if err != nil {
		return listing{}, err
	}
	defer ref.release()
	x := u.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	x.update(root, 0)
	x.checkPicked(root, func(sorted []FileInfo) []FileInfo { return preloadPick(sorted, factsBudget) })
	return x.made(false), nil
}

// untrusted returns those of paths whose entries are no longer trusted
// (entry.trustedStat): one fstatat each against its open folder; many
// are checked in two halves at once (x.files is only read).
func (x *index) untrusted(root *os.Root, paths []string) []string {
	if len(paths) < 2*checkChunk {
		return x.staleOf(root, paths)
	}
	var first []string
	var wg sync.WaitGroup
	half := len(paths) / 2
	wg.Go(func() { first = x.staleOf(root, paths[:half]) })
	second := x.staleOf(root, paths[half:])
	wg.Wait()
	return append(first, second...)
}

// staleOf is untrusted of paths, in one goroutine: each folder is opened
// once and held once (one Control) for the fstatat of all its paths.
func (x *index) staleOf(root *os.Root, paths []string) []string {
	var out []string
	for k, prefix := range [2]string{factsDir + "/", episodesDir + "/"} {
		mine := 0
		for _, p := range paths {
			if folderOf(p) == k {
				mine++
			}
		}
		if mine == 0 {
			continue
		}
		checked := false
		if d, err := root.Open(prefix[:len(prefix)-1]); err == nil {
			if rc, err := d.SyscallConn(); err == nil {
				checked = rc.Control(func(fd uintptr) {
					for _, p := range paths {
						if folderOf(p) == k && !x.files[p].trustedStat(int(fd), p[len(prefix):]) {
							out = append(out, p)
						}
					}
				}) == nil
			}
			d.Close()
		}
		if !checked { // no folder to check them against: none is trusted
			for _, p := range paths {
				if folderOf(p) == k {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// indexLines bounds how many files an index of budget bytes shows: a line
// is at least "- facts/x.md (0B): \n", 20 bytes.
func indexLines(budget int) int {
	if budget <= 0 {
		budget = DefaultIndexBudget
	}
	return budget/20 + 1
}

// indexList is List for an index of budget bytes (View.Index): only the
// files it can show are sure to be checked against the disk (checkHead).
func (u *User) indexList(budget int) ([]FileInfo, error) {
	root, ref, err := u.openRoot(false)
	if err != nil {
		return nil, err
	}
	defer ref.release()
	return u.idx.listHead(root, indexLines(budget)).files, nil
}

// checkChunk is how many lazy entries checkLazy checks per hold of the
// index's lock.
const checkChunk = 256

// checkLazy checks every lazy entry against the disk (as checkHead(-1)),
// a chunk at a time, until stop says to stop: the history's baseline,
// which runs beside the first reply and lists every file, holds the
// index a chunk at a time (the first reply's index waits for one chunk at
// most), and stops at once when a short chat ends rather than finishing
// a check of thousands of files first.
func (u *User) checkLazy(stop func() bool) {
	x := u.idx
	// Started before any List, the baseline starts the index as a List
	// would (quickStart) instead of a rescan that holds the index, and
	// the first reply waiting for it, through one stat per file.
	if root, ref, err := u.openRoot(false); err == nil && root != nil {
		x.listHead(root, 0)
		ref.release()
	}
	x.mu.Lock()
	var todo []string
	if x.lazy {
		todo = make([]string, 0, len(x.files))
		for p, e := range x.files {
			if !e.checked {
				todo = append(todo, p)
			}
		}
	}
	x.mu.Unlock()
	for len(todo) > 0 && !stop() {
		chunk := todo[:min(checkChunk, len(todo))]
		todo = todo[len(chunk):]
		root, ref, err := u.openRoot(false)
		if err != nil || root == nil {
			return // List says why
		}
		x.mu.Lock()
		if x.lazy {
			live := chunk[:0:0]
			for _, p := range chunk {
				if e, ok := x.files[p]; ok && !e.checked {
					live = append(live, p)
				}
			}
			for _, p := range x.untrusted(root, live) {
				x.refresh(root, p)
			}
			for _, p := range live {
				x.markChecked(p)
			}
			if len(todo) == 0 {
				x.lazy = false
			}
		}
		x.mu.Unlock()
		ref.release()
	}
}
