package memory

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Options configures a Store. Zero values take the defaults noted.
type Options struct {
	Dir      string        // the memory root, e.g. data/memory (required)
	ReadCap  int           // bytes memory_read returns before cutting; default 64 KiB
	WriteCap int           // bytes a fact file or an episode entry may hold; default 32 KiB
	EditWait time.Duration // how long a write waits for an editor's swap file to go; default 3s
	// SearchBudget bounds the bytes of a memory_search result; default
	// DefaultSearchBudget (memory.searchBudget).
	SearchBudget int
	Watch        bool         // keep the index current with fsnotify; false: rescan on every List
	Clean        bool         // this process owns the folder: remove temp files a crash left as a user's folders are first listed
	Logger       *slog.Logger // nil: discard
	// Clock tells the time (a stale temp file's age, how long a write has
	// waited) and times the waits for an editor; nil: the system clock.
	Clock clock.Clock
	// Faults, when set, is called before each change memory makes on disk
	// (op one of memory/durable's operations; name the path in the user's
	// folder); an error it returns is that operation's failure. Tests
	// inject full disks, I/O errors and crashes with it; production leaves
	// it nil.
	Faults durable.Hook
	// OnChange, when set, is told of each change made to a memory file
	// (after it is made; for a delete, Before has only Exists and Size and
	// After is the zero Version): a session's write, patch or append, or a
	// Remove through this store, and (with Watch) a change made outside it
	// that the watcher saw (ChangeEdit). It must not call back into the store.
	OnChange func(Commit)
	// Forgetting, when set, is told of a change that forgets lines
	// (Commit.Forgotten) just before it is made; an error aborts the
	// change. The history makes the forgetting durable there, so a crash
	// right after the change cannot leave the lines in an older version.
	Forgetting func(Commit) error
	// IndexCache, when set, is the folder that keeps each user's index
	// between runs (<IndexCache>/<user>.idx, see indexcache.go), so that
	// a start re-reads only the files that changed; "": none. Only a
	// store that watches writes it (at Close); any store removes a user's
	// with a forget (Remove, RemoveAll).
	IndexCache string
	// IndexCacheRoot, when set, is the folder IndexCache names, opened
	// (the state folder's index, through its root): the cache files are
	// opened through it, so a link there that leads out is never followed.
	// The caller closes it after the store. nil: IndexCache's path is used.
	IndexCacheRoot *os.Root
	// Owner says who owns a file, for Check's foreign owners; nil: the
	// file's stat. Tests make a file someone else's with it.
	Owner Owner

	// watched, when set, is called after the watcher handled an event
	// (name: its path) or an error (name ""): tests wait on it instead of
	// polling the index.
	watched func(name string)
	// watchRead, when set, is called after the watcher read memory file p
	// for an event and before it compares what it read: tests make a
	// change there.
	watchRead func(p string)
}

// Store is the memory of every user under one folder. Open it once per
// process; it is safe for concurrent use.
type Store struct {
	opts   Options
	clock  clock.Clock
	log    *slog.Logger
	base   *os.Root // the memory root: only for finding user folders
	pool   *folders // the users' open folders, bounded
	fault  durable.Hook
	mu     sync.Mutex
	users  map[string]*User
	w      *fsnotify.Watcher
	wg     sync.WaitGroup
	closed chan struct{}

	checkOps checkOps
	owner    Owner // Options.Owner, else the stat's
}

// Open opens (creating when missing) the memory root and, with
// Options.Watch, starts the watcher that keeps every user's index current.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("memory: no data folder given; set memory.dataDir or MNEMO_DATA_DIR")
	}
	if opts.ReadCap <= 0 {
		opts.ReadCap = 64 << 10
	}
	if opts.WriteCap <= 0 {
		opts.WriteCap = 32 << 10
	}
	if opts.SearchBudget <= 0 {
		opts.SearchBudget = DefaultSearchBudget
	}
	if opts.EditWait <= 0 {
		opts.EditWait = 3 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory: create data folder %s: %w", opts.Dir, err)
	}
	base, err := os.OpenRoot(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("memory: open data folder %s: %w", opts.Dir, err)
	}
	s := &Store{opts: opts, clock: clock.Or(opts.Clock), log: log, base: base, fault: opts.Faults, users: map[string]*User{}, closed: make(chan struct{}), checkOps: realCheckOps(), pool: newFolders(maxIdleFolders), owner: opts.Owner}
	if s.owner == nil {
		s.owner = StatOwner
	}
	if opts.Watch {
		if err := s.startWatch(); err != nil {
			// Without events the index is rebuilt on every List: slower, never stale.
			log.Warn("memory: file watching unavailable; rescanning on every list", "dir", opts.Dir, "err", err)
		}
	}
	return s, nil
}

