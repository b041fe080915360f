package search

import (
	"encoding/binary"
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
	// post is each term's postings, by unit id ascending: the id's
	// difference from the one before as a uvarint, then the weighted
	// frequency as a byte (half units, 1 to 255). A person's words repeat
	// unit after unit, so most postings take two bytes, not the eight of
	// an id and a count. last is each term's last unit id.
	post  [][]byte
	last  []uint32
	units []unit // by id; ids only grow, until a compaction renumbers them
	// flags and lens are each unit's liveness and length again, packed
	// beside each other for the search's inner loop (units is 24 bytes a
	// unit; these are 3).
	flags []uint8
	lens  []uint32
	dead  int // units removed whose postings are still there
	files map[string]*file
	nums  []*file // files by number (file.num); nil: a free number
	freeN []int32
	// stems are the plain terms (not names, not compounds) of five bytes
	// or more by their first five: a query's stem finds the terms it is a
	// prefix of, or that are a prefix of it (autoscale and autoscaling
	// stem to autoscal and autosc).
	stems map[string][]string
	// stemmed caches the stems of this memory's words (stemCache).
	stemmed stemCache
	// The live units' count and total length, of all files and of the
	// shared ones: BM25's N and average length of a view.
	n, nShared     int
	sum, sumShared int
}

// unit is one indexed unit (see parsedUnit): its file's number
// (Index.nums; the number may be another file's once the unit is
// removed: flags say whether it is live), its lines and its date.
type unit struct {
	num       int32
	line, end int32
	date      int32
}

// file is one indexed file.
type file struct {
	path    string
	size    int
	shared  bool
	episode bool  // its units are entries (isEpisodes), not lines
	num     int32 // its slot in Index.nums
	// first and count: its units are first, first+1, … (a file's units
	// are made together, and a compaction keeps their order).
	first, count uint32
	// Stamp is the caller's version of the text indexed (Put).
	stamp uint64
}

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
	parsed := parseFile(path, text, &x.stemmed) // parse outside the lock
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(path)
	_, rollup := rollupEnd(path)
	f := &file{path: path, size: len(text), shared: shared, episode: isEpisodes(path) && !rollup, stamp: stamp, first: uint32(len(x.units)), count: uint32(len(parsed))}
	x.files[path] = f
	if n := len(x.freeN); n > 0 {
		f.num, x.freeN = x.freeN[n-1], x.freeN[:n-1]
		x.nums[f.num] = f
	} else {
		f.num = int32(len(x.nums))
		x.nums = append(x.nums, f)
	}
	for _, pu := range parsed {
		id := uint32(len(x.units))
		x.units = append(x.units, unit{num: f.num, line: int32(pu.line), end: int32(pu.end), date: pu.date})
		x.flags, x.lens = append(x.flags, unitFlags(f, pu.earlier, pu.rollup)), append(x.lens, uint32(pu.length))
		for _, e := range pu.terms {
			t, tf := e.term, e.tf
			tid, ok := x.terms[t]
			if !ok {
				t = strings.Clone(t) // a compound is a piece of the text, which is not kept
				tid = int32(len(x.post))
				x.terms[t] = tid
				x.post, x.last = append(x.post, nil), append(x.last, 0)
				if k, ok := stemKey(t); ok {
					x.stems[k] = append(x.stems[k], t)
				}
			}
			x.post[tid] = appendPosting(x.post[tid], id-x.last[tid], min(tf, 255))
			x.last[tid] = id
		}
		x.count(f, pu.length, 1)
	}
}

// A unit's flags: live (not removed), of a shared file, a fact
// superseded (under "## Earlier"), a line of a roll-up.
const (
	flagLive    = 1
	flagShared  = 2
	flagEarlier = 4
	flagRollup  = 8
)

func unitFlags(f *file, earlier, rollup bool) uint8 {
	fl := uint8(flagLive)
	if f.shared {
		fl |= flagShared
	}
	if earlier {
		fl |= flagEarlier
	}
	if rollup {
		fl |= flagRollup
	}
	return fl
}

