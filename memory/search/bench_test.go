package search

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// synthetic is a memory of n files (half fact files of 5 lines, half
// episode files of 5 entries of about 40 words, dated over ten years)
// whose words follow a Zipf law over a vocabulary of 20,000, as a
// person's notes do: about 5n units.
func synthetic(n int) map[string]string {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 19999)
	vocab := make([]string, 20000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i) // not a stop word, not a stem of another
		vocab[i] = strings.Map(func(c rune) rune {
			if c >= '0' && c <= '9' {
				return 'a' + c - '0'
			}
			return c
		}, vocab[i])
	}
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	files := make(map[string]string, n)
	day := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		var b strings.Builder
		if i%2 == 0 {
			fmt.Fprintf(&b, "# Topic %d\n\n> Summary: %s\n\n", i, words(4))
			for range 5 {
				fmt.Fprintf(&b, "- %s: %s\n", words(1), words(9))
			}
			files[fmt.Sprintf("facts/topic%d.md", i)] = b.String()
			continue
		}
		fmt.Fprintf(&b, "# Episodes\n\n> Summary: %s\n\n", words(6))
		for range 5 {
			day = day.Add(8 * time.Hour)
			fmt.Fprintf(&b, "## %s\n- Summary: %s\n- Date: %s\n- %s\n- %s\n\n", words(4), words(8), day.Format(time.DateOnly), words(14), words(14))
		}
		files[fmt.Sprintf("episodes/m%d.md", i)] = b.String()
	}
	return files
}

// BenchmarkSearch: one query of four words (two common, two rare) and
// one with a time, over memories of 200, 2,000 and 10,000 files (about
// 1,000, 10,000 and 50,000 units): the cost of memory_search's ranking.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{200, 2000, 10000} {
		x := New()
		for p, text := range synthetic(n) {
			x.Put(p, text, false, 1)
		}
		for _, q := range []string{"wbx wcx whfx wbdcx", "wcx wbdcx last March"} {
			name := fmt.Sprintf("%d/words", n)
			if strings.Contains(q, "March") {
				name = fmt.Sprintf("%d/time", n)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if r := Search(Query{Text: q, Today: today, Limit: 8}, Part{Index: x}); len(r.Hits) == 0 {
						b.Fatal("no hits")
					}
				}
			})
		}
	}
}

// BenchmarkPut: indexing one episode file again after an edit, in a
// memory of 10,000 files; and building the index of 10,000 files from
// their texts (a first search), with its heap.
func BenchmarkPut(b *testing.B) {
	files := synthetic(10000)
	b.Run("edit/10000", func(b *testing.B) {
		x := New()
		for p, text := range files {
			x.Put(p, text, false, 1)
		}
		text := files["episodes/m1.md"]
		b.ReportAllocs()
		for b.Loop() {
			x.Put("episodes/m1.md", text, false, 2)
		}
	})
	b.Run("build/10000", func(b *testing.B) {
		var heap uint64
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			x := New()
			for p, text := range files {
				x.Put(p, text, false, 1)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap = after.HeapAlloc - before.HeapAlloc
			runtime.KeepAlive(x)
		}
		b.ReportMetric(float64(heap)/(1<<20), "MiB-heap")
	})
}
