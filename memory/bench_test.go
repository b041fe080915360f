package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
)

// benchSizes are the memory sizes benchmarked, in files per user.
var benchSizes = []int{10, 200, 2000, 10000}

// benchUser makes a user with n files: n/2 facts, n/2 months of episodes,
// written an hour ago (so an index cache may trust them; see racySlack).
func benchUser(b testing.TB, n int, mod ...func(*Options)) (*Store, *User) {
	s := newStore(b, mod...)
	dir := filepath.Join(s.Dir(), "alice")
	old := time.Now().Add(-time.Hour)
	for i := 0; i < n; i++ {
		var p string
		if i%2 == 0 {
			p = fmt.Sprintf("facts/topic%d.md", i)
		} else {
			p = fmt.Sprintf("episodes/%04d-%02d.md", 1000+i/24, i/2%12+1)
		}
		writeFile(b, filepath.Join(dir, p), fmt.Sprintf("# Title %d\n\n> Summary: summary of file %d\n\n- a fact worth keeping\n", i, i))
		os.Chtimes(filepath.Join(dir, p), old, old)
	}
	u := mustUser(b, s, "alice")
	if files, _ := u.List(); len(files) != n {
		b.Fatalf("made %d files, listed %d", n, len(files))
	}
	return s, u
}

// BenchmarkIndexBuild: a user's first List of a run — every file read
// (cold), or the index cache read and every file's size, time and inode
// checked (cache).
// cachedBenchRoot is a user of n files whose index cache (in the folder
// cache) is written, and the user's open folder (released at the end).
func cachedBenchRoot(b *testing.B, n int) (cache string, root *os.Root) {
	cache = filepath.Join(b.TempDir(), "index")
	_, u := benchUser(b, n, func(o *Options) { o.IndexCache = cache })
	root, ref, err := u.openRoot(false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ref.release)
	u.idx.save()
	return cache, root
}

func BenchmarkIndexBuild(b *testing.B) {
	for _, cached := range []bool{false, true} {
		for _, n := range benchSizes {
			name := fmt.Sprintf("cold/%d", n)
			if cached {
				name = fmt.Sprintf("cache/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				cache, root := cachedBenchRoot(b, n)
				if !cached {
					cache = ""
				}
				b.ReportAllocs()
				for b.Loop() {
					x := newIndex(time.Now, filepath.Join(cache, "alice.idx"))
					if len(x.list(root).files) != n {
						b.Fatal("wrong count")
					}
				}
			})
		}
	}
}

// BenchmarkQuickStart: a start's first index (the cache loaded, the
// folders listed, only the head checked against the disk: listHead(0)),
// what a piped chat's first reply and the history's baseline wait for.
func BenchmarkQuickStart(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cache, root := cachedBenchRoot(b, n)
			b.ReportAllocs()
			for b.Loop() {
				x := newIndex(time.Now, filepath.Join(cache, "alice.idx"))
				if len(x.listHead(root, 0).files) != n || !x.lazy {
					b.Fatal("not a quick start")
				}
			}
		})
	}
}

