package memory

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hash/crc32"

	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/agent/logtest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// parseCache reads a cache file as load does (parseCacheText), without
// the generations load numbers the entries with.
func parseCache(data []byte) (map[string]entry, error) {
	files, _, err := parseCacheInOrder(data)
	return files, err
}

// parseCacheInOrder is parseCache, and the files in List's order when the
// file lists them so.
func parseCacheInOrder(data []byte) (map[string]entry, []FileInfo, error) {
	files, order, _, err := parseCacheText(string(data), 0)
	for p, e := range files {
		e.gen = 0
		files[p] = e
	}
	return files, order, err
}

// cacheHead is what a cache file without marks starts with.
const cacheHead = cacheMagic + "folders 0 0 0 0 0 0\n"

// cachedStore opens a watching store on dir whose index cache is cache.
func cachedStore(t *testing.T, dir, cache string, mod ...func(*Options)) *Store {
	t.Helper()
	return newStore(t, append([]func(*Options){func(o *Options) { o.Dir, o.IndexCache = dir, cache }}, mod...)...)
}

// cacheDirs is a new memory folder and, outside it, where its index cache
// goes.
func cacheDirs(t *testing.T) (dir, cache string) {
	base := t.TempDir()
	return filepath.Join(base, "memory"), filepath.Join(base, "state/index")
}

// writeAged writes a file as a person did an hour ago: old enough that its
// summary, once read, is trusted at the next start (see racySlack).
func writeAged(t *testing.T, name, text string) {
	t.Helper()
	writeFile(t, name, text)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(name, old, old); err != nil {
		t.Fatal(err)
	}
}

// swapSameKey changes a file's text in place keeping its size, time and
// inode: invisible to the cache, so a summary that shows it proves the
// file was read again, and one that does not proves it was not.
func swapSameKey(t *testing.T, name, text string) {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(text)) != fi.Size() {
		t.Fatalf("swapSameKey: %d bytes for a %d-byte file", len(text), fi.Size())
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(text), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(name, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

const (
	factA = "# Work\n\n> Summary: aaaa\n\n- Go dev\n"
	factB = "# Work\n\n> Summary: bbbb\n\n- Go dev\n" // factA's size
)

// A start trusts what the cache says of files whose size, time and inode
// are unchanged, and re-reads every file where any of them changed.
func TestIndexCacheRereadsOnlyChangedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, file string) // between the runs
		want   string                          // the summary the second run lists
	}{
		{"unchanged", func(t *testing.T, file string) { swapSameKey(t, file, factB) }, "aaaa"},
		{"size", func(t *testing.T, file string) { writeAged(t, file, factB+"- more\n") }, "bbbb"},
		{"time", func(t *testing.T, file string) {
			swapSameKey(t, file, factB)
			old := time.Now().Add(-2 * time.Hour)
			os.Chtimes(file, old, old)
		}, "bbbb"},
		{"inode", func(t *testing.T, file string) {
			fi, _ := os.Stat(file)
			tmp := file + ".new"
			writeFile(t, tmp, factB)
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
			if err := os.Rename(tmp, file); err != nil {
				t.Fatal(err)
			}
		}, "bbbb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cache := cacheDirs(t)
			file := filepath.Join(dir, "alice/facts/work.md")
			writeAged(t, file, factA)
			s := cachedStore(t, dir, cache)
			if got := listPaths(t, mustUser(t, s, "alice")); got != "facts/work.md=aaaa" {
				t.Fatalf("first run lists %q", got)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tc.change(t, file)
			s = cachedStore(t, dir, cache)
			if got := listPaths(t, mustUser(t, s, "alice")); got != "facts/work.md="+tc.want {
				t.Fatalf("second run lists %q, want the summary %q", got, tc.want)
			}
		})
	}
}

// A file changed within racySlack of its reading may change again in
// the same tick of the file system's clock without its key changing: it
// is read again at the next start.
func TestIndexCacheRacilyCleanIsReread(t *testing.T) {
	// Modified 1s before it is read (the store's clock stands still):
	// within the slack.
	if got := listAfterSwapAtAge(t, time.Now(), racySlack/2); got != "facts/work.md=bbbb" {
		t.Fatalf("a racily clean entry was trusted: %q", got)
	}
}

// listAfterSwapAtAge reads alice's file, modified age before now (the
// store's clock stands still at now), into the cache, swaps its text for
// factB with the same key, and lists what the next start sees.
func listAfterSwapAtAge(t *testing.T, now time.Time, age time.Duration) string {
	t.Helper()
	dir, cache := cacheDirs(t)
	file := filepath.Join(dir, "alice/facts/work.md")
	writeFile(t, file, factA)
	mtime := now.Add(-age)
	os.Chtimes(file, mtime, mtime)
	clk := func(o *Options) { o.Clock = clocktest.New(now) }
	s := cachedStore(t, dir, cache, clk)
	listPaths(t, mustUser(t, s, "alice"))
	s.Close()
	swapSameKey(t, file, factB)
	s = cachedStore(t, dir, cache, clk)
	return listPaths(t, mustUser(t, s, "alice"))
}

