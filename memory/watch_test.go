package memory

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// Each edit is made the way a person's tool makes it; the index must show
// the result at the next List (after the file event has arrived).
func TestLiveIndexFollowsHumanEdits(t *testing.T) {
	fact := func(summary string) string { return "# User\n\n> Summary: " + summary + "\n\n- x\n" }
	edits := []struct {
		name string
		edit func(t *testing.T, dir string) // dir: the user's folder
		want string
	}{
		{"in place (shell >, VS Code)", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "facts/user.md"), fact("edited in place"))
		}, "facts/user.md=edited in place"},
		{"sed -i", func(t *testing.T, dir string) {
			run(t, "sed", "-i", "s/original/by sed/", filepath.Join(dir, "facts/user.md"))
		}, "facts/user.md=by sed"},
		{"vim save by rename", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "facts/user.md")
			writeFile(t, filepath.Join(dir, "facts/4913"), "")
			os.Remove(filepath.Join(dir, "facts/4913"))
			if err := os.Rename(p, p+"~"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, fact("by vim"))
			os.Remove(p + "~")
		}, "facts/user.md=by vim"},
		{"cp over the file", func(t *testing.T, dir string) {
			src := filepath.Join(t.TempDir(), "src.md")
			writeFile(t, src, fact("copied"))
			run(t, "cp", src, filepath.Join(dir, "facts/user.md"))
		}, "facts/user.md=copied"},
		{"mv into place", func(t *testing.T, dir string) {
			src := filepath.Join(dir, "facts/draft.txt")
			writeFile(t, src, fact("moved in"))
			run(t, "mv", src, filepath.Join(dir, "facts/user.md"))
		}, "facts/user.md=moved in"},
		{"mv away", func(t *testing.T, dir string) {
			run(t, "mv", filepath.Join(dir, "facts/user.md"), filepath.Join(dir, "facts/user.bak"))
		}, ""},
		{"delete", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "facts/user.md"))
		}, ""},
		{"new file without a summary", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "facts/pets.md"), "# Pets\n\n- cat\n")
		}, "facts/pets.md=Pets;facts/user.md=original"},
		{"new episodes folder", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "episodes"))
			writeFile(t, filepath.Join(dir, "episodes/2026-03.md"), "# 2026-03 Episodes\n\n> Summary: march\n")
		}, "facts/user.md=original;episodes/2026-03.md=march"},
		{"facts folder replaced", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "facts"))
			writeFile(t, filepath.Join(dir, "facts/new.md"), fact("fresh folder"))
		}, "facts/new.md=fresh folder"},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			s := newStore(t)
			u := mustUser(t, s, "alice")
			dir := filepath.Join(s.Dir(), "alice")
			writeFile(t, filepath.Join(dir, "facts/user.md"), fact("original"))
			if got := listPaths(t, u); got != "facts/user.md=original" {
				t.Fatalf("before: %q", got)
			}
			e.edit(t, dir)
			eventually(t, "index to show "+e.want, func() bool { return listPaths(t, u) == e.want })
		})
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func TestLiveIndexNewUser(t *testing.T) {
	s := newStore(t)
	dir := filepath.Join(s.Dir(), "carol")
	if err := os.MkdirAll(filepath.Join(dir, "facts"), 0o755); err != nil {
		t.Fatal(err)
	}
	u := mustUser(t, s, "carol")
	eventually(t, "empty user listed", func() bool { return listPaths(t, u) == "" })
	writeFile(t, filepath.Join(dir, "facts/user.md"), userFact)
	eventually(t, "new user's file", func() bool { return listPaths(t, u) == "facts/user.md=user name, language" })
	// The watch on the new folder is live: an edit after the first List shows.
	writeFile(t, filepath.Join(dir, "facts/user.md"), "# U\n> Summary: second\n")
	eventually(t, "edit in new user's folder", func() bool { return listPaths(t, u) == "facts/user.md=second" })
	users, _ := s.Users()
	if strings.Join(users, ",") != "carol" {
		t.Fatalf("Users = %v", users)
	}
}

