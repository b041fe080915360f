package memory

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// The index cache keeps a user's index between runs, so that a start
// re-reads only the files that changed since: one file per user,
// <Options.IndexCache>/<user>.idx, in this form
//
//	mnemo index cache 3
//	folders 5678 1767225000000000000 1767225000000000000 5679 1767225000000000000 1767225000000000000
//	"facts/user.md" 320 1767225600000000000 1234 1767225700000000000 3 "user name, language"
//	...
//	end 12 9a3c00f1
//
// the folders line the marks of facts/ and episodes/ (dirMark: inode,
// modification and change time, ns; zeros: none), then one line per
// file: path, size, modification time and inode as read,
// when it was read (ns), its flags (1: kept, see User.KeepEach; 2: shared,
// see IsShared) and its summary, the strings Go-quoted; the last line counts the files and is
// the CRC-32 of everything before it. Entries are trusted only while the
// file's size, time and inode are the same (entry.trusted), so a cache
// that is old is merely slower; one that is torn, foreign or corrupt in
// any way is ignored whole and rebuilt. It is written without fsync (temp
// file, rename): losing it costs a rebuild, never a wrong summary.
// Version 1 had no shared flag: such a cache is foreign, and rebuilt.
// Version 2 had no folders line: it is read, its folders listed.
const (
	cacheMagic   = "mnemo index cache 3\n"
	cacheMagicV2 = "mnemo index cache 2\n"
)

// The flags of a cache line.
const (
	flagKept   = 1
	flagShared = 2
)

// maxCacheFile bounds what is read of a cache file (about 100 bytes a
// file), maxCacheLine one line of it (a summary is at most a few hundred).
const (
	maxCacheFile = 64 << 20
	maxCacheLine = 64 << 10
)

// encodeInOrder renders files as a cache file with marks, their paths
// in List's order being order (all of them): an index that keeps its sorted list writes it
// without sorting again. Each line is appended without fmt, its strings
// quoted as strconv.Quote does (plainQuote).
func encodeInOrder(files map[string]entry, order []string, marks [2]dirMark) []byte {
	b := make([]byte, 0, len(cacheMagic)+128+len(order)*96+32)
	b = append(b, cacheMagic...)
	b = append(b, "folders"...)
	for _, m := range marks {
		b = append(b, ' ')
		b = strconv.AppendUint(b, m.Ino, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, m.MTime, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, m.CTime, 10)
	}
	b = append(b, '\n')
	for _, p := range order {
		e := files[p]
		flags := 0
		if e.kept {
			flags |= flagKept
		}
		if e.Shared {
			flags |= flagShared
		}
		b = appendQuoted(b, p)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.key.MTime, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, e.key.Ino, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.readAt, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(flags), 10)
		b = append(b, ' ')
		b = appendQuoted(b, e.Summary)
		b = append(b, '\n')
	}
	return fmt.Appendf(b, "end %d %08x\n", len(order), crc32.ChecksumIEEE(b))
}