// Files gone, added, or no longer plain single-link files while mnemo
// was not running are seen at the next start.
func TestIndexCacheFilesAddedAndRemoved(t *testing.T) {
	dir, cache := cacheDirs(t)
	alice := filepath.Join(dir, "alice")
	writeAged(t, filepath.Join(alice, "facts/gone.md"), factA)
	writeAged(t, filepath.Join(alice, "facts/linked.md"), factA)
	writeAged(t, filepath.Join(alice, "facts/kept.md"), factA)
	s := cachedStore(t, dir, cache)
	if got := listPaths(t, mustUser(t, s, "alice")); got != "facts/gone.md=aaaa;facts/kept.md=aaaa;facts/linked.md=aaaa" {
		t.Fatalf("first run lists %q", got)
	}
	s.Close()
	os.Remove(filepath.Join(alice, "facts/gone.md"))
	// A hard link changes neither size, time nor inode of the file; it
	// is no longer a memory file mnemo reads (checkRegular).
	if err := os.Link(filepath.Join(alice, "facts/linked.md"), filepath.Join(filepath.Dir(dir), "elsewhere.md")); err != nil {
		t.Fatal(err)
	}
	writeAged(t, filepath.Join(alice, "episodes/2026-01.md"), "# 2026-01 Episodes\n\n> Summary: jan\n")
	s = cachedStore(t, dir, cache)
	if got := listPaths(t, mustUser(t, s, "alice")); got != "facts/kept.md=aaaa;episodes/2026-01.md=jan" {
		t.Fatalf("second run lists %q", got)
	}
}

// The cache file is what encodeCache writes, and a store's own writes,
// the files it read and the entries it dropped all reach it at Close.
func TestIndexCacheWrittenAtClose(t *testing.T) {
	dir, cache := cacheDirs(t)
	// A link at the temp name older mnemos used is not written through,
	// and no temp file is left.
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep me\n"), 0o644)
	os.MkdirAll(cache, 0o700)
	os.Symlink(victim, filepath.Join(cache, "alice.idx.tmp"))
	defer func() {
		if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
			t.Errorf("the link's target was written: %q", b)
		}
		if tmps := durable.Temps(filepath.Join(cache, "alice.idx")); len(tmps) != 0 {
			t.Errorf("temp files left: %v", tmps)
		}
	}()
	writeAged(t, filepath.Join(dir, "alice/facts/work.md"), factA)
	s := cachedStore(t, dir, cache)
	u := mustUser(t, s, "alice")
	listPaths(t, u)
	if err := u.NewSession().Write("facts/user.md", userFact); err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(filepath.Join(cache, "alice.idx"))
	if err != nil {
		t.Fatalf("no cache after Close: %v", err)
	}
	files, err := parseCache(data)
	if err != nil {
		t.Fatalf("the cache written does not parse: %v\n%s", err, data)
	}
	if got := slices.Sorted(mapsKeys(files)); !slices.Equal(got, []string{"facts/user.md", "facts/work.md"}) {
		t.Fatalf("cache holds %v", got)
	}
	if e := files["facts/work.md"]; e.Summary != "aaaa" || e.Size != int64(len(factA)) || e.key.Ino == 0 || e.readAt <= e.key.MTime {
		t.Errorf("work.md entry = %+v", e)
	}
	if !bytes.Equal(encodeCache(files), data) {
		t.Error("the cache does not round-trip")
	}
	// user.md, just written, is re-read at the next start (racily clean,
	// see racySlack); once it is old, a run where nothing changed does
	// not write the cache again.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "alice/facts/user.md"), old, old)
	s = cachedStore(t, dir, cache)
	listPaths(t, mustUser(t, s, "alice"))
	s.Close()
	os.Chtimes(filepath.Join(cache, "alice.idx"), old, old)
	before, _ := os.Stat(filepath.Join(cache, "alice.idx"))
	s = cachedStore(t, dir, cache)
	listPaths(t, mustUser(t, s, "alice"))
	s.Close()
	after, _ := os.Stat(filepath.Join(cache, "alice.idx"))
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("an unchanged index was written again")
	}
}

