package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchUser makes a user with n files: n/2 facts, n/2 months of episodes.
func benchUser(b *testing.B, n int) (*Store, *User) {
	s := newStore(b)
	dir := filepath.Join(s.Dir(), "alice")
	for i := 0; i < n; i++ {
		var p string
		if i%2 == 0 {
			p = fmt.Sprintf("facts/topic%d.md", i)
		} else {
			p = fmt.Sprintf("episodes/%04d-%02d.md", 1900+i/24, i/2%12+1)
		}
		writeFile(b, filepath.Join(dir, p), fmt.Sprintf("# Title %d\n\n> Summary: summary of file %d\n\n- a fact worth keeping\n", i, i))
	}
	u := mustUser(b, s, "alice")
	if files, _ := u.List(); len(files) != n {
		b.Fatalf("made %d files, listed %d", n, len(files))
	}
	return s, u
}

func BenchmarkList(b *testing.B) {
	for _, n := range []int{10, 200, 2000} {
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
	for _, n := range []int{10, 200, 2000} {
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
	for _, n := range []int{10, 200, 2000} {
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