// BenchmarkList: List when nothing changed (every message's index).
func BenchmarkList(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, u := benchUser(b, n)
			b.ReportAllocs()
			for b.Loop() {
				u.List()
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, u := benchUser(b, n)
			sess := u.NewSession()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sess.Read("facts/topic0.md"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, u := benchUser(b, n)
			sess := u.NewSession()
			entry := "## Bench\n- Summary: bench entry\n- Date: 2026-02-01\n- detail\n"
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// A fresh month every 50 entries keeps the file a realistic size.
				year := 3000 + i/50
				e := strings.Replace(entry, "2026", fmt.Sprint(year), 1)
				if err := sess.Append(fmt.Sprintf("episodes/%04d-02.md", year), e, ""); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkTools: the model's tool calls as the agent makes them
// (arguments decoded, result encoded): memory_list (its result bounded),
// memory_read, memory_search (words every file holds: every fact line and
// entry matches, the worst case; its index already made, as after a
// message's first search) and memory_append.
func BenchmarkTools(b *testing.B) {
	for _, n := range benchSizes {
		_, u := benchUser(b, n)
		tools := map[string]mnemo.Tool{}
		for _, t := range AllTools(u.NewSession()) {
			tools[t.Name] = t
		}
		run := func(name, tool string, args func(i int) string) {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := tools[tool].Call(context.Background(), json.RawMessage(args(i))); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
		run("list", "memory_list", func(int) string { return `{}` })
		run("read", "memory_read", func(int) string { return `{"path":"facts/topic0.md"}` })
		run("search", "memory_search", func(int) string { return `{"query":"fact worth keeping"}` })
		run("append", "memory_append", func(i int) string {
			year := 3000 + i/50 // a fresh month every 50 entries keeps the file a realistic size
			return fmt.Sprintf(`{"path":"episodes/%04d-02.md","entry":"## Bench\n- Summary: bench entry\n- Date: %04d-02-01\n- detail\n"}`, year, year)
		})
	}
}

// BenchmarkEditToIndex: from a person's write to the index showing it.
func BenchmarkEditToIndex(b *testing.B) {
	_, u := benchUser(b, 200)
	p := filepath.Join(u.s.Dir(), "alice/facts/topic0.md")
	i := 0
	for b.Loop() {
		i++
		want := fmt.Sprintf("edit %d", i)
		os.WriteFile(p, []byte("# T\n\n> Summary: "+want+"\n"), 0o644)
		deadline := time.Now().Add(5 * time.Second)
		for {
			files, _ := u.List()
			if files[0].Summary == want {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("index never caught up")
			}
		}
	}
}

// BenchmarkViewIndex: the index one message is given, in a DM (all of
// the user's files) and in a channel (the shared ones, one in ten here,
// beside a channel memory of 20 files): each view's index is kept until
// the watcher or a write reports a change, so both cost the same, and
// the same at any size (10, 2,000 and 10,000 files).
func BenchmarkViewIndex(b *testing.B) {
	for _, n := range []int{10, 2000, 10000} {
		for _, where := range []string{"dm", "channel"} {
			b.Run(fmt.Sprintf("%s/%d", where, n), func(b *testing.B) {
				s, u := benchUser(b, n)
				for i := 0; i < n; i += 10 {
					p := fmt.Sprintf("facts/topic%d.md", i)
					if _, err := u.SetShared(p, true, nil); err != nil {
						b.Fatal(err)
					}
				}
				ch := mustUser(b, s, "#slack-T1-C1")
				for i := range 20 {
					if _, err := ch.Write(fmt.Sprintf("facts/decision%d.md", i), fmt.Sprintf("# Decision %d\n\n> Summary: what we chose\n", i), nil, nil); err != nil {
						b.Fatal(err)
					}
				}
				// The writes' events handled: the loop measures a message
				// between changes, not the re-render a change makes.
				settle(b, filepath.Join(s.Dir(), "alice"))
				view := func() *View {
					if where == "channel" {
						return NewView(u, true, ch)
					}
					return NewView(u, false, nil)
				}
				view().Index(DefaultIndexBudget) // the first message after the change renders it
				b.ReportAllocs()
				for b.Loop() {
					if _, err := view().Index(DefaultIndexBudget); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkViewPreload: what a reflection starts from (View.Preload) in a
// DM, at 10, 2,000 and 10,000 files: the fact files' bytes are counted
// when the list is made, and only the lines the budgets hold are made, so
// its cost does not grow with the number of files.
func BenchmarkViewPreload(b *testing.B) {
	for _, n := range []int{10, 2000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, u := benchUser(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := NewView(u, false, nil).Preload(16 << 10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIndexAfterAChange: a write's change to the index (set), then
// the next message's index, at 10, 2,000 and 10,000 files. The sorted list
// is edited in place (a copy, O(n)), not sorted again (O(n log n)).
func BenchmarkIndexAfterAChange(b *testing.B) {
	for _, n := range []int{10, 2000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, u := benchUser(b, n)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				u.idx.set("facts/topic0.md", fmt.Appendf(nil, "# T\n\n> Summary: change %d\n", i))
				if _, err := NewView(u, false, nil).Index(DefaultIndexBudget); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