func mapsKeys(m map[string]entry) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A cache file that is torn, foreign or corrupt is ignored whole: the
// index is built from the files, and a good cache replaces it at Close.
func TestIndexCacheCorruptIsRebuilt(t *testing.T) {
	good := encodeCache(map[string]entry{"facts/work.md": {Summary: "stale", Size: 1, key: statKey{1, 1, 1}, readAt: 1 << 62}})
	for name, data := range map[string][]byte{
		"empty":    {},
		"foreign":  []byte("hello\n"),
		"torn":     good[:len(good)-10],
		"flipped":  bytes.Replace(good, []byte("stale"), []byte("stalf"), 1),
		"a folder": nil,
	} {
		t.Run(name, func(t *testing.T) {
			dir, cache := cacheDirs(t)
			writeAged(t, filepath.Join(dir, "alice/facts/work.md"), factA)
			if data == nil {
				os.MkdirAll(filepath.Join(cache, "alice.idx"), 0o700)
			} else {
				writeFile(t, filepath.Join(cache, "alice.idx"), string(data))
			}
			var logs logtest.Buffer
			s := cachedStore(t, dir, cache, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			if got := listPaths(t, mustUser(t, s, "alice")); got != "facts/work.md=aaaa" {
				t.Fatalf("lists %q", got)
			}
			s.Close()
			if data == nil {
				if !strings.Contains(logs.String(), "could not keep the index") {
					t.Errorf("an unwritable cache was not logged:\n%s", logs.String())
				}
				return
			}
			written, _ := os.ReadFile(filepath.Join(cache, "alice.idx"))
			if files, err := parseCache(written); err != nil || files["facts/work.md"].Summary != "aaaa" {
				t.Errorf("not rebuilt: %v %q", err, written)
			}
		})
	}
}

// The one a good cache differs from in one way each: every flaw is found.
func TestParseCacheRejects(t *testing.T) {
	line := `"facts/a.md" 10 20 30 40 1 "sum"` + "\n"
	file := func(body string, n int) []byte {
		b := cacheHead + body
		return fmt.Appendf(nil, "%send %d %08x\n", b, n, crc32IEEE([]byte(b)))
	}
	if files, err := parseCache(file(line, 1)); err != nil || files["facts/a.md"] != (entry{Summary: "sum", Size: 10, key: statKey{10, 20, 30}, readAt: 40, kept: true}) {
		t.Fatalf("the good one: %+v %v", files, err)
	}
	if files, err := parseCache(file(strings.Replace(line, " 1 ", " 0 ", 1), 1)); err != nil || files["facts/a.md"].kept || files["facts/a.md"].Shared {
		t.Fatalf("flags 0: %+v %v", files, err)
	}
	if files, err := parseCache(file(strings.Replace(line, " 1 ", " 2 ", 1), 1)); err != nil || files["facts/a.md"].kept || !files["facts/a.md"].Shared {
		t.Fatalf("flags 2 (shared): %+v %v", files, err)
	}
	if files, err := parseCache(file(strings.Replace(line, " 1 ", " 3 ", 1), 1)); err != nil || !files["facts/a.md"].kept || !files["facts/a.md"].Shared {
		t.Fatalf("flags 3 (kept, shared): %+v %v", files, err)
	}
	if files, err := parseCache(file("", 0)); err != nil || len(files) != 0 {
		t.Fatalf("no files: %+v %v", files, err)
	}
	if files, err := parseCache(file(strings.Replace(line, "30", "18446744073709551615", 1), 1)); err != nil || files["facts/a.md"].key.Ino != 1<<64-1 {
		t.Fatalf("the largest inode: %+v %v", files, err)
	}
	if files, err := parseCache(file(strings.Replace(line, " 10 20 ", " 9223372036854775807 9223372036854775807 ", 1), 1)); err != nil || files["facts/a.md"].Size != 1<<63-1 || files["facts/a.md"].key.MTime != 1<<63-1 {
		t.Fatalf("the largest size and time: %+v %v", files, err)
	}
	// The longest line taken, and one byte more.
	long := func(n int) string {
		head := `"facts/a.md" 1 2 3 4 0 "`
		return head + strings.Repeat("x", n-len(head)-1) + `"` + "\n"
	}
	if files, err := parseCache(file(long(maxCacheLine), 1)); err != nil || len(files["facts/a.md"].Summary) != maxCacheLine-len(`"facts/a.md" 1 2 3 4 0 ""`) {
		t.Fatalf("a line of maxCacheLine bytes: %v", err)
	}
	if _, err := parseCache(file(long(maxCacheLine+1), 1)); err == nil {
		t.Fatal("a line over maxCacheLine accepted")
	}
	good := file(line, 1)
	for name, data := range map[string][]byte{
		"no header":        good[1:],
		"other version":    bytes.Replace(good, []byte("cache 3"), []byte("cache 1"), 1),
		"no newline":       good[:len(good)-1],
		"only the header":  []byte(cacheHead),
		"header and a bit": []byte(cacheHead + "x"),
		"no folders line":  bytes.Replace(good, []byte("folders 0 0 0 0 0 0\n"), nil, 1),
		"folders short":    bytes.Replace(good, []byte("folders 0 0 0 0 0 0\n"), []byte("folders 0 0 0 0 0\n"), 1),
		"folders long":     bytes.Replace(good, []byte("folders 0 0 0 0 0 0\n"), []byte("folders 0 0 0 0 0 0 0\n"), 1),
		"folders space":    bytes.Replace(good, []byte("folders 0 0 0 0 0 0\n"), []byte("folders 0 0 0 0 0 0 \n"), 1),
		"folders word":     bytes.Replace(good, []byte("folders 0"), []byte("Folders 0"), 1),
		"folders sign":     bytes.Replace(good, []byte("folders 0 0"), []byte("folders 0 -1"), 1),
		"folders time":     bytes.Replace(good, []byte("folders 0 0"), []byte("folders 0 9223372036854775808"), 1),
		"bad checksum":     bytes.Replace(good, []byte("sum"), []byte("sun"), 1),
		"count high":       file(line, 2),
		"count low":        file(line+strings.Replace(line, "a.md", "b.md", 1), 1),
		"end spaces":       bytes.Replace(good, []byte("end 1 "), []byte("end  1 "), 1),
		"end word":         bytes.Replace(good, []byte("end 1"), []byte("End 1"), 1),
		"end long sum":     bytes.Replace(good, []byte(fmt.Sprintf(" %08x", crc32IEEE([]byte(cacheHead+line)))), []byte(fmt.Sprintf(" 0%08x", crc32IEEE([]byte(cacheHead+line)))), 1),
		"end fields":       bytes.Replace(good, []byte("end 1"), []byte("end"), 1),
		"end count":        bytes.Replace(good, []byte("end 1"), []byte("end x"), 1),
		"duplicate":        file(line+line, 2),
		"unquoted path":    file(strings.Replace(line, `"facts/a.md"`, `facts/a.md`, 1), 1),
		"bad path":         file(strings.Replace(line, "facts/a.md", "facts/../a.md", 1), 1),
		"path only":        file(`"facts/a.md"`+"\n", 1),
		"few numbers":      file(`"facts/a.md" 10 20 "sum"`+"\n", 1),
		"negative":         file(strings.Replace(line, " 10 ", " -10 ", 1), 1),
		"plus sign":        file(strings.Replace(line, " 10 ", " +10 ", 1), 1),
		"leading zero":     file(strings.Replace(line, " 10 ", " 010 ", 1), 1),
		"size overflow":    file(strings.Replace(line, " 10 ", " 9223372036854775808 ", 1), 1),
		"inode overflow":   file(strings.Replace(line, " 30 ", " 18446744073709551616 ", 1), 1),
		"inode too long":   file(strings.Replace(line, " 30 ", " 118446744073709551615 ", 1), 1),
		"empty number":     file(strings.Replace(line, " 10 ", "  ", 1), 1),
		"not a number":     file(strings.Replace(line, " 20 ", " x ", 1), 1),
		"flags 4":          file(strings.Replace(line, " 1 ", " 4 ", 1), 1),
		"unquoted summary": file(strings.Replace(line, `"sum"`, `sum`, 1), 1),
		"after summary":    file(strings.Replace(line, `"sum"`, `"sum" x`, 1), 1),
		"a long line":      file(`"facts/a.md" 1 2 3 4 0 "`+strings.Repeat("x", 1<<20)+`"`+"\n", 1),
	} {
		if files, err := parseCache(data); err == nil {
			t.Errorf("%s: accepted: %+v", name, files)
		}
	}
}

// encodeCacheFmt is encodeCache as written with fmt and strconv.Quote.
func encodeCacheFmt(files map[string]entry) []byte {
	var b bytes.Buffer
	b.WriteString(cacheHead)
	for _, p := range listOrder(files) {
		e := files[p]
		flags := 0
		if e.kept {
			flags |= flagKept
		}
		if e.Shared {
			flags |= flagShared
		}
		fmt.Fprintf(&b, "%s %d %d %d %d %d %s\n", strconv.Quote(p), e.Size, e.key.MTime, e.key.Ino, e.readAt, flags, strconv.Quote(e.Summary))
	}
	fmt.Fprintf(&b, "end %d %08x\n", len(files), crc32.ChecksumIEEE(b.Bytes()))
	return b.Bytes()
}

// quotedPrefix is strconv.QuotedPrefix and Unquote, whatever the text.
func FuzzQuotedPrefix(f *testing.F) {
	for _, s := range []string{`"plain" rest`, `"a \"q\"" x`, `"tab\t"`, `"é"`, `"open`, `x"y"`, `""`, "\"\x00\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, text, err := quotedPrefix(s)
		wq, werr := strconv.QuotedPrefix(s)
		if (err != nil) != (werr != nil) || q != wq {
			t.Fatalf("quotedPrefix(%q) = %q, %v; strconv: %q, %v", s, q, err, wq, werr)
		}
		if err == nil {
			if w, _ := strconv.Unquote(wq); w != text {
				t.Fatalf("quotedPrefix(%q) text %q, strconv %q", s, text, w)
			}
		}
	})
}

