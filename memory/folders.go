package memory

import (
	"container/list"
	"os"
	"sync"
)

// maxIdleFolders bounds the user folders kept open while nobody uses them.
// An os.Root holds a file descriptor: kept for every user ever asked for,
// a server would hold one per person who ever wrote (1,000 people: 1,000
// descriptors) until it hits the open files limit. A folder in use is
// never closed under its user; past this many idle ones the least
// recently used is closed and opened again at its next use (one openat).
const maxIdleFolders = 32

// folders is the store's pool of open user folders: each user's open
// os.Root (User.root) is counted while in use and, once idle, kept in an
// LRU list bounded by max.
type folders struct {
	mu     sync.Mutex // guards every User.root, each folder's fields and idle
	max    int
	idle   list.List // of *folder, most recently released first
	closed bool      // the store closed: a folder released now is closed
}

// folder is one open user folder and its users: release it after use.
type folder struct {
	p       *folders
	u       *User
	r       *os.Root
	refs    int
	current bool          // still u.root: a later openRoot may reuse it
	elem    *list.Element // in p.idle while current and unused
}

func newFolders(max int) *folders { return &folders{max: max} }

// take returns u's open folder with one more use, or nil when none is open.
func (p *folders) take(u *User) *folder {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := u.root
	if f == nil {
		return nil
	}
	f.refs++
	if f.elem != nil {
		p.idle.Remove(f.elem)
		f.elem = nil
	}
	return f
}

// add makes r u's open folder, in use once.
func (p *folders) add(u *User, r *os.Root) *folder {
	f := &folder{p: p, u: u, r: r, refs: 1, current: true}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := u.root; old != nil {
		p.detachLocked(old)
	}
	u.root = f
	return f
}

// drop forgets u's open folder (removed or replaced on disk): it is closed
// now if unused, else by its last release.
func (p *folders) drop(u *User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := u.root; f != nil {
		p.detachLocked(f)
	}
}

// detachLocked makes f no longer its user's folder and closes it when
// unused. p.mu held.
func (p *folders) detachLocked(f *folder) {
	if f.u.root == f {
		f.u.root = nil
	}
	f.current = false
	if f.elem != nil {
		p.idle.Remove(f.elem)
		f.elem = nil
	}
	if f.refs == 0 {
		f.r.Close()
	}
}

// release ends one use of f (nil: nothing to release). The last use
// closes a folder that was dropped, and otherwise keeps it idle, closing
// the least recently used idle folder past max.
func (f *folder) release() {
	if f == nil {
		return
	}
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	f.refs--
	if f.refs > 0 {
		return
	}
	if !f.current || p.closed {
		p.detachLocked(f)
		return
	}
	f.elem = p.idle.PushFront(f)
	for p.idle.Len() > p.max {
		p.detachLocked(p.idle.Back().Value.(*folder))
	}
}

// close closes every idle folder; those in use close at their last
// release.
func (p *folders) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for p.idle.Len() > 0 {
		p.detachLocked(p.idle.Front().Value.(*folder))
	}
}
