package app

// "Remember this" (bots/internal/remember): the chosen message goes to
// the reflector as an explicit turn, in the person's private memory; Keep
// waits for its run (reflector.Config.OnExplicit) and keeps, for the
// Undo, each file's version before and after. An Undo puts a file back
// only while it is still as the keeping left it: after a later write (the
// reflector, a hand edit, another Remember) it refuses and changes
// nothing, since bringing back the text before would silently drop that
// later change.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo"
	remember "github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// Limits of the Undos kept (in memory: a restart forgets them).
const (
	UndoTTL  = 24 * time.Hour
	MaxUndos = 1000
)

// keeper is the app's remember.Keeper.
type keeper struct {
	a *App

	mu      sync.Mutex
	waiting map[string]chan kept // by task id
	undos   map[string]undo      // by token
	// over is closed when the shutdown grace is over: a platform's wait
	// for a keeping ends (its turn stays journaled), so it does not hold
	// the shutdown up for a reflection still running.
	over     chan struct{}
	overOnce sync.Once
}

type kept struct {
	changes []reflector.Commit
	err     error
}

// undo is how to take one keeping out again.
type undo struct {
	user  string
	files []undoFile
	until time.Time
}

// undoFile is one file a keeping changed: its version before (""
// for none) and after, as the reflector's commits name them.
type undoFile struct {
	path, before, after string
}

func newKeeper(a *App) *keeper {
	return &keeper{a: a, waiting: map[string]chan kept{}, undos: map[string]undo{}, over: make(chan struct{})}
}

// stopWaiting ends every wait for a keeping, now and later.
func (k *keeper) stopWaiting() { k.overOnce.Do(func() { close(k.over) }) }

// Keeper is "Remember this" as the chat platforms ask it.
func (a *App) Keeper() remember.Keeper { return a.keeper }

// told is the reflector's OnExplicit: it runs on the user's loop, so it
// only hands the outcome over.
func (k *keeper) told(t mnemo.Turn, changes []reflector.Commit, err error) {
	k.mu.Lock()
	ch := k.waiting[t.TaskID]
	delete(k.waiting, t.TaskID)
	k.mu.Unlock()
	if ch != nil {
		ch <- kept{changes, err} // buffered: never blocks
	}
}

// Keep hands m to the reflector as an explicit turn and waits for its run.
func (k *keeper) Keep(ctx context.Context, m remember.KeepMessage) (remember.Kept, error) {
	t := mnemo.Turn{TaskID: mnemo.NewTaskID(), User: m.User, Conversation: m.Platform + ":" + m.User + ":remember",
		Platform: m.Platform, Speaker: m.Speaker, Time: m.Time, Origin: m.Origin, Explicit: true,
		Context: []mnemo.ContextMessage{{Author: m.Author, Text: m.Text, FromSpeaker: m.Own}}}
	if t.Time.IsZero() {
		t.Time = k.a.now()
	}
	ch := make(chan kept, 1)
	k.mu.Lock()
	k.waiting[t.TaskID] = ch
	k.mu.Unlock()
	if err := k.a.core.Reflector.Add(t); err != nil {
		k.forget(t.TaskID)
		return remember.Kept{}, fmt.Errorf("journal the message: %w", err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return remember.Kept{}, r.err
		}
		return k.note(m.User, r.changes), nil
	case <-ctx.Done():
		k.forget(t.TaskID)
		return remember.Kept{}, fmt.Errorf("%w: %w", remember.ErrStillWriting, ctx.Err())
	case <-k.over:
		k.forget(t.TaskID)
		return remember.Kept{}, fmt.Errorf("%w: mnemo is stopping", remember.ErrStillWriting)
	}
}

// forget stops waiting for task id's run.
func (k *keeper) forget(id string) {
	k.mu.Lock()
	delete(k.waiting, id)
	k.mu.Unlock()
}