// FuzzParseDecimal: parseDecimal takes exactly what strconv.ParseUint
// takes up to the limit, without a sign or a leading zero.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "10", "007", "+1", "-1", "", "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616", "1_0"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, inode bool) {
		bits, limit := 63, uint64(1<<63-1)
		if inode {
			bits, limit = 64, 1<<64-1
		}
		v, ok := parseDecimal(s, limit)
		w, err := strconv.ParseUint(s, 10, bits)
		want := err == nil && s[0] != '+' && !strings.Contains(s, "_") && (len(s) == 1 || s[0] != '0')
		if ok != want || (ok && v != w) {
			t.Fatalf("parseDecimal(%q) = %d, %v; strconv: %d, %v", s, v, ok, w, err)
		}
	})
}

func FuzzParseCache(f *testing.F) {
	f.Add(encodeCache(map[string]entry{
		"facts/a.md":          {Summary: "a \"quoted\" summary\twith tab", Size: 10, Shared: true, key: statKey{10, 20, 30}, readAt: 40, kept: true},
		"episodes/2026-01.md": {},
	}))
	f.Add([]byte(cacheHead + "end 0 00000000\n"))
	f.Add(encodeInOrder(map[string]entry{"facts/a.md": {Summary: "s"}}, []string{"facts/a.md"}, [2]dirMark{{1, 2, 3}, {1<<64 - 1, 1<<63 - 1, 5}}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := parseCache(data)
		if err != nil {
			return
		}
		// What parses is exactly what encodeCache writes of it, written
		// as fmt and strconv.Quote write it.
		if enc := encodeCache(files); !bytes.Equal(enc, encodeCacheFmt(files)) {
			t.Fatalf("encodeCache wrote %q, fmt writes %q", enc, encodeCacheFmt(files))
		}
		again, err := parseCache(encodeCache(files))
		if err != nil {
			t.Fatalf("re-encoded cache does not parse: %v", err)
		}
		for p, e := range files {
			if again[p] != e {
				t.Fatalf("%s: %+v, re-parsed %+v", p, e, again[p])
			}
		}
		if len(again) != len(files) {
			t.Fatalf("%d entries, re-parsed %d", len(files), len(again))
		}
		// The folders' marks too, as read.
		_, order, marks, _ := parseCacheText(string(data), 0)
		enc := encodeInOrder(files, listOrder(files), marks)
		if _, _, got, err := parseCacheText(string(enc), 0); err != nil || got != marks {
			t.Fatalf("marks %v re-parsed as %v, %v", marks, got, err)
		}
		// A cache of this version in List's order is written again as it was.
		if bytes.HasPrefix(data, []byte(cacheMagic)) && order != nil && !bytes.Equal(enc, data) {
			t.Fatalf("read %q, written again %q", data, enc)
		}
	})
}

// A forget removes the cache file (it holds the user's summaries);
// without files to forget, nothing is removed.
func TestForgetRemovesIndexCache(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprint("whole=", whole), func(t *testing.T) {
			dir, cache := cacheDirs(t)
			writeAged(t, filepath.Join(dir, "alice/facts/work.md"), factA)
			writeAged(t, filepath.Join(dir, "alice/facts/user.md"), userFact)
			s := cachedStore(t, dir, cache)
			u := mustUser(t, s, "alice")
			listPaths(t, u)
			s.Close()
			s = cachedStore(t, dir, cache)
			u = mustUser(t, s, "alice")
			if whole {
				if err := u.RemoveAll(); err != nil {
					t.Fatal(err)
				}
			} else if err := u.Remove("facts/work.md"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(cache, "alice.idx")); !os.IsNotExist(err) {
				t.Fatalf("the cache survived the forget: %v", err)
			}
			// Written again at Close, without what was forgotten.
			want := "facts/user.md=user name, language"
			if whole {
				want = ""
			}
			if got := listPaths(t, u); got != want {
				t.Fatalf("lists %q", got)
			}
			s.Close()
			data, _ := os.ReadFile(filepath.Join(cache, "alice.idx"))
			if bytes.Contains(data, []byte("work.md")) || bytes.Contains(data, []byte("aaaa")) {
				t.Fatalf("the forgotten file is in the cache again:\n%s", data)
			}
		})
	}
}

