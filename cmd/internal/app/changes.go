package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// changeLog is told of every change to a memory file (memory.Options.
// OnChange): it counts it in the metrics and keeps the version in the
// history. A history that cannot be written is logged, never a failed
// write: the memory itself is what must not be lost.
type changeLog struct {
	hist    *memhistory.Store
	metrics *metrics.Metrics
	log     *slog.Logger
	// authors name who asked for a change about to be made (author), by
	// user and path, with the version it makes: onChange keeps that
	// change in the history under their name instead of the reflector's.
	authors sync.Map // authorKey → authored
	// watchers are told whose memory changed (home.go).
	watchers watchers
}

type authorKey struct{ user, path string }

type authored struct {
	after memory.Version
	who   string
}

// author notes that c, a change the store is about to make (told to a
// memory.CommitHook), is who's. A change that then fails leaves a note
// that no change matches; the next change of the file drops it.
func (l *changeLog) author(c memory.Commit, who string) {
	l.authors.Store(authorKey{c.User, c.Path}, authored{c.After, who})
}

// authorOf is who made c: the author noted for it, else the reflector.
func (l *changeLog) authorOf(c memory.Commit) string {
	if v, ok := l.authors.LoadAndDelete(authorKey{c.User, c.Path}); ok && v.(authored).after.Same(c.After) {
		return v.(authored).who
	}
	return "reflector"
}

func (l *changeLog) onChange(c memory.Commit) {
	defer l.watchers.tell(c.User)
	var err error
	switch c.Kind {
	case memory.ChangeEdit:
		l.metrics.HandEdit()
		if c.After.Exists {
			_, _, err = l.hist.Record(c.User, c.Path, c.Text, "hand edit")
		} else {
			err = l.hist.RecordDelete(c.User, c.Path, nil, "hand edit (deleted)")
		}
	case memory.ChangeDelete:
		l.metrics.MemoryWrite(string(c.Kind), "ok")
		if c.Forget { // a roll-up of a month a forget took lines from
			err = l.hist.Remove(c.User, c.Path)
			break
		}
		// The text removed is kept first ("before delete") when the
		// history does not have it yet: a person's save just before
		// the forget, which the watcher may never have seen.
		err = l.hist.RecordDelete(c.User, c.Path, c.Previous, "forget")
	default:
		l.metrics.MemoryWrite(string(c.Kind), "ok")
		if c.Previous != nil {
			// Kept when the history does not have it yet (a file from
			// before history, or changed unseen): the change must be undoable.
			_, _, err = l.hist.Record(c.User, c.Path, c.Previous, "earlier text")
		}
		if err == nil {
			_, _, err = l.hist.Record(c.User, c.Path, c.Text, l.authorOf(c))
		}
		if len(c.Forgotten) > 0 {
			// The versions recorded above were kept without the
			// forgotten lines; the note of them goes now.
			err = errors.Join(err, l.hist.Forgot(c.User, c.Path))
		}
	}
	if err != nil {
		l.log.Warn("history: could not keep a version of a memory file; the file itself is written", "user", c.User, "path", c.Path, "change", string(c.Kind), "err", err)
	}
}

// forgetting is memory.Options.Forgetting: the history forgets the
// lines of a person's "forget that" in every version before the change
// is made, and the change is refused when it cannot.
func (l *changeLog) forgetting(c memory.Commit) error {
	if err := l.hist.Forgetting(c.User, c.Path, c.Forgotten); err != nil {
		l.log.Warn("history: could not forget lines in the earlier versions; the forget was not made", "user", c.User, "path", c.Path, "lines", len(c.Forgotten), "err", err)
		return err
	}
	l.log.Info("history: forgot lines in every kept version", "user", c.User, "path", c.Path, "lines", len(c.Forgotten))
	return nil
}

// baseline keeps the text of every memory file whose newest kept version
// is not what is on disk (a file from before history was kept, or edited
// while mnemo was not running) as found at start, so that the first
// change after it — a person's edit included — can be undone. It runs in
// the background at start and stops when ctx ends; only names one user
// ("" for all). It returns how many versions it kept.
func (l *changeLog) baseline(ctx context.Context, store *memory.Store, only string) int {
	users := []string{only}
	if only == "" {
		var err error
		if users, err = store.Owners(); err != nil {
			l.log.Warn("history: could not list the users to keep their files as found at start", "err", err)
			return 0
		}
	}
	kept := 0
	for _, name := range users {
		u, err := store.User(name)
		if err != nil {
			continue
		}
		// Only files not kept since they last changed are read: the
		// index cache remembers the rest from the run before.
		// A user whose files cannot be listed is skipped: memory check says why.
		// A forget while this runs wins: what was read before it is not
		// kept after it (RecordSince).
		mark := l.hist.Mark()
		u.KeepEach(func() bool { return ctx.Err() != nil }, func(p string, text []byte) error {
			_, recorded, err := l.hist.RecordSince(mark, name, p, text, "as found at start")
			if err != nil {
				l.log.Warn("history: could not keep a memory file as found at start", "user", name, "path", p, "err", err)
				return err
			}
			if recorded {
				kept++
			}
			return nil
		})
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case ctx.Err() == nil:
		// Every file is kept as found: what a measurement of the steady
		// state (mnemo-load -bench, with --verbose) waits for.
		l.log.Info("history: kept memory files as found at start; done", "versions", kept)
	case kept > 0:
		l.log.Info("history: kept memory files as found at start", "versions", kept)
	}
	return kept
}