// Close stops the watcher, waits for it and closes every open folder.
func (s *Store) Close() error {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return nil
	default:
	}
	close(s.closed)
	w := s.w
	users := make([]*User, 0, len(s.users))
	for _, u := range s.users {
		users = append(users, u)
	}
	s.mu.Unlock()
	// The watcher's file closes while the caches are written: closing
	// an inotify descriptor can wait for the kernel (tens of milliseconds).
	werr := make(chan error, 1)
	go func() {
		if w != nil {
			werr <- w.Close()
		}
		close(werr)
	}()
	for _, u := range users {
		if w == nil {
			break // not written without a watcher: another process may be the one that watches
		}
		if err := u.idx.save(); err != nil {
			s.log.Warn("memory: could not keep the index for the next start; it will be rebuilt", "user", u.name, "err", err)
		}
	}
	err := <-werr
	s.wg.Wait()
	s.pool.close()
	return errors.Join(err, s.base.Close())
}

// sleep waits d on the store's clock; false: the store closed first.
func (s *Store) sleep(d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.closed:
		return false
	case <-t.C():
		return true
	}
}

// Dir is the memory root folder.
func (s *Store) Dir() string { return s.opts.Dir }

// Users lists the user folders, sorted. Anything else in the root (files,
// symlinks, channels' folders, names outside the grammar) is skipped.
func (s *Store) Users() ([]string, error) {
	return s.folders(ValidateUser)
}

// Channels lists the channels' memory folders (mnemo.ChannelKey), sorted.
func (s *Store) Channels() ([]string, error) {
	return s.folders(mnemo.ValidateChannel)
}

// Owners lists every memory folder: the users' and the channels'.
func (s *Store) Owners() ([]string, error) {
	return s.folders(ValidateOwner)
}