// A forget that nothing lists after it leaves no cache at Close either
// (the entries of what was forgotten are not written back).
func TestForgetWithoutListingWritesNoCache(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprint("whole=", whole), func(t *testing.T) {
			dir, cache := cacheDirs(t)
			writeAged(t, filepath.Join(dir, "alice/facts/work.md"), factA)
			writeAged(t, filepath.Join(dir, "alice/facts/user.md"), userFact)
			s := cachedStore(t, dir, cache)
			u := mustUser(t, s, "alice")
			listPaths(t, u)
			var err error
			if whole {
				err = u.RemoveAll()
			} else {
				err = u.Remove("facts/work.md")
			}
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			data, err := os.ReadFile(filepath.Join(cache, "alice.idx"))
			if whole && !os.IsNotExist(err) {
				t.Fatalf("a cache was written for a forgotten user (%v):\n%s", err, data)
			}
			if bytes.Contains(data, []byte("work.md")) {
				t.Fatalf("the forgotten file is in the cache again:\n%s", data)
			}
		})
	}
}

// A cache file that cannot be removed makes the forget fail, naming it.
func TestForgetIndexCacheUnremovable(t *testing.T) {
	dir, cache := cacheDirs(t)
	writeAged(t, filepath.Join(dir, "alice/facts/work.md"), factA)
	writeFile(t, filepath.Join(cache, "alice.idx", "x"), "a folder where the cache file goes")
	s := cachedStore(t, dir, cache)
	u := mustUser(t, s, "alice")
	if err := u.RemoveAll(); err == nil || !strings.Contains(err.Error(), "remove the index cache") {
		t.Fatalf("RemoveAll = %v", err)
	}
}

// A store that does not watch reads the cache but never writes it: it
// may not be the process that owns the memory.
func TestIndexCacheNotWrittenWithoutWatcher(t *testing.T) {
	dir, cache := cacheDirs(t)
	file := filepath.Join(dir, "alice/facts/work.md")
	writeAged(t, file, factA)
	s := cachedStore(t, dir, cache)
	listPaths(t, mustUser(t, s, "alice"))
	s.Close()
	swapSameKey(t, file, factB)
	os.Remove(filepath.Join(dir, "alice/facts/gone.md"))
	s = cachedStore(t, dir, cache, func(o *Options) { o.Watch = false })
	u := mustUser(t, s, "alice")
	if got := listPaths(t, u); got != "facts/work.md=aaaa" {
		t.Fatalf("the unwatched store did not use the cache: %q", got)
	}
	writeAged(t, filepath.Join(dir, "alice/facts/new.md"), userFact)
	listPaths(t, u)
	before, _ := os.ReadFile(filepath.Join(cache, "alice.idx"))
	s.Close()
	after, _ := os.ReadFile(filepath.Join(cache, "alice.idx"))
	if !bytes.Equal(before, after) {
		t.Error("an unwatched store wrote the cache")
	}
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// settle waits until the watcher handled every event of the folder dir so
// far: events arrive in order, so once a new marker file's is handled,
// the earlier ones are.
func settle(t testing.TB, dir string) {
	t.Helper()

	marker := filepath.Join(dir, fmt.Sprintf(".marker-%d", time.Now().UnixNano()))
	writeFile(t, marker, "")
	eventually(t, "the events handled", func() bool { return watchLog.seen(marker) })
}

// keepLog records what KeepEach handed to keep.
type keepLog struct {
	got  []string
	fail map[string]bool // paths whose keep fails
	then func(p string)  // called after keeping p
}

func (k *keepLog) keep(p string, text []byte) error {
	k.got = append(k.got, p+"="+FileSummary(string(text)))
	if k.then != nil {
		k.then(p)
	}
	if k.fail[p] {
		return fmt.Errorf("cannot keep %s", p)
	}
	return nil
}

func keepAll(t *testing.T, u *User, k *keepLog) string {
	t.Helper()
	k.got = nil
	if _, err := u.KeepEach(func() bool { return false }, k.keep); err != nil {
		t.Fatalf("KeepEach: %v", err)
	}
	return strings.Join(k.got, ";")
}

// KeepEach hands over each file once until it changes, across runs too.
func TestKeepEach(t *testing.T) {
	dir, cache := cacheDirs(t)
	alice := filepath.Join(dir, "alice")
	writeAged(t, filepath.Join(alice, "facts/work.md"), factA)
	writeAged(t, filepath.Join(alice, "facts/user.md"), userFact)
	s := cachedStore(t, dir, cache)
	u := mustUser(t, s, "alice")
	k := &keepLog{fail: map[string]bool{"facts/work.md": true}}
	if got := keepAll(t, u, k); got != "facts/user.md=user name, language;facts/work.md=aaaa" {
		t.Fatalf("first KeepEach kept %q", got)
	}
	// work.md's keep failed: it is handed over again, user.md is not.
	k.fail = nil
	if got := keepAll(t, u, k); got != "facts/work.md=aaaa" {
		t.Fatalf("second KeepEach kept %q", got)
	}
	if got := keepAll(t, u, k); got != "" {
		t.Fatalf("third KeepEach kept %q", got)
	}
	// A hand edit, seen by the watcher, hands the file over again.
	writeFile(t, filepath.Join(alice, "facts/work.md"), factB)
	settle(t, filepath.Join(alice, "facts"))
	if got := keepAll(t, u, k); got != "facts/work.md=bbbb" {
		t.Fatalf("after an edit KeepEach kept %q", got)
	}
	s.Close()
	// The next run remembers what was kept; a file changed while mnemo
	// was not running is handed over again.
	writeAged(t, filepath.Join(alice, "facts/user.md"), userFact+"- more\n")
	writeAged(t, filepath.Join(alice, "facts/work.md"), factB) // only its time changes
	s = cachedStore(t, dir, cache)
	u = mustUser(t, s, "alice")
	if got := keepAll(t, u, k); got != "facts/user.md=user name, language;facts/work.md=bbbb" {
		t.Fatalf("next run kept %q", got)
	}
	s.Close()
	s = cachedStore(t, dir, cache)
	if got := keepAll(t, mustUser(t, s, "alice"), k); got != "" {
		t.Fatalf("a run after that kept %q", got)
	}
}

// A file that changes while it is being kept is not marked kept: the
// next KeepEach hands over its new text.
func TestKeepEachFileChangedMeanwhile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	file := filepath.Join(dir, "alice/facts/work.md")
	writeFile(t, file, factA)
	s := newStore(t, func(o *Options) { o.Dir = dir })
	u := mustUser(t, s, "alice")
	k := &keepLog{then: func(string) {
		writeFile(t, file, factB)
		settle(t, filepath.Join(s.Dir(), "alice/facts"))
	}}
	var marked int
	var err error
	if marked, err = u.KeepEach(func() bool { return false }, k.keep); err != nil || marked != 0 {
		t.Fatalf("KeepEach = %d, %v; want nothing marked", marked, err)
	}
	k.then = nil
	if got := keepAll(t, u, k); got != "facts/work.md=bbbb" {
		t.Fatalf("next KeepEach kept %q", got)
	}
}