// A posting is one uvarint: the unit id's difference from the term's
// last, shifted left by two, and in the low two bits the weighted
// frequency when it is the commonest — one body word (2), a summary's
// (4), a heading's (6) — else 3 and the frequency in the byte after it.
// A posting of a word a person uses often is then one byte.
var tfClasses = [3]byte{2, 4, 6}

// appendPosting appends a posting of the unit delta ids after the
// term's last, of weighted frequency tf (1 to 255).
func appendPosting(ps []byte, delta uint32, tf int) []byte {
	for c, v := range tfClasses {
		if int(v) == tf {
			return binary.AppendUvarint(ps, uint64(delta)<<2|uint64(c))
		}
	}
	return append(binary.AppendUvarint(ps, uint64(delta)<<2|3), byte(tf))
}

// nextPosting decodes the posting at ps[k:]: its id difference, its
// weighted frequency, and where the next one starts.
func nextPosting(ps []byte, k int) (delta uint32, tf byte, next int) {
	v, n := uint64(ps[k]), 1
	if v >= 0x80 {
		v, n = binary.Uvarint(ps[k:])
	}
	k += n
	if c := v & 3; c < 3 {
		return uint32(v >> 2), tfClasses[c], k
	}
	return uint32(v >> 2), ps[k], k + 1
}

// postings calls fn with each posting of ps: unit id and weighted
// frequency (half units).
func postings(ps []byte, fn func(id uint32, tf byte)) {
	id := uint32(0)
	for k := 0; k < len(ps); {
		d, tf, next := nextPosting(ps, k)
		id += d
		fn(id, tf)
		k = next
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
	x.post, x.last, x.units, x.flags, x.lens, x.nums, x.freeN = nil, nil, nil, nil, nil, nil, nil
	x.dead, x.n, x.nShared, x.sum, x.sumShared = 0, 0, 0, 0, 0
	x.stemmed.clear()
}

// Forget takes path out of the index, as a forget does: with the words
// the index remembers the stems of, so that none of the file's is kept.
func (x *Index) Forget(path string) {
	x.Remove(path)
	x.stemmed.clear()
}

func (x *Index) remove(path string) {
	f, ok := x.files[path]
	if !ok {
		return
	}
	delete(x.files, path)
	x.nums[f.num] = nil
	x.freeN = append(x.freeN, f.num)
	for id := f.first; id < f.first+f.count; id++ {
		x.count(f, int(x.lens[id]), -1)
		x.flags[id] = 0
		x.dead++
	}
	// Postings of removed units are dropped in bulk, once they are a
	// quarter of the units: an edit costs its own file, not the index.
	if x.dead > 256 && x.dead*4 > len(x.units) {
		x.compact()
	}
}

// compact drops the removed units and their postings, and numbers the
// units left from 0 in the same order (so every term's postings stay in
// ascending order).
func (x *Index) compact() {
	const gone = ^uint32(0)
	renum := make([]uint32, len(x.units))
	live := x.units[:0]
	for id, u := range x.units {
		renum[id] = gone
		if x.flags[id]&flagLive != 0 {
			renum[id] = uint32(len(live))
			x.flags[len(live)], x.lens[len(live)] = x.flags[id], x.lens[id]
			live = append(live, u)
		}
	}
	clear(x.units[len(live):])
	x.units, x.flags, x.lens = live, x.flags[:len(live)], x.lens[:len(live)]
	for _, f := range x.files {
		if f.count > 0 {
			f.first = renum[f.first]
		} else {
			f.first = 0
		}
	}
	var scratch []byte
	for tid, ps := range x.post {
		scratch = scratch[:0]
		last := uint32(0)
		postings(ps, func(id uint32, tf byte) {
			if renum[id] != gone {
				scratch = appendPosting(scratch, renum[id]-last, int(tf))
				last = renum[id]
			}
		})
		if len(scratch) == 0 {
			x.post[tid] = nil
		} else {
			x.post[tid] = slices.Clone(scratch)
		}
		x.last[tid] = last
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