func (s *Store) folders(valid func(string) error) ([]string, error) {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("memory: list users in %s: %w", s.opts.Dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsDir() && valid(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// User returns the handle for one user's memory, or a channel's (name an
// mnemo.ChannelKey: the same sandbox, index and history). The folder is
// created on the first write, not here, so asking about a new user leaves
// no trace.
func (s *Store) User(name string) (*User, error) {
	if err := ValidateOwner(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	u, ok := s.users[name]
	if !ok {
		cache := ""
		if s.opts.IndexCache != "" {
			cache = filepath.Join(s.opts.IndexCache, name+".idx")
		}
		u = &User{name: name, s: s, idx: newIndex(s.clock.Now, cache)}
		u.idx.cacheRoot = s.opts.IndexCacheRoot
		if s.opts.Clean {
			u.idx.leftover = func(p string, err error) {
				s.log.Info("memory: removed leftover temp file", "user", name, "file", p, "err", err)
			}
		}
		u.idx.unwatched = s.w == nil
		s.users[name] = u
	}
	w := s.w
	s.mu.Unlock()
	if w != nil {
		// A user's folders are watched from the first time the user is
		// asked for, before anyone can list them: a process pays for the
		// folders it uses, not for every user's.
		u.watchOnce.Do(func() { s.addWatches(u) })
	}
	return u, nil
}

// startWatch watches the root; the folders of a user are watched once
// the user is asked for (User).
func (s *Store) startWatch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(s.opts.Dir); err != nil {
		w.Close()
		return err
	}
	s.w = w
	s.wg.Add(1)
	go s.watchLoop()
	return nil
}

// watchUser adds watches for a user folder that appeared, when the user
// is in use; a user not asked for yet is watched when first asked for.
func (s *Store) watchUser(name string) {
	s.mu.Lock()
	u := s.users[name]
	s.mu.Unlock()
	if u != nil {
		s.addWatches(u)
	}
}

// addWatches adds watches for a user folder and its subfolders (those
// missing are watched when they appear); a folder that cannot be watched
// makes that user's index rescan on every List.
func (s *Store) addWatches(u *User) {
	dir := filepath.Join(s.opts.Dir, u.name)
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return // a symlink or file is refused by every operation (openRoot): nothing to watch through it
	}
	var err error
	for _, d := range []string{dir, filepath.Join(dir, factsDir), filepath.Join(dir, episodesDir)} {
		if e := s.w.Add(d); e != nil && !errors.Is(e, fs.ErrNotExist) {
			err = errors.Join(err, e)
		}
	}
	if err != nil {
		s.log.Warn("memory: cannot watch user folder; its index will rescan on every list", "user", u.name, "err", err)
	}
	u.idx.invalidateAll(err != nil, false)
}

func (s *Store) watchLoop() {
	defer s.wg.Done()
	for {
		select {
		case ev, ok := <-s.w.Events:
			if !ok {
				return
			}
			s.handleEvent(ev)
			s.observe(ev.Name)
		case err, ok := <-s.w.Errors:
			if !ok {
				return
			}
			// An overflow (or any watcher error) may have lost events: rescan everyone.
			s.log.Warn("memory: watcher error; rescanning all users", "err", err)
			s.invalidateAll(true)
			s.observe("")
		}
	}
}

func (s *Store) observe(name string) {
	if s.opts.watched != nil {
		s.opts.watched(name)
	}
}

func (s *Store) invalidateAll(reread bool) {
	s.mu.Lock()
	users := make([]*User, 0, len(s.users))
	for _, u := range s.users {
		users = append(users, u)
	}
	s.mu.Unlock()
	for _, u := range users {
		u.idx.invalidateAll(false, reread)
	}
}

// handleEvent invalidates at once and leaves the recomputing to the next
// List, so bursts of events from one save cost one re-read.
func (s *Store) handleEvent(ev fsnotify.Event) {
	if ev.Op == fsnotify.Chmod {
		return
	}
	rel, err := filepath.Rel(s.opts.Dir, ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if ValidateOwner(parts[0]) != nil {
		return
	}
	switch len(parts) {
	case 1: // a user folder appeared or went
		if ev.Has(fsnotify.Create) {
			s.watchUser(parts[0])
			return
		}
		s.forgetRoot(parts[0])
	case 2: // facts/ or episodes/ appeared or went
		u, _ := s.User(parts[0])
		if ev.Has(fsnotify.Create) && (parts[1] == factsDir || parts[1] == episodesDir) {
			if err := s.w.Add(ev.Name); err != nil {
				s.log.Warn("memory: cannot watch folder; its user's index will rescan on every list", "dir", ev.Name, "err", err)
				u.idx.invalidateAll(true, false)
				return
			}
		}
		u.idx.invalidateAll(false, false)
	case 3:
		p := parts[1] + "/" + parts[2]
		if _, err := ParsePath(p); err != nil {
			return // temp files, swap files, backups: not memory
		}
		u, _ := s.User(parts[0])
		u.idx.invalidate(p)
		s.log.Debug("memory: changed on disk; re-read at the next list", "user", parts[0], "path", p, "op", ev.Op.String())
		if s.opts.OnChange != nil {
			u.noticeEdit(p)
		}
	}
}

// forgetRoot drops a user's cached folder handle (the folder was removed or
// replaced) so the next operation opens the folder that is there now.
func (s *Store) forgetRoot(name string) {
	s.mu.Lock()
	u := s.users[name]
	s.mu.Unlock()
	if u == nil {
		return
	}
	// Closed once unused: a write or read may still hold it, and the
	// event may even be late, the folder already recreated.
	s.pool.drop(u)
	u.idx.invalidateAll(false, false)
}

// sortFiles orders facts by name, then episodes newest first.
func sortFiles(files []FileInfo) { slices.SortFunc(files, cmpFiles) }

// cmpFiles is sortFiles' order (by path alone: comparePaths).
func cmpFiles(a, b FileInfo) int { return comparePaths(a.Path, b.Path) }