// KeepEach stops when asked, skips files gone since the list, marks
// nothing without a watcher and fails on a broken folder.
func TestKeepEachEdges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	alice := filepath.Join(dir, "alice")
	writeFile(t, filepath.Join(alice, "facts/a.md"), factA)
	writeFile(t, filepath.Join(alice, "facts/b.md"), factB)
	s := newStore(t, func(o *Options) { o.Dir = dir })
	u := mustUser(t, s, "alice")
	calls := 0
	n, err := u.KeepEach(func() bool { return calls == 1 }, func(string, []byte) error { calls++; return nil })
	if n != 1 || err != nil || calls != 1 {
		t.Fatalf("stopped KeepEach = %d, %v after %d calls", n, err, calls)
	}
	k := &keepLog{}
	// b.md is listed but gone when its turn comes.
	os.Remove(filepath.Join(alice, "facts/b.md"))
	if got := keepAll(t, u, k); got != "" {
		t.Fatalf("kept %q", got)
	}

	// Without a watcher, nothing is ever marked.
	s.Close()
	s = newStore(t, func(o *Options) { o.Dir, o.Watch = dir, false })
	u = mustUser(t, s, "alice")
	for range 2 {
		if got := keepAll(t, u, k); got != "facts/a.md=aaaa" {
			t.Fatalf("unwatched KeepEach kept %q", got)
		}
	}
	makeLayout(t, s.Dir(), []string{"eve"})
	if _, err := mustUser(t, s, "eve").KeepEach(func() bool { return false }, k.keep); err == nil {
		t.Fatal("KeepEach of a broken folder succeeded")
	}
}

// A store watches the folders of the users it is asked for, not every
// user's: start-up and exit do not grow with the number of users.
func TestWatchesOnlyUsersAskedFor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	for _, name := range []string{"alice", "bob"} {
		writeFile(t, filepath.Join(dir, name, "facts/user.md"), userFact)
	}
	s := newStore(t, func(o *Options) { o.Dir = dir })
	if got := s.w.WatchList(); len(got) != 1 || got[0] != dir {
		t.Fatalf("watching %v at Open, want only the root", got)
	}
	u := mustUser(t, s, "alice")
	got := s.w.WatchList()
	slices.Sort(got)
	want := []string{dir, filepath.Join(dir, "alice"), filepath.Join(dir, "alice/facts")} // no episodes/ yet
	if !slices.Equal(got, want) {
		t.Fatalf("watching %v, want %v", got, want)
	}
	listPaths(t, u)
	writeFile(t, filepath.Join(dir, "alice/facts/user.md"), factA)
	eventually(t, "a hand edit seen", func() bool { return listPaths(t, u) == "facts/user.md=aaaa" })
	// A user folder made after its user was asked for is watched.
	c := mustUser(t, s, "carol")
	writeFile(t, filepath.Join(dir, "carol/facts/user.md"), userFact)
	eventually(t, "carol's file listed", func() bool { return listPaths(t, c) == "facts/user.md=user name, language" })
	writeFile(t, filepath.Join(dir, "carol/facts/user.md"), factA)
	eventually(t, "carol's edit seen", func() bool { return listPaths(t, c) == "facts/user.md=aaaa" })
	if c.idx.unwatched {
		t.Fatal("carol's index rescans")
	}
}

// The racy boundary: a file modified racySlack before it was read is
// still racily clean; a nanosecond earlier it is trusted.
func TestIndexCacheRacyBoundary(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		age  time.Duration // of the file when it was read
		want string        // listed at the next start
	}{{racySlack, "bbbb"}, {racySlack + time.Nanosecond, "aaaa"}} {
		t.Run(tc.age.String(), func(t *testing.T) {
			if got := listAfterSwapAtAge(t, now, tc.age); got != "facts/work.md="+tc.want {
				t.Fatalf("lists %q, want the summary %q", got, tc.want)
			}
		})
	}
}