// note keeps how to undo changes (each file's first version before and
// last after) under a new token.
func (k *keeper) note(user string, changes []reflector.Commit) remember.Kept {
	var files []undoFile
	at := map[string]int{}
	for _, c := range changes {
		if i, ok := at[c.Path]; ok {
			files[i].after = c.After
			continue
		}
		at[c.Path] = len(files)
		files = append(files, undoFile{path: c.Path, before: c.Before, after: c.After})
	}
	out := remember.Kept{}
	for _, f := range files {
		out.Paths = append(out.Paths, f.path)
	}
	if len(files) == 0 {
		return out
	}
	now := k.a.now()
	out.Undo = mnemo.NewTaskID()
	k.mu.Lock()
	defer k.mu.Unlock()
	for tok, u := range k.undos {
		if now.After(u.until) || len(k.undos) >= MaxUndos {
			delete(k.undos, tok) // expired, or the oldest make room (map order: any)
		}
	}
	k.undos[out.Undo] = undo{user: user, files: files, until: now.Add(UndoTTL)}
	return out
}

// Undo puts back the files the keeping token names, for user only, and
// only when none was changed since: else nothing changes.
func (k *keeper) Undo(user, token string) ([]string, error) {
	k.mu.Lock()
	u, ok := k.undos[token]
	if ok && user != u.user {
		k.mu.Unlock()
		return nil, remember.ErrNotYours
	}
	if !ok || k.a.now().After(u.until) {
		delete(k.undos, token)
		k.mu.Unlock()
		return nil, remember.ErrUndoGone
	}
	delete(k.undos, token) // single use: a second press finds nothing
	k.mu.Unlock()
	mu, err := k.a.core.Store.User(user)
	if err != nil {
		return nil, err
	}
	// Every file is checked before any is changed: all or nothing.
	cur := make([]memory.Version, len(u.files))
	texts := make([][]byte, len(u.files))
	for i, f := range u.files {
		if cur[i], err = mu.Version(f.path); err != nil && !errors.Is(err, memory.ErrNotFound) {
			return nil, err
		}
		if versionID(cur[i]) != f.after {
			return nil, fmt.Errorf("%w: %s was changed after it was kept", remember.ErrChangedSince, f.path)
		}
		if f.before != "" {
			if texts[i], err = k.before(user, f); err != nil {
				return nil, err
			}
		}
	}
	var paths []string
	for i, f := range u.files {
		if f.before == "" {
			err = mu.RemoveIfUnchanged(f.path, cur[i]) // the keeping made the file
		} else {
			_, err = mu.Replace(f.path, string(texts[i]), cur[i], func(c memory.Commit) error {
				k.a.changes.author(c, user+" (Undo of Remember this)")
				return nil
			})
		}
		if errors.Is(err, memory.ErrConflict) {
			return paths, fmt.Errorf("%w: %s changed while undoing", remember.ErrChangedSince, f.path)
		}
		if err != nil {
			if len(paths) == 0 { // nothing changed: the press may be tried again
				k.mu.Lock()
				k.undos[token] = u
				k.mu.Unlock()
			}
			return paths, err
		}
		paths = append(paths, f.path)
	}
	k.a.log.Info("memory: Remember this undone at the user's request", "user", user, "paths", paths)
	return paths, nil
}

// before is the text f had before the keeping, from the history (which
// keeps a file's text before each change the store makes).
func (k *keeper) before(user string, f undoFile) ([]byte, error) {
	size, hash, _ := strings.Cut(f.before, ":")
	versions, err := k.a.hist.List(user, f.path)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if !v.Deleted && strconv.FormatInt(v.Size, 10) == size && v.SHA256 == hash {
			return k.a.hist.Read(user, f.path, v)
		}
	}
	return nil, fmt.Errorf("the history no longer holds %s as it was before; `mnemo memory history` lists what it holds", f.path)
}

// versionID names a content as the reflector's commits do (wiring's
// versionID): its size and SHA-256, "" for no file.
func versionID(v memory.Version) string {
	if !v.Exists {
		return ""
	}
	return fmt.Sprintf("%d:%x", v.Size, v.Hash)
}
