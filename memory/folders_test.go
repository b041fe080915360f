package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// openFDs is the number of this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(entries) - 1 // ReadDir's own descriptor of the folder
}

// Open files stay flat as people grow: each distinct person writes, reads
// and lists their memory once, through the real store with its watcher,
// and after 100 people as after 400 the process holds at most the idle
// folders' descriptors more than before the first (each user folder held
// one, never released: 1,000 people held 1,000). Hand edits still reach
// the index of a person whose folder was closed long ago.
func TestOpenFilesStayFlatAsPeopleGrow(t *testing.T) {
	s := newStore(t)
	before := openFDs(t)
	bound := before + maxIdleFolders + 2 // slack: the runtime's own (a netpoll fd, say)
	person := func(i int) string { return fmt.Sprintf("person-%04d", i) }
	for i := range 400 {
		u := mustUser(t, s, person(i))
		if _, err := u.Write("facts/user.md", "# User\n\n> Summary: person "+fmt.Sprint(i)+"\n", nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := u.Read("facts/user.md"); err != nil {
			t.Fatal(err)
		}
		if _, err := u.List(); err != nil {
			t.Fatal(err)
		}
		if i == 99 || i == 399 {
			if n := openFDs(t); n > bound {
				t.Fatalf("after %d people: %d open files, more than %d (%d before the first, %d idle folders at most)", i+1, n, bound, before, maxIdleFolders)
			}
		}
	}
	if n := s.pool.idleCount(); n != maxIdleFolders {
		t.Errorf("%d idle folders kept open, want %d", n, maxIdleFolders)
	}
	first := mustUser(t, s, person(0))
	writeFile(t, filepath.Join(s.Dir(), person(0), "facts/user.md"), "# User\n\n> Summary: edited by hand\n")
	eventually(t, "the hand edit of a person whose folder was closed", func() bool {
		return listPaths(t, first) == "facts/user.md=edited by hand"
	})
}

// A folder in use is never closed under its user: neither by the pool
// closing idle folders past its bound nor by a drop (the folder removed
// or replaced); the last release closes a dropped one.
func TestFolderInUseIsNotClosed(t *testing.T) {
	s := newStore(t)
	alice := mustUser(t, s, "alice")
	root, ref, err := alice.openRoot(true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 * maxIdleFolders {
		_, r, err := mustUser(t, s, fmt.Sprintf("user-%d", i)).openRoot(true)
		if err != nil {
			t.Fatal(err)
		}
		r.release()
	}
	if _, err := root.Stat("."); err != nil {
		t.Fatalf("alice's folder in use was closed by the pool: %v", err)
	}
	s.pool.drop(alice)
	if _, err := root.Stat("."); err != nil {
		t.Fatalf("alice's folder in use was closed by a drop: %v", err)
	}
	ref.release()
	if _, err := root.Stat("."); err == nil {
		t.Fatal("a dropped folder stayed open after its last use")
	}
	if root2, ref2, err := alice.openRoot(false); err != nil || root2 == nil || root2 == root {
		t.Fatalf("alice's folder not opened again: %v", err)
	} else {
		ref2.release()
	}
	var none *folder
	none.release() // a missing folder's use: nothing to release
}

// A folder released after the store closed is closed then.
func TestFolderReleasedAfterCloseIsClosed(t *testing.T) {
	s := newStore(t)
	root, ref, err := mustUser(t, s, "alice").openRoot(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Stat("."); err != nil {
		t.Fatalf("closing the store closed a folder in use: %v", err)
	}
	ref.release()
	if _, err := root.Stat("."); err == nil {
		t.Fatal("a folder released after Close stayed open")
	}
}

// A folder replaced on disk (removed and made again by a person) is
// opened anew at the next use, and the old handle closed.
func TestReplacedFolderIsReopened(t *testing.T) {
	s := newStore(t, func(o *Options) { o.Watch = false })
	alice := mustUser(t, s, "alice")
	old, ref, err := alice.openRoot(true)
	if err != nil {
		t.Fatal(err)
	}
	ref.release()
	dir := filepath.Join(s.Dir(), "alice")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now, ref, err := alice.openRoot(false)
	if err != nil || now == nil || now == old {
		t.Fatalf("the replaced folder was not opened anew: %v", err)
	}
	ref.release()
	if _, err := old.Stat("."); err == nil {
		t.Error("the old folder's handle stayed open")
	}
}

// idleCount is the number of folders open and unused.
func (p *folders) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle.Len()
}