// Only plain files are leftovers: a folder or symlink with a temp name
// is not mnemo's and stays.
func TestLeftoverOnlyPlainFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	folder := filepath.Join(dir, "alice/facts/.a.md"+tempMarker+"1")
	link := filepath.Join(dir, "alice/episodes/.b.md"+tempMarker+"2")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink("elsewhere", link); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, func(o *Options) { o.Dir = dir })
	if _, err := mustUser(t, s, "alice").List(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{folder, link} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// A user folder that is a symlink (refused by every operation) is not
// watched through: its target is another folder.
func TestSymlinkedUserNotWatched(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	writeFile(t, filepath.Join(dir, "bob/facts/user.md"), userFact)
	if err := os.Symlink("bob", filepath.Join(dir, "eve")); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, func(o *Options) { o.Dir = dir })
	mustUser(t, s, "eve")
	if got := s.w.WatchList(); len(got) != 1 {
		t.Fatalf("watching %v, want only the root", got)
	}
}

// With IndexCacheRoot the cache is read, written and removed through that
// root: a cache file that is a link out of it is neither read nor written
// through (the write replaces the link), and a forget removes the file.
func TestIndexCacheThroughARoot(t *testing.T) {
	dir, cache := cacheDirs(t)
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(cache)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "keep me\n")
	if err := os.Symlink(victim, filepath.Join(cache, "alice.idx")); err != nil {
		t.Fatal(err)
	}
	writeAged(t, filepath.Join(dir, "alice/facts/work.md"), factA)
	inRoot := func(o *Options) { o.IndexCacheRoot = root }
	s := cachedStore(t, dir, cache, inRoot)
	if got := listPaths(t, mustUser(t, s, "alice")); got != "facts/work.md=aaaa" {
		t.Fatalf("lists %q", got)
	}
	s.Close()
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(cache, "alice.idx")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the cache is %v, %v; want a file of its own", fi, err)
	}
	swapSameKey(t, filepath.Join(dir, "alice/facts/work.md"), factB) // read from the cache: still aaaa
	s = cachedStore(t, dir, cache, inRoot)
	u := mustUser(t, s, "alice")
	if got := listPaths(t, u); got != "facts/work.md=aaaa" {
		t.Fatalf("the cache was not read through the root: lists %q", got)
	}
	if err := u.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(cache, "alice.idx")); !os.IsNotExist(err) {
		t.Fatalf("the cache survived the forget: %v", err)
	}
}

// pathsOf is the paths u lists.
func pathsOf(t *testing.T, u *User) []string {
	t.Helper()
	return listedPaths(t, u)
}