// Without events (watching off or unavailable) every List rescans: slower
// but never stale.
func TestUnwatchedIndexRescans(t *testing.T) {
	_, u, p := aliceWithUserFact(t, func(o *Options) { o.Watch = false })
	if got := listPaths(t, u); got != "facts/user.md=user name, language" {
		t.Fatalf("List = %q", got)
	}
	writeFile(t, p, "# U\n> Summary: changed\n")
	if got := listPaths(t, u); got != "facts/user.md=changed" {
		t.Fatalf("unwatched List is stale: %q", got)
	}
}

// An event queue overflow may have lost events: everything is rescanned.
func TestWatcherOverflowRescans(t *testing.T) {
	// The folders are there (watched from the start), so the watcher sees
	// every event of the files below.
	dir := filepath.Join(t.TempDir(), "memory")
	if err := os.MkdirAll(filepath.Join(dir, "alice", "facts"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, u, _ := aliceWithUserFact(t, func(o *Options) { o.Dir = dir })
	if got := listPaths(t, u); got != "facts/user.md=user name, language" {
		t.Fatalf("List = %q", got)
	}
	// Events arrive in order: once a later file's is handled, the write's
	// own events are too.
	marker := filepath.Join(s.Dir(), "alice/facts/.marker")
	writeFile(t, marker, "")
	eventually(t, "the write's events handled", func() bool { return watchLog.seen(marker) })
	listPaths(t, u)
	// Change the file behind the watcher's back, as if its events were lost.
	u.idx.mu.Lock()
	f := u.idx.files["facts/user.md"]
	f.Summary = "stale"
	u.idx.files["facts/user.md"] = f
	u.idx.sorted = nil
	u.idx.mu.Unlock()
	if got := listPaths(t, u); got != "facts/user.md=stale" {
		t.Fatalf("setup: %q", got)
	}
	s.w.Errors <- fsnotify.ErrEventOverflow
	eventually(t, "rescan after overflow", func() bool { return listPaths(t, u) == "facts/user.md=user name, language" })
}

func TestHandleEventIgnoresNoise(t *testing.T) {
	s, u, _ := aliceWithUserFact(t)
	// Stop the real watcher first, so only the events below reach the index.
	s.w.Close()
	s.wg.Wait()
	listPaths(t, u)
	for _, ev := range []fsnotify.Event{
		{Name: filepath.Join(s.Dir(), "alice/facts/user.md"), Op: fsnotify.Chmod},
		{Name: filepath.Join(s.Dir(), "alice/facts/.user.md.swp"), Op: fsnotify.Create},
		{Name: filepath.Join(s.Dir(), "..", "elsewhere"), Op: fsnotify.Create},
		{Name: s.Dir(), Op: fsnotify.Create},
		{Name: filepath.Join(s.Dir(), ".hidden/facts/x.md"), Op: fsnotify.Create},
		{Name: filepath.Join(s.Dir(), "alice/a/b/c.md"), Op: fsnotify.Create},
		{Name: filepath.Join(s.Dir(), "nobody"), Op: fsnotify.Remove},
	} {
		s.handleEvent(ev)
	}
	u.idx.mu.Lock()
	dirty, full := len(u.idx.dirty), u.idx.full
	u.idx.mu.Unlock()
	if dirty != 0 || full {
		t.Fatalf("noise invalidated the index: dirty=%d full=%v", dirty, full)
	}
}

// When a folder cannot be watched (inotify limits), that user's index
// falls back to rescanning.
func TestWatchFailureFallsBackToRescan(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	s.w.Close() // every later Add fails, as when inotify limits are reached
	os.MkdirAll(filepath.Join(s.Dir(), "alice/facts"), 0o755)
	s.handleEvent(fsnotify.Event{Name: filepath.Join(s.Dir(), "alice/facts"), Op: fsnotify.Create})
	if !u.idx.unwatched {
		t.Fatal("failed watch of a new folder did not switch to rescanning")
	}
	s.watchUser("bob")
	if b := mustUser(t, s, "bob"); !b.idx.unwatched {
		t.Fatal("failed watch of a new user did not switch to rescanning")
	}
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/user.md"), userFact)
	if got := listPaths(t, u); got != "facts/user.md=user name, language" {
		t.Fatalf("List = %q", got)
	}
}
