package memory

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// edits collects the hand edits a store's watcher reports.
func editStore(t *testing.T) (*Store, chan Commit) {
	t.Helper()
	ch := make(chan Commit, 64)
	s := newStore(t, func(o *Options) {
		// The folders exist before Open, which watches them at once: a
		// folder made later is watched when its event arrives, and a file
		// written in it before then is not seen.
		for _, sub := range []string{"facts", "episodes"} {
			if err := os.MkdirAll(filepath.Join(o.Dir, "ann", sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		o.OnChange = func(c Commit) {
			if c.Kind == ChangeEdit {
				ch <- c
			}
		}
	})
	return s, ch
}

// nextEdit waits for the next reported hand edit.
func nextEdit(t *testing.T, ch chan Commit) Commit {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no hand edit reported")
		return Commit{}
	}
}

// noEdit checks nothing more was reported, after a marker edit of another
// file has come through (events of one watcher arrive in order).
func noEdit(t *testing.T, s *Store, ch chan Commit, user string) {
	t.Helper()
	marker := filepath.Join(s.opts.Dir, user, "facts", "zz-marker.md")
	writeFile(t, marker, "# M\n> Summary: "+time.Now().String()+"\n")
	if c := nextEdit(t, ch); c.Path != "facts/zz-marker.md" {
		t.Errorf("unexpected hand edit %s %s (%q)", c.Kind, c.Path, c.Text)
	}
}

func TestHandEditsAreReported(t *testing.T) {
	s, ch := editStore(t)
	u := mustUser(t, s, "ann")
	sess := u.NewSession()
	must(t, sess.Write("facts/user.md", userFact))
	file := filepath.Join(s.opts.Dir, "ann", "facts", "user.md")

	// The store's own writes and removes are not hand edits.
	must(t, sess.Write("facts/user.md", userFact+"- Likes: tea\n"))
	noEdit(t, s, ch, "ann")

	// A person's save is, with its text.
	writeFile(t, file, userFact+"- Likes: coffee\n")
	c := nextEdit(t, ch)
	if c.User != "ann" || c.Path != "facts/user.md" || string(c.Text) != userFact+"- Likes: coffee\n" || !c.After.Exists || !c.Before.Exists {
		t.Errorf("hand edit = %+v", c)
	}
	// Saving the same text again changes nothing.
	writeFile(t, file, userFact+"- Likes: coffee\n")
	noEdit(t, s, ch, "ann")

	// A save in place (truncate, then write) is one edit: the empty moment is not one.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.WriteString(userFact + "- Likes: juice\n")
	f.Close()
	if c := nextEdit(t, ch); string(c.Text) != userFact+"- Likes: juice\n" {
		t.Errorf("in-place save reported %q", c.Text)
	}

	// A person's delete is an edit with no text.
	os.Remove(file)
	if c := nextEdit(t, ch); c.Path != "facts/user.md" || c.After.Exists || c.Text != nil {
		t.Errorf("hand delete = %+v", c)
	}
	// The store's remove is not.
	must(t, sess.Write("facts/other.md", userFact))
	must(t, u.Remove("facts/other.md"))
	noEdit(t, s, ch, "ann")
}

func TestOwnWriteTextGiven(t *testing.T) {
	var got []Commit
	s := newStore(t, func(o *Options) { o.Watch = false; o.OnChange = func(c Commit) { got = append(got, c) } })
	sess := mustUser(t, s, "ann").NewSession()
	must(t, sess.Write("facts/user.md", userFact))
	must(t, sess.Write("facts/user.md", userFact+"x\n"))
	if len(got) != 2 || string(got[0].Text) != userFact || got[0].Previous != nil || string(got[1].Previous) != userFact || string(got[1].Text) != userFact+"x\n" {
		t.Errorf("texts: %+v", got)
	}
}

// TestLateEventsDuringOwnChange plays the watcher at the moments a real
// one may handle an event while this store replaces or removes a file:
// the event of an earlier change, or of a person's edit, handled just
// before the rename (the file still holds the text being replaced) or
// just after it. Only a person's edit is reported, each with its text.
func TestLateEventsDuringOwnChange(t *testing.T) {
	var told []Commit // every change told, in order
	var at func(op, name string)
	s := newStore(t, func(o *Options) {
		o.Watch = false // the test handles the events itself, in a known order
		o.OnChange = func(c Commit) { told = append(told, c) }
		o.Faults = func(op, name string) error {
			if at != nil {
				at(op, name)
			}
			return nil
		}
	})
	u := mustUser(t, s, "ann")
	sess := u.NewSession()
	file := filepath.Join(s.Dir(), "ann", "facts", "user.md")
	event := func(name string) {
		s.handleEvent(fsnotify.Event{Name: filepath.Join(s.Dir(), "ann", name), Op: fsnotify.Create})
	}
	// during runs f just before op of ann's file p in the next change.
	during := func(op, p string, f func()) {
		at = func(o, name string) {
			if o == op && name == p {
				at = nil
				f()
			}
		}
	}
	edits := func() (out []Commit) {
		for _, c := range told {
			if c.Kind == ChangeEdit {
				out = append(out, c)
			}
		}
		told = nil
		return out
	}
	show := func(cs []Commit) (out []string) {
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s %s %s->%s %q", c.Kind, c.Path, c.Before, c.After, c.Text))
		}
		return out
	}
	write := func(text string) {
		t.Helper()
		v, err := u.Version("facts/user.md")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write("facts/user.md", text, &v, nil); err != nil {
			t.Fatal(err)
		}
	}

	must(t, sess.Write("facts/user.md", userFact))
	event("facts/user.md")
	edits()

	// The first write's event, handled while the second renames its text
	// into place: the first text is the store's own, and so is the second.
	during(durable.Rename, "facts/user.md", func() { event("facts/user.md") })
	write(userFact + "- Likes: tea\n")
	event("facts/user.md")
	if e := edits(); len(e) != 0 {
		t.Errorf("own write reported as hand edits: %q", show(e))
	}

	// A write's event, handled while a remove is under way: not an edit.
	must(t, sess.Write("facts/other.md", userFact))
	during(durable.Remove, "facts/other.md", func() { event("facts/other.md") })
	must(t, u.Remove("facts/other.md"))
	event("facts/other.md")
	if e := edits(); len(e) != 0 {
		t.Errorf("own remove reported as hand edits: %q", show(e))
	}

	// A person's edit between two writes of the store, its event handled
	// while the second renames: reported with its text, the write not.
	tea, _ := u.Version("facts/user.md")
	writeFile(t, file, userFact+"- Likes: coffee\n")
	during(durable.Rename, "facts/user.md", func() { event("facts/user.md") })
	write(userFact + "- Likes: juice\n")
	event("facts/user.md")
	if e := edits(); len(e) != 1 || string(e[0].Text) != userFact+"- Likes: coffee\n" || !e[0].Before.Same(tea) {
		t.Errorf("hand edit between writes, before %s: %q", tea, show(e))
	}

	// A person's edit just after the rename, with and without the rename's
	// own event handled first: reported, and the last change told is the
	// text on disk, so the history ends with it.
	for _, seeRename := range []bool{true, false} {
		hand := fmt.Sprintf("%s- Likes: water %v\n", userFact, seeRename)
		during(durable.FsyncDir, "facts", func() {
			if seeRename {
				event("facts/user.md")
			}
			writeFile(t, file, hand)
			event("facts/user.md")
		})
		write(fmt.Sprintf("%s- Likes: milk %v\n", userFact, seeRename))
		event("facts/user.md")
		all := append([]Commit(nil), told...)
		last := all[len(all)-1]
		if e := edits(); len(e) == 0 || string(e[0].Text) != hand || last.Kind != ChangeEdit || string(last.Text) != hand {
			t.Errorf("hand edit after the rename (its event seen: %v): told %q", seeRename, show(all))
		}
	}
}

// TestOwnChangeWhileTheWatcherReads makes the store's change after the
// watcher read a file for an event and before it compared what it read:
// the text read is the store's own, replaced since, not a hand edit; a
// person's edit read then is kept as the text the change replaced.
func TestOwnChangeWhileTheWatcherReads(t *testing.T) {
	var told []Commit
	var between func()
	s := newStore(t, func(o *Options) {
		o.Watch = false // the test handles the events itself, in a known order
		o.OnChange = func(c Commit) { told = append(told, c) }
		o.watchRead = func(string) {
			if f := between; f != nil {
				between = nil
				f()
			}
		}
	})
	u := mustUser(t, s, "ann")
	event := func(name string) {
		s.handleEvent(fsnotify.Event{Name: filepath.Join(s.Dir(), "ann", name), Op: fsnotify.Create})
	}
	write := func(p, text string) {
		t.Helper()
		v, err := u.Version(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write(p, text, &v, nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, want ...string) {
		t.Helper()
		var got []string
		for _, c := range told {
			got = append(got, fmt.Sprintf("%s %s %q %q", c.Kind, c.Path, c.Previous, c.Text))
		}
		told = nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: told\n%q\nwant\n%q", what, got, want)
		}
	}

	write("facts/user.md", userFact)
	event("facts/user.md")
	check("first write", fmt.Sprintf("create facts/user.md \"\" %q", userFact))

	// A write's event read, then the next write: not an edit.
	tea := userFact + "- Likes: tea\n"
	between = func() { write("facts/user.md", tea) }
	event("facts/user.md")
	event("facts/user.md")
	check("write while read", fmt.Sprintf("write facts/user.md %q %q", userFact, tea))

	// A write's event read, then a remove: not an edit.
	write("facts/other.md", userFact)
	between = func() { must(t, u.Remove("facts/other.md")) }
	event("facts/other.md")
	event("facts/other.md")
	check("remove while read", fmt.Sprintf("create facts/other.md \"\" %q", userFact), fmt.Sprintf("delete facts/other.md %q \"\"", userFact))

	// A person's edit read, then the store's write: the write tells the
	// edit's text as the one it replaced (kept in the history).
	coffee := userFact + "- Likes: coffee\n"
	writeFile(t, filepath.Join(s.Dir(), "ann", "facts", "user.md"), coffee)
	between = func() { write("facts/user.md", userFact) }
	event("facts/user.md")
	event("facts/user.md")
	check("hand edit, then a write while read", fmt.Sprintf("write facts/user.md %q %q", coffee, userFact))
}

// TestRemoveTellsTheTextRemoved: a person's save that lands just before
// the store removes the file, whose event the watcher handles only once
// the file is gone, is not a hand edit the watcher can see; the delete
// tells it as the text it removed (Previous), so the history keeps it.
// What is not a regular file, or is empty, is removed without a text.
func TestRemoveTellsTheTextRemoved(t *testing.T) {
	var told []Commit
	var logs bytes.Buffer
	var at func(op, name string) error
	s := newStore(t, func(o *Options) {
		o.Watch = false // the test handles the events itself, in a known order
		o.OnChange = func(c Commit) { told = append(told, c) }
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.Faults = func(op, name string) error {
			if at != nil {
				return at(op, name)
			}
			return nil
		}
	})
	u := mustUser(t, s, "ann")
	put := func(text string) {
		t.Helper()
		if _, err := u.Write("facts/user.md", text, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(s.Dir(), "ann")
	event := func(name string) {
		s.handleEvent(fsnotify.Event{Name: filepath.Join(dir, name), Op: fsnotify.Write})
	}
	check := func(what string, want ...string) {
		t.Helper()
		var got []string
		for _, c := range told {
			got = append(got, fmt.Sprintf("%s %s %q", c.Kind, c.Path, c.Previous))
		}
		told = nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: told\n%q\nwant\n%q", what, got, want)
		}
	}
	coffee := userFact + "- Likes: coffee\n"

	// Saved just before the remove (at its disk step), its event handled after.
	put(userFact)
	told = nil
	at = func(op, name string) error {
		if op == durable.Remove && name == "facts/user.md" {
			at = nil
			writeFile(t, filepath.Join(dir, "facts", "user.md"), coffee)
		}
		return nil
	}
	must(t, u.Remove("facts/user.md"))
	event("facts/user.md")
	check("save at the remove", fmt.Sprintf("delete facts/user.md %q", coffee))

	// Saved before Remove was called, no event handled at all.
	put(userFact)
	told = nil
	writeFile(t, filepath.Join(dir, "facts", "user.md"), coffee)
	must(t, u.Remove("facts/user.md"))
	check("save before the remove", fmt.Sprintf("delete facts/user.md %q", coffee))

	// An empty file (a save in progress) and a symlink: no text.
	writeFile(t, filepath.Join(dir, "facts", "empty.md"), "")
	must(t, u.Remove("facts/empty.md"))
	if err := os.Symlink("user.md", filepath.Join(dir, "facts", "link.md")); err != nil {
		t.Fatal(err)
	}
	must(t, u.Remove("facts/link.md"))
	check("empty file and symlink", `delete facts/empty.md ""`, `delete facts/link.md ""`)

	// A file over the size limit is removed; its text is not read (logged).
	big := filepath.Join(dir, "facts", "big.md")
	writeFile(t, big, "")
	if err := os.Truncate(big, maxFileSize+1); err != nil {
		t.Fatal(err)
	}
	must(t, u.Remove("facts/big.md"))
	check("file over the limit", `delete facts/big.md ""`)
	if !strings.Contains(logs.String(), "could not read a file before removing it") {
		t.Errorf("an unread text is not logged: %s", logs.String())
	}

	// A disk failure at the remove: nothing removed, nothing told.
	put(userFact)
	told = nil
	at = func(op, name string) error {
		if op == durable.Remove {
			return fmt.Errorf("disk on fire")
		}
		return nil
	}
	if err := u.Remove("facts/user.md"); err == nil {
		t.Fatal("a failed remove reported no error")
	}
	check("failed remove")
	if _, err := os.Stat(filepath.Join(dir, "facts", "user.md")); err != nil {
		t.Errorf("the file is gone after a failed remove: %v", err)
	}
}
