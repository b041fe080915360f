package memory

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadNeverFollowsASwappedInLink: while a name flips between a plain
// file and a symlink to another file of the folder (a rename either way),
// a read returns the plain file, refuses, or retries — never the other
// file's text. The Lstat before the open and the same-inode check after it
// are what guarantee this; without them a read that lands between the two
// follows the link. A stress test: it cannot fail when the code is right,
// and it catches a missing check in most runs.
func TestReadNeverFollowsASwappedInLink(t *testing.T) {
	s := newStore(t, func(o *Options) { o.Watch = false })
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	must(t, sess.Write("facts/secret.md", "# Secret\n\n> Summary: s\n\n- SECRET\n"))
	dir := filepath.Join(s.Dir(), "alice", "facts")
	plain := filepath.Join(dir, "plain.tmp")
	link := filepath.Join(dir, "link.tmp")
	target := filepath.Join(dir, "x.md")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.WriteFile(plain, []byte("# X\n\n> Summary: x\n\n- plain\n"), 0o600)
			os.Rename(plain, target)
			os.Symlink("secret.md", link)
			os.Rename(link, target)
		}
	}()
	plainReads := 0
	for i := 0; i < 20000 && plainReads < 2000; i++ {
		d, err := u.Read("facts/x.md")
		if err != nil {
			continue // a symlink now, or gone for a moment: refused
		}
		if strings.Contains(d.Text, "SECRET") {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("read %d returned the file a swapped-in symlink points to", i)
		}
		plainReads++
	}
	stop.Store(true)
	wg.Wait()
}

// TestReadAtTheSizeLimit: a file of exactly maxFileSize bytes is read
// whole; one byte more is refused.
func TestReadAtTheSizeLimit(t *testing.T) {
	s := newStore(t, func(o *Options) { o.Watch = false })
	u := mustUser(t, s, "alice")
	p := filepath.Join(s.Dir(), "alice", "facts", "big.md")
	must(t, os.MkdirAll(filepath.Dir(p), 0o700))
	text := "# Big\n\n> Summary: big\n\n" + strings.Repeat("x", maxFileSize-len("# Big\n\n> Summary: big\n\n"))
	must(t, os.WriteFile(p, []byte(text), 0o600))
	d, err := u.Read("facts/big.md")
	if err != nil || len(d.Text) != maxFileSize {
		t.Fatalf("a file of exactly the limit: %d bytes read, %v", len(d.Text), err)
	}
	must(t, os.WriteFile(p, []byte(text+"x"), 0o600))
	if _, err := u.Read("facts/big.md"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("a file one byte over the limit: %v", err)
	}
}

func TestStripInvisibleInvalidOnly(t *testing.T) {
	for in, want := range map[string]string{"\xff": "", "a\xffb": "ab", "\uFFFD": "\uFFFD"} {
		if got := StripInvisible(in); got != want {
			t.Errorf("StripInvisible(%q) = %q, want %q", in, got, want)
		}
	}
}
