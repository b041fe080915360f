package memory

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
