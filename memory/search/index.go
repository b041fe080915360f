package search

import (
	"slices"
	"strings"
	"sync"
)

// Index is the search index of one memory folder: every unit of every
// file given to Put, as postings per term. It holds no text: a hit names
// its file, lines and byte range, and the caller reads the text. Safe for
// concurrent use.
type Index struct {
	mu    sync.RWMutex
	terms map[string]int32 // term → its postings in post
	post  [][]uint32       // unit<<8 | weighted frequency (half units, ≤ 255)
	units []unit
	free  []int32 // unit slots no posting names any more
	dead  int     // unit slots removed whose postings are still there
	files map[string]*file
	nums  []*file // files by number (file.num); nil: a free number
	freeN []int32
	// stems are the plain terms (not names, not compounds) of five bytes
	// or more by their first five: a query's stem finds the terms it is a
	// prefix of, or that are a prefix of it (autoscale and autoscaling
	// stem to autoscal and autosc).
	stems map[string][]string
	// The live units' count and total length, of all files and of the
	// shared ones: BM25's N and average length of a view.
	n, nShared     int
	sum, sumShared int
}

// unit is one indexed unit (see parsedUnit); file nil: removed.
type unit struct {
	file        *file
	line, end   int32
	start, stop int32
	date        int32
	length      int32
}

// file is one indexed file.
type file struct {
	path    string
	size    int
	shared  bool
	episode bool  // its units are entries (isEpisodes), not lines
	num     int32 // its slot in Index.nums
	units   []int32
	// Stamp is the caller's version of the text indexed (Put).
	stamp uint64
}

// maxUnits bounds the unit slots (a posting has 24 bits for its unit).
const maxUnits = 1 << 24

// New returns an empty index.
func New() *Index {
	return &Index{terms: map[string]int32{}, files: map[string]*file{}, stems: map[string][]string{}}
}

// Stamp is the stamp path was last Put with, and whether it is indexed.
func (x *Index) Stamp(path string) (uint64, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f, ok := x.files[path]
	if !ok {
		return 0, false
	}
	return f.stamp, true
}

// Paths calls fn with each indexed path and its stamp.
func (x *Index) Paths(fn func(path string, stamp uint64)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for p, f := range x.files {
		fn(p, f.stamp)
	}
}

// Len is how many files are indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.files)
}

// Put indexes text as the file path (replacing what was indexed for it),
// shared when its header says so; stamp is the caller's name for this
// version of the file (Stamp returns it).
func (x *Index) Put(path, text string, shared bool, stamp uint64) {
	parsed := parseFile(path, text) // parse outside the lock
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(path)
	f := &file{path: path, size: len(text), shared: shared, episode: isEpisodes(path), stamp: stamp, units: make([]int32, 0, len(parsed))}
	x.files[path] = f
	if n := len(x.freeN); n > 0 {
		f.num, x.freeN = x.freeN[n-1], x.freeN[:n-1]
		x.nums[f.num] = f
	} else {
		f.num = int32(len(x.nums))
		x.nums = append(x.nums, f)
	}
	for _, pu := range parsed {
		id, ok := x.slot()
		if !ok {
			break // 16 million units: the rest of this file is not searchable
		}
		x.units[id] = unit{file: f, line: int32(pu.line), end: int32(pu.end), start: int32(pu.start), stop: int32(pu.stop), date: pu.date, length: int32(pu.length)}
		f.units = append(f.units, id)
		for t, tf := range pu.terms {
			tid, ok := x.terms[t]
			if !ok {
				tid = int32(len(x.post))
				x.terms[t] = tid
				x.post = append(x.post, nil)
				if k, ok := stemKey(t); ok {
					x.stems[k] = append(x.stems[k], t)
				}
			}
			x.post[tid] = append(x.post[tid], uint32(id)<<8|uint32(min(tf, 255)))
		}
		x.count(f, pu.length, 1)
	}
}

// count adds (sign 1) or takes away (-1) a unit of length n of f from the
// statistics.
func (x *Index) count(f *file, n, sign int) {
	x.n += sign
	x.sum += sign * n
	if f.shared {
		x.nShared += sign
		x.sumShared += sign * n
	}
}

// slot is a free unit slot.
func (x *Index) slot() (int32, bool) {
	if len(x.free) == 0 && x.dead > 0 && len(x.units) >= maxUnits {
		x.compact()
	}
	if n := len(x.free); n > 0 {
		id := x.free[n-1]
		x.free = x.free[:n-1]
		return id, true
	}
	if len(x.units) >= maxUnits {
		return 0, false
	}
	x.units = append(x.units, unit{})
	return int32(len(x.units) - 1), true
}

// Remove takes path out of the index.
func (x *Index) Remove(path string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(path)
}

// Clear empties the index (a forget).
func (x *Index) Clear() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.terms, x.files, x.stems = map[string]int32{}, map[string]*file{}, map[string][]string{}
	x.post, x.units, x.free, x.nums, x.freeN = nil, nil, nil, nil, nil
	x.dead, x.n, x.nShared, x.sum, x.sumShared = 0, 0, 0, 0, 0
}

func (x *Index) remove(path string) {
	f, ok := x.files[path]
	if !ok {
		return
	}
	delete(x.files, path)
	x.nums[f.num] = nil
	x.freeN = append(x.freeN, f.num)
	for _, id := range f.units {
		x.count(f, int(x.units[id].length), -1)
		x.units[id] = unit{}
		x.dead++
	}
	// Postings of removed units are dropped in bulk, once they are a
	// quarter of the index: an edit costs its own file, not the index.
	if x.dead > 256 && x.dead*4 > len(x.units) {
		x.compact()
	}
}

// compact drops the postings of removed units and frees their slots.
func (x *Index) compact() {
	for tid, ps := range x.post {
		keep := ps[:0]
		for _, p := range ps {
			if x.units[p>>8].file != nil {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			keep = nil
		}
		x.post[tid] = keep
	}
	for t, tid := range x.terms {
		if x.post[tid] == nil {
			delete(x.terms, t) // the slot stays; a new term takes a new one
		}
	}
	clear(x.stems)
	for t := range x.terms {
		if k, ok := stemKey(t); ok {
			x.stems[k] = append(x.stems[k], t)
		}
	}
	x.free = x.free[:0]
	for id := range x.units {
		if x.units[id].file == nil {
			x.free = append(x.free, int32(id))
		}
	}
	x.dead = 0
}

// stemKey is the key of a plain term in Index.stems.
func stemKey(t string) (string, bool) {
	if len(t) < minStem || strings.HasPrefix(t, whole) || strings.ContainsAny(t, "-_./+#@") {
		return "", false
	}
	return t[:minStem], true
}

// minStem is the shortest stem that finds its longer and shorter kin.
const minStem = 5

// kin calls fn with each plain term that t is a prefix of, or that is a
// prefix of t, other than t, within three bytes of its length.
func (x *Index) kin(t string, fn func(string)) {
	k, ok := stemKey(t)
	if !ok {
		return
	}
	for _, o := range x.stems[k] {
		if o != t && (strings.HasPrefix(o, t) || strings.HasPrefix(t, o)) && len(o)-len(t) <= 3 && len(t)-len(o) <= 3 {
			fn(o)
		}
	}
}

// Trim gives back the room postings grew into: after many files were
// put at once (a memory's first search), a quarter of the postings'
// space is room for growth that an edit rarely needs.
func (x *Index) Trim() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for tid, ps := range x.post {
		if cap(ps)-len(ps) > 4 {
			x.post[tid] = slices.Clone(ps)
		}
	}
	x.units = slices.Clip(x.units)
}