// plainQuote reports whether s is printable ASCII without a quote or a
// backslash: strconv.Quote only puts it between quotes, and such a
// quoted string unquotes to itself.
func plainQuote(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// plainByte tells the bytes plainQuote takes: printable ASCII but '"'
// and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendQuoted appends strconv.Quote(s).
func appendQuoted(b []byte, s string) []byte {
	if plainQuote(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	return strconv.AppendQuote(b, s)
}

// quotedPrefix is strconv.QuotedPrefix of s and its unquoted text,
// without copying when it is plain (plainQuote).
func quotedPrefix(s string) (q, text string, err error) {
	if len(s) > 0 && s[0] == '"' {
		if j := strings.IndexByte(s[1:], '"'); j >= 0 && plainQuote(s[1:1+j]) {
			return s[:j+2], s[1 : 1+j], nil
		}
	}
	q, err = strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", err
	}
	text, err = strconv.Unquote(q)
	return q, text, err
}

// listOrder is the paths of files in List's order (sortFiles): the cache
// is written so, and a start that finds nothing changed uses that order
// as it is read, without sorting thousands of entries.
func listOrder(files map[string]entry) []string {
	keys := make([]string, 0, len(files))
	for p := range files {
		keys = append(keys, p)
	}
	slices.SortFunc(keys, comparePaths)
	return keys
}

// comparePaths is the order of List (sortFiles) and of the cache: fact
// files by name, then episode files newest first.
func comparePaths(a, b string) int {
	ka, kb := strings.HasPrefix(a, factsDir+"/"), strings.HasPrefix(b, factsDir+"/")
	switch {
	case ka && !kb:
		return -1
	case kb && !ka:
		return 1
	case ka:
		return strings.Compare(a, b)
	}
	return compareEpisodes(a, b)
}

// errBadCache is every reason a cache file is not used.
var errBadCache = errors.New("not a valid index cache")

// cacheCRC is the CRC-32 of text, copied through a small buffer: the
// cache is parsed as one string, never copied whole into bytes again.
func cacheCRC(text string) uint32 {
	var buf [8 << 10]byte
	var sum uint32
	for text != "" {
		n := copy(buf[:], text)
		sum = crc32.Update(sum, crc32.IEEETable, buf[:n])
		text = text[n:]
	}
	return sum
}

// parseCacheText reads a cache file's text; any flaw rejects it whole. It
// returns the entries, numbered gen+1, gen+2, … in the order of the file
// (entry.gen), and the files in List's order when the file lists them so
// (nil when not: an older cache, sorted by path), and the folders' marks
// (none when it is rejected). Every
// path and summary is a part of text, nothing allocated per line; the
// map is filled once, its length telling a path listed twice.
func parseCacheText(text string, gen uint64) (files map[string]entry, order []FileInfo, marks [2]dirMark, err error) {
	body, ok := strings.CutPrefix(text, cacheMagic)
	v2 := false
	if !ok {
		if body, v2 = strings.CutPrefix(text, cacheMagicV2); !v2 {
			return nil, nil, [2]dirMark{}, fmt.Errorf("%w: no header", errBadCache)
		}
	}
	head := len(text) - len(body)
	i := strings.LastIndexByte(text[:len(text)-1], '\n') + 1 // start of the last line
	if i < head || text[len(text)-1] != '\n' {
		return nil, nil, [2]dirMark{}, fmt.Errorf("%w: no end line", errBadCache)
	}
	n, sum, ok := parseEndLine(text[i:])
	if !ok {
		return nil, nil, [2]dirMark{}, fmt.Errorf("%w: a bad end line", errBadCache)
	}
	if cacheCRC(text[:i]) != sum {
		return nil, nil, [2]dirMark{}, fmt.Errorf("%w: checksum mismatch", errBadCache)
	}
	body = body[:i-head]
	if !v2 {
		line, rest, _ := strings.Cut(body, "\n")
		if marks, ok = parseFoldersLine(line); !ok {
			return nil, nil, [2]dirMark{}, fmt.Errorf("%w: a bad folders line %q", errBadCache, line)
		}
		body = rest
	}
	files = make(map[string]entry, min(n, len(body)/16)) // no line is shorter
	order, inOrder := make([]FileInfo, 0, min(n, len(body)/16)), true
	for rest := body; rest != ""; {
		line, after, _ := strings.Cut(rest, "\n")
		rest = after
		if len(line) > maxCacheLine {
			return nil, nil, [2]dirMark{}, fmt.Errorf("%w: a line of %d bytes", errBadCache, len(line))
		}
		p, e, err := parseCacheLine(line)
		if err != nil {
			return nil, nil, [2]dirMark{}, err
		}
		if inOrder && len(order) > 0 && comparePaths(order[len(order)-1].Path, p) >= 0 {
			inOrder, order = false, nil
		}
		if inOrder {
			order = append(order, e.info(p))
		}
		gen++
		e.gen = gen
		had := len(files)
		if files[p] = e; len(files) == had {
			return nil, nil, [2]dirMark{}, fmt.Errorf("%w: %s listed twice", errBadCache, p)
		}
	}
	if len(files) != n {
		return nil, nil, [2]dirMark{}, fmt.Errorf("%w: %d files, the end line says %d", errBadCache, len(files), n)
	}
	return files, order, marks, nil
}

// parseFoldersLine reads "folders" and the two marks' numbers, exactly
// as encodeInOrder writes them.
func parseFoldersLine(line string) (marks [2]dirMark, ok bool) {
	rest, ok := strings.CutPrefix(line, "folders ")
	if !ok {
		return marks, false
	}
	var nums [6]uint64
	for k := range nums {
		field, after, more := strings.Cut(rest, " ")
		if more == (k == len(nums)-1) {
			return marks, false
		}
		limit := uint64(1<<63 - 1) // a time: an int64, never negative
		if k%3 == 0 {
			limit = 1<<64 - 1 // an inode
		}
		if nums[k], ok = parseDecimal(field, limit); !ok {
			return marks, false
		}
		rest = after
	}
	for k := range marks {
		marks[k] = dirMark{Ino: nums[3*k], MTime: int64(nums[3*k+1]), CTime: int64(nums[3*k+2])}
	}
	return marks, true
}

// parseEndLine reads "end <files> <crc32>\n", exactly as encodeInOrder writes it.
func parseEndLine(line string) (n int, sum uint32, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "end" {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(f[1])
	s, err2 := strconv.ParseUint(f[2], 16, 32)
	if err1 != nil || err2 != nil || line != fmt.Sprintf("end %d %08x\n", n, s) {
		return 0, 0, false
	}
	return n, uint32(s), true
}

// parseDecimal reads a number as encodeInOrder writes it: digits only, no
// sign, no leading zero, at most limit.
func parseDecimal(s string, limit uint64) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if d > 9 {
			return 0, false
		}
		// 18 digits are below 1e18, far from any limit: only the 19th
		// and 20th can pass it (or wrap).
		if i >= 18 && v > (limit-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

func parseCacheLine(line string) (string, entry, error) {
	bad := func(why string) (string, entry, error) {
		return "", entry{}, fmt.Errorf("%w: %s in line %q", errBadCache, why, line)
	}
	qp, p, err := quotedPrefix(line)
	if err != nil {
		return bad("no quoted path")
	}
	if _, err := ParsePath(p); err != nil {
		return bad("a bad path")
	}
	rest, ok := strings.CutPrefix(line[len(qp):], " ")
	if !ok {
		return bad("no fields")
	}
	// size, mtime, inode, read at, flags
	var nums [5]uint64
	for k := range nums {
		field, after, ok := strings.Cut(rest, " ")
		if !ok {
			return bad("too few fields")
		}
		limit := uint64(1<<63 - 1) // an int64, never negative
		if k == 2 {
			limit = 1<<64 - 1 // the inode
		}
		v, ok := parseDecimal(field, limit)
		if !ok {
			return bad("a bad number")
		}
		nums[k], rest = v, after
	}
	if nums[4] > flagKept|flagShared {
		return bad("bad flags")
	}
	qs, summary, err := quotedPrefix(rest)
	if err != nil || qs != rest {
		return bad("no quoted summary")
	}
	size := int64(nums[0])
	e := entry{Summary: summary, Size: size, Shared: nums[4]&flagShared != 0,
		key: statKey{Size: size, MTime: int64(nums[1]), Ino: nums[2]}, readAt: int64(nums[3]), kept: nums[4]&flagKept != 0}
	return p, e, nil
}

// load fills an empty index from its cache file, when there is a good one.
func (x *index) load() {
	if x.cache == "" {
		return
	}
	text, err := readCacheFile(x.cacheRoot, x.cache)
	if err != nil {
		return
	}
	files, order, marks, err := parseCacheText(text, x.gen)
	if err != nil {
		return
	}
	x.gen += uint64(len(files))
	x.marks = marks
	if len(x.files) > 0 {
		order = nil
		maps.Copy(files, x.files) // what this run read before: newer
	}
	x.files, x.sorted, x.stale = files, order, true
}

// readCacheFile reads the cache file name; with root set, the file of
// that base name in root. The text is read straight into the string it is
// parsed as (one copy of the file in memory, not two).
func readCacheFile(root *os.Root, name string) (string, error) {
	var f *os.File
	var err error
	if root != nil {
		f, err = root.Open(filepath.Base(name))
	} else {
		f, err = os.Open(name)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxCacheFile || fi.Size() == 0 {
		return "", fmt.Errorf("%s: %w", name, errBadCache)
	}
	var b strings.Builder
	b.Grow(int(fi.Size()))
	if _, err := io.Copy(&b, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return "", err
	}
	if int64(b.Len()) != fi.Size() {
		return "", fmt.Errorf("%s: %w: changed while read", name, errBadCache)
	}
	return b.String(), nil
}

// save writes the index to its cache file when it changed since it was
// loaded or last saved (and was built at all).
func (x *index) save() error {
	x.mu.Lock()
	if x.cache == "" || !x.loaded || !x.changed {
		x.mu.Unlock()
		return nil
	}
	var data []byte
	if x.sorted != nil && len(x.sorted) == len(x.files) {
		order := make([]string, len(x.sorted))
		for i, f := range x.sorted {
			order[i] = f.Path
		}
		data = encodeInOrder(x.files, order, x.marks)
	} else {
		data = encodeInOrder(x.files, listOrder(x.files), x.marks)
	}
	x.changed = false
	x.mu.Unlock()
	if err := writeCacheFile(x.cacheRoot, x.cache, data); err != nil {
		x.mu.Lock()
		x.changed = true
		x.mu.Unlock()
		return err
	}
	return nil
}

// writeCacheFile replaces name with data (durable.WriteFile: a new temp
// file, never a link followed). No fsync: a cache torn by a crash fails
// its checksum and is rebuilt. With root set, the file of name's base
// name is written in root (made by its owner).
func writeCacheFile(root *os.Root, name string, data []byte) error {
	var dir durable.FS = durable.RootDir{Root: root}
	if root == nil {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return fmt.Errorf("index cache: %w", err)
		}
		dir = durable.Dir(filepath.Dir(name))
	}
	if err := durable.WriteFile(dir, filepath.Base(name), data, durable.WriteOptions{NoSync: true}); err != nil {
		return fmt.Errorf("index cache: %w", err)
	}
	return nil
}

// removeCache deletes the index cache file: it holds summaries of the
// user's files, and a forget must forget. The entry of the forgotten file
// p (every entry for "") goes too, so that the cache written again at
// Close, when the index is listed before, holds nothing of it.
//
// A forget of every file also empties what the index keeps in memory of
// them, cache or not: its entries, listings and rendered indexes.
func (x *index) removeCache(p string) error {
	x.mu.Lock()
	switch {
	case p == "":
		clear(x.files)
		x.sorted, x.changed = nil, false // nothing to write until the index is built again
		x.all, x.shared = listing{}, listing{}
		x.lazy = false
		x.marks = [2]dirMark{}
	case x.cache != "":
		x.drop(p)
		x.changed = true // written again, without what was forgotten, at Close
	}
	x.mu.Unlock()
	if p == "" {
		x.rmu.Lock()
		x.rendered = nil
		x.rmu.Unlock()
	}
	if x.cache == "" {
		return nil
	}
	remove := os.Remove
	if x.cacheRoot != nil {
		remove = func(name string) error { return x.cacheRoot.Remove(filepath.Base(name)) }
	}
	if err := remove(x.cache); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the index cache %s: %w", x.cache, err)
	}
	return nil
}
