package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// soakHuman is a person editing memory files while mnemo runs. Each edit
// adds one line, its marker, to what the file holds, and saves it the way
// one of the usual tools does (soakStyles).
//
// A save is made under the user's save lock, which the model holds while a
// reflection's memory tool calls run (soakModel.hold). So a save lands at
// any moment but inside one of those calls: between a reflection's read
// and its write (what the store's compare-and-swap is for), while the
// reflector pre-loads the files, while the Thinker reads them. The soak
// then requires every marker in its file at the end: no "the conflict was
// reported" excuse is needed, since a conflict the store reports refuses
// the reflection's write, the person's version stays, and the reflection
// redoes its change on it. Inside a tool call are the two moments the
// store cannot defend: a save landing between its last check and its
// rename (a rename-based compare-and-swap cannot see it), and a read of a
// file that a save in place has truncated but not yet written (memory
// TestAppendWhileAPersonSavesInPlace). -soak.free drops the lock to look
// for them.
//
// The person is careful the way vim is: if the file changed between their
// read and their save (the reflector wrote), they redo the edit on what is
// there now, so that they do not overwrite the reflector either.
type soakHuman struct {
	memDir  string
	scratch string // where cp's source files are written
	free    bool   // -soak.free: saves take no lock

	mu      sync.Mutex
	locks   map[string]*sync.Mutex // memory user → save lock
	editing map[string]*sync.Mutex // memory user → one person's edit at a time
	seq     int
	edits   []soakEdit
	byStyle map[string]int

	redone  atomic.Int64 // saves redone because the file changed since it was read
	yielded atomic.Int64 // vim edits dropped because a reflection was writing
	skipped atomic.Int64 // edits of a file that did not exist yet
}

// soakEdit is one saved edit.
type soakEdit struct {
	user, path, style, marker string
	forced                    bool // made by the model between a reflection's read and its write
}

// soakStyles are the ways a person saves a file.
var soakStyles = []string{"in place", "vim", "sed -i", "cp", "echo >>"}

func newSoakHuman(memDir, scratch string, free bool) *soakHuman {
	return &soakHuman{memDir: memDir, scratch: scratch, free: free, locks: map[string]*sync.Mutex{},
		editing: map[string]*sync.Mutex{}, byStyle: map[string]int{}}
}

// lock is user's save lock.
func (h *soakHuman) lock(user string) *sync.Mutex { return h.mutex(h.locks, user) }

func (h *soakHuman) mutex(m map[string]*sync.Mutex, user string) *sync.Mutex {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := m[user]
	if l == nil {
		l = &sync.Mutex{}
		m[user] = l
	}
	return l
}

// errYield: a vim edit gave way to a reflection that was writing.
var errYield = errors.New("a reflection is writing")

// edit adds a marker line to user's file p and saves it in style. A forced
// edit waits for the save lock; vim otherwise gives way (errYield) when a
// reflection holds it, since that reflection's write may be waiting for
// vim's swap file to go.
func (h *soakHuman) edit(user, p, style string, forced bool) error {
	h.mu.Lock()
	h.seq++
	id := fmt.Sprintf("H%06d", h.seq)
	h.mu.Unlock()
	marker := fmt.Sprintf("- Human edit %s (%s)", id, style)
	full := filepath.Join(h.memDir, user, filepath.FromSlash(p))
	// The person making the edits in the background and the one the model
	// calls between a read and a write never edit one user's files at once.
	e := h.mutex(h.editing, user)
	e.Lock()
	defer e.Unlock()
	l := h.lock(user)
	if h.free {
		l = &sync.Mutex{} // nobody else's: the save may land anywhere
	}
	for {
		base, err := os.ReadFile(full)
		if errors.Is(err, fs.ErrNotExist) {
			h.skipped.Add(1)
			return nil
		}
		if err != nil {
			return err
		}
		next := strings.TrimRight(string(base), "\n") + "\n" + marker + "\n"
		swap := ""
		if style == "vim" {
			// vim keeps .NAME.swp beside the file while it is open; the
			// store waits for it to go before writing.
			swap = filepath.Join(filepath.Dir(full), "."+filepath.Base(full)+".swp")
			if err := os.WriteFile(swap, []byte("b0VIM 9.1"), 0o600); err != nil {
				return err
			}
			if !forced && !l.TryLock() {
				os.Remove(swap)
				h.yielded.Add(1)
				return errYield
			}
			if forced {
				l.Lock()
			}
		} else {
			l.Lock()
		}
		cur, err := os.ReadFile(full)
		if err == nil && !bytes.Equal(cur, base) {
			// Changed since it was read: the reflector wrote. Redo it.
			h.redone.Add(1)
			if swap != "" {
				os.Remove(swap)
			}
			l.Unlock()
			continue
		}
		if err == nil {
			err = h.save(full, style, next, marker, id)
		}
		if swap != "" {
			os.Remove(swap)
		}
		l.Unlock()
		if err != nil {
			return fmt.Errorf("%s save of %s/%s: %w", style, user, p, err)
		}
		h.mu.Lock()
		h.edits = append(h.edits, soakEdit{user: user, path: p, style: style, marker: marker, forced: forced})
		h.byStyle[style]++
		h.mu.Unlock()
		return nil
	}
}

// save writes next (or, for echo >>, appends the marker line) to full the
// way style does.
func (h *soakHuman) save(full, style, next, marker, id string) error {
	switch style {
	case "in place": // cat > file, or an editor with backupcopy=yes: the same inode, truncated
		return os.WriteFile(full, []byte(next), 0o600)
	case "vim": // vim's default: the file renamed to file~, a new file written, the backup removed
		backup := full + "~"
		if err := os.Rename(full, backup); err != nil {
			return err
		}
		if err := writeSynced(full, next); err != nil {
			return err
		}
		return os.Remove(backup)
	case "sed -i": // a temp file beside it, renamed over it
		tmp := filepath.Join(filepath.Dir(full), fmt.Sprintf("sed%06d", rand.IntN(1e6)))
		if err := os.WriteFile(tmp, []byte(next), 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, full)
	case "cp": // cp SRC file: a file prepared elsewhere, copied into the same inode
		src := filepath.Join(h.scratch, id+".md") // one per edit: two people may save at once
		if err := os.WriteFile(src, []byte(next), 0o600); err != nil {
			return err
		}
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(full, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	case "echo >>": // appended in place
		f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(marker + "\n"); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return fmt.Errorf("unknown style %q", style)
}

func writeSynced(name, text string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// work makes one edit per value received on kicks, until kicks is closed:
// a random user, facts/soak.md or one of their episode files, a random
// style. It returns the first error.
func (h *soakHuman) work(kicks <-chan struct{}, users []string, rng *rand.Rand) error {
	var first error
	for range kicks {
		user := users[rng.IntN(len(users))]
		p := soakFactPath
		if rng.IntN(2) == 0 {
			eps, _ := filepath.Glob(filepath.Join(h.memDir, user, "episodes", "*.md"))
			if len(eps) > 0 {
				sort.Strings(eps)
				p = "episodes/" + filepath.Base(eps[rng.IntN(len(eps))])
			}
		}
		err := h.edit(user, p, soakStyles[rng.IntN(len(soakStyles))], false)
		if err != nil && !errors.Is(err, errYield) && first == nil {
			first = err
		}
	}
	return first
}

func (h *soakHuman) ledger() ([]soakEdit, map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	by := make(map[string]int, len(h.byStyle))
	for k, v := range h.byStyle {
		by[k] = v
	}
	return append([]soakEdit(nil), h.edits...), by
}