// cacheMarks is the folders' marks in alice's cache file.
func cacheMarks(t *testing.T, cache string) [2]dirMark {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cache, "alice.idx"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, marks, err := parseCacheText(string(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	return marks
}

// A folder whose own stat is the mark the cache noted is not listed at
// the next start: nothing was created, removed or renamed in it. One that
// changed while mnemo was stopped is listed, and what changed is seen;
// a folder changed within racySlack of its listing gets no mark.
func TestFolderMarksSpareListing(t *testing.T) {
	dir, cache := cacheDirs(t)
	writeAged(t, filepath.Join(dir, "alice/facts/a.md"), factA)
	writeAged(t, filepath.Join(dir, "alice/episodes/2026-01.md"), "# Jan\n\n> Summary: january\n")
	// Just made, the folders are racy now: no marks.
	s := cachedStore(t, dir, cache)
	pathsOf(t, mustUser(t, s, "alice"))
	s.Close()
	if m := cacheMarks(t, cache); m != ([2]dirMark{}) {
		t.Fatalf("marks of folders changed just now: %v", m)
	}
	later := func(o *Options) { o.Clock = clocktest.New(time.Now().Add(time.Hour)) }
	// start is a start's first index (as a reply's), then the list.
	start := func() (*User, []string) {
		s := cachedStore(t, dir, cache, later)
		t.Cleanup(func() { s.Close() })
		u := mustUser(t, s, "alice")
		if _, err := u.indexList(DefaultIndexBudget); err != nil {
			t.Fatal(err)
		}
		return u, pathsOf(t, u)
	}
	u, got := start()
	u.s.Close()
	if m := cacheMarks(t, cache); m[0] == (dirMark{}) || m[1] == (dirMark{}) {
		t.Fatalf("no marks for folders an hour old: %v", m)
	}
	if want := []string{"facts/a.md", "episodes/2026-01.md"}; !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	u, got = start()
	u.s.Close()
	if n := u.idx.listings.Load(); n != 0 || len(got) != 2 {
		t.Fatalf("with both marks: %d folders listed, files %v", n, got)
	}
	// A file added to facts/ while stopped: facts/ is listed, not episodes/.
	writeAged(t, filepath.Join(dir, "alice/facts/b.md"), factB)
	u, got = start()
	u.s.Close()
	if n := u.idx.listings.Load(); n != 1 || !slices.Equal(got, []string{"facts/a.md", "facts/b.md", "episodes/2026-01.md"}) {
		t.Fatalf("after an added fact: %d folders listed, files %v", n, got)
	}
	// Removed and renamed while stopped.
	os.Remove(filepath.Join(dir, "alice/facts/a.md"))
	os.Rename(filepath.Join(dir, "alice/episodes/2026-01.md"), filepath.Join(dir, "alice/episodes/2026-02.md"))
	u, got = start()
	u.s.Close()
	if n := u.idx.listings.Load(); n != 2 || !slices.Equal(got, []string{"facts/b.md", "episodes/2026-02.md"}) {
		t.Fatalf("after a removal and a rename: %d folders listed, files %v", n, got)
	}
	// A folder replaced by another (the same names): listed.
	old := filepath.Join(dir, "alice/facts.old")
	os.Rename(filepath.Join(dir, "alice/facts"), old)
	writeAged(t, filepath.Join(dir, "alice/facts/b.md"), factA)
	u, got = start()
	u.s.Close()
	if n := u.idx.listings.Load(); n != 1 || !slices.Equal(got, []string{"facts/b.md", "episodes/2026-02.md"}) {
		t.Fatalf("a replaced folder: %d folders listed, files %v", n, got)
	}
}

// No mark vouches for a folder holding a memory file name that is not a
// plain file (it has no entry, and may become one without its folder
// changing), nor for one whose names changed since its mark: an entry
// that comes or goes in a run drops the mark.
func TestFolderMarksDropped(t *testing.T) {
	dir, cache := cacheDirs(t)
	writeAged(t, filepath.Join(dir, "alice/facts/a.md"), factA)
	writeAged(t, filepath.Join(dir, "alice/episodes/2026-01.md"), "# Jan\n\n> Summary: january\n")
	writeAged(t, filepath.Join(dir, "elsewhere.md"), factB)
	if err := os.Link(filepath.Join(dir, "elsewhere.md"), filepath.Join(dir, "alice/facts/linked.md")); err != nil {
		t.Fatal(err)
	}
	later := func(o *Options) { o.Clock = clocktest.New(time.Now().Add(time.Hour)) }
	s := cachedStore(t, dir, cache, later)
	u := mustUser(t, s, "alice")
	if got := pathsOf(t, u); !slices.Equal(got, []string{"facts/a.md", "episodes/2026-01.md"}) {
		t.Fatalf("listed %v", got)
	}
	s.Close()
	if m := cacheMarks(t, cache); m[0] != (dirMark{}) || m[1] == (dirMark{}) {
		t.Fatalf("marks %v: want none for facts/ (a hard-linked file), one for episodes/", m)
	}
	// Its other link gone, the file is a memory file again: facts/ is
	// listed at the next start, and it is seen.
	os.Remove(filepath.Join(dir, "elsewhere.md"))
	s = cachedStore(t, dir, cache, later)
	u = mustUser(t, s, "alice")
	if got := pathsOf(t, u); !slices.Equal(got, []string{"facts/a.md", "facts/linked.md", "episodes/2026-01.md"}) {
		t.Fatalf("listed %v", got)
	}
	// A write of a new file in this run drops its folder's mark.
	if err := u.NewSession().Append("episodes/2026-02.md", "## Talk\n- Summary: s\n- Date: 2026-02-01\n", ""); err != nil {
		t.Fatal(err)
	}
	pathsOf(t, u)
	s.Close()
	if m := cacheMarks(t, cache); m[1] != (dirMark{}) || m[0] == (dirMark{}) {
		t.Fatalf("marks %v: want one for facts/, none for episodes/ (a file was added to it)", m)
	}
	// A start that lists facts/ (changed) and finds a new name that is
	// no plain file keeps no mark for it.
	if err := os.Symlink("a.md", filepath.Join(dir, "alice/facts/s.md")); err != nil {
		t.Fatal(err)
	}
	s = cachedStore(t, dir, cache, later)
	u = mustUser(t, s, "alice")
	if _, err := u.indexList(DefaultIndexBudget); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := u.idx.listings.Load(); n != 2 {
		t.Fatalf("%d folders listed, want both (episodes/ has no mark)", n)
	}
	if m := cacheMarks(t, cache); m[0] != (dirMark{}) || m[1] == (dirMark{}) {
		t.Fatalf("marks %v: want none for facts/ (a symlink in it), one for episodes/", m)
	}
}

// A folder listed with a temp file in it gets no mark, whether or not the
// listing removed it: a temp file left (a reader's listing may not remove
// it) is seen by the next start's listing, which the owner's removes.
func TestFolderMarksNotWithATempFile(t *testing.T) {
	dir, cache := cacheDirs(t)
	writeAged(t, filepath.Join(dir, "alice/facts/a.md"), factA)
	writeAged(t, filepath.Join(dir, "alice/episodes/2026-01.md"), "# Jan\n\n> Summary: january\n")
	left := filepath.Join(dir, "alice/facts/.a.md"+tempMarker+"0123")
	writeAged(t, left, "half")
	later := func(o *Options) { o.Clock = clocktest.New(time.Now().Add(time.Hour)) }
	for _, clean := range []bool{false, true} {
		s := cachedStore(t, dir, cache, later, func(o *Options) { o.Clean = clean })
		u := mustUser(t, s, "alice")
		if _, err := u.indexList(DefaultIndexBudget); err != nil { // the second a start from the cache
			t.Fatal(err)
		}
		if got := pathsOf(t, u); !slices.Equal(got, []string{"facts/a.md", "episodes/2026-01.md"}) {
			t.Fatalf("clean %v: listed %v", clean, got)
		}
		s.Close()
		if m := cacheMarks(t, cache); m[0] != (dirMark{}) || m[1] == (dirMark{}) {
			t.Fatalf("clean %v: marks %v; want none for facts/ (a temp file listed in it)", clean, m)
		}
		if _, err := os.Stat(left); (err == nil) == clean {
			t.Fatalf("clean %v: the leftover: %v", clean, err)
		}
	}
}

// encodeCache renders (test helper) entries (any order) as a cache file without marks.
func encodeCache(files map[string]entry) []byte {
	return encodeInOrder(files, listOrder(files), [2]dirMark{})
}
