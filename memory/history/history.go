package history

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Defaults of history.keep and history.maxAge.
const (
	DefaultKeep   = 50
	DefaultMaxAge = 90 * 24 * time.Hour
)

// ErrNoVersion is returned when no version matches what was asked for.
var ErrNoVersion = errors.New("no such version")

// Options configures a Store.
type Options struct {
	Dir string // <state>/history; created (0700) when missing
	// Root, when set, is Dir already opened (through the state folder's
	// root, so that a link there that leads out is refused); the Store
	// closes it. nil: Dir is made and opened here.
	Root   *os.Root
	Keep   int           // versions kept per file; <= 0: DefaultKeep
	MaxAge time.Duration // older versions are dropped; <= 0: DefaultMaxAge
	Now    func() time.Time
}

// Version is one recorded version of a memory file.
type Version struct {
	ID     string    `json:"id"`
	Path   string    `json:"path"`
	Time   time.Time `json:"time"`
	Who    string    `json:"who"`
	Size   int64     `json:"size"`
	SHA256 string    `json:"sha256"`
	// Deleted marks the record of a deletion (Size 0, no text).
	Deleted bool `json:"deleted,omitempty"`
}

// Store is the history of every user's memory files. It is safe for
// concurrent use within one process (one process owns a data folder).
type Store struct {
	opts Options
	root *os.Root
	mu   sync.Mutex
	// removals counts the removals (a forget); removed holds the count at
	// the last removal of a user ("user") or of a file ("user/path"), so
	// that RecordSince can tell what was removed after its mark.
	removals uint64
	removed  map[string]uint64
	// forgetting are the folders whose note of lines being forgotten is
	// this process's, between Forgetting and Forgot; a note not here is
	// a crash's, finished at the next look.
	forgetting map[string]bool
}

// Open opens (creating when missing) the history folder. It reads none of
// it: a start costs the same at any size (a crash's temp files are
// removed when their file's next version is recorded).
func Open(opts Options) (*Store, error) {
	opts.Keep = defaults.Positive(opts.Keep, DefaultKeep)
	opts.MaxAge = defaults.Positive(opts.MaxAge, DefaultMaxAge)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Root != nil {
		return &Store{opts: opts, root: opts.Root}, nil
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	root, err := os.OpenRoot(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Store{opts: opts, root: root}, nil
}

// Dir is the history folder.
func (s *Store) Dir() string { return s.opts.Dir }

// Close releases the folder.
func (s *Store) Close() error { return s.root.Close() }

// dir is the folder of one file's versions, inside the root.
func dir(user, p string) (string, error) {
	if err := memory.ValidateOwner(user); err != nil {
		return "", err
	}
	if _, err := memory.ParsePath(p); err != nil {
		return "", err
	}
	return path.Join(user, p), nil
}

// Record keeps content as the newest version of user's file p, made by who.
// Text equal to the newest version is not recorded again (recorded is
// false): the watcher seeing the store's own write, say. Older versions
// past Keep or MaxAge are dropped.
func (s *Store) Record(user, p string, content []byte, who string) (v Version, recorded bool, err error) {
	return s.record(user, p, content, who, false, nil)
}

// Mark is the point RecordSince compares with: take it before reading
// the text to record.
func (s *Store) Mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removals
}

// RecordSince is Record, unless user's history or that of file p was
// removed (a forget) after mark was taken: text read before a forget is
// not kept after it (recorded is false, no error). The history's
// baseline reads every file as found at start while a forget may run.
func (s *Store) RecordSince(mark uint64, user, p string, content []byte, who string) (v Version, recorded bool, err error) {
	return s.record(user, p, content, who, false, &mark)
}

// RecordDelete notes that user's file p was deleted by who, after keeping
// its last text (when given and not yet recorded).
func (s *Store) RecordDelete(user, p string, last []byte, who string) error {
	if last != nil {
		if _, _, err := s.record(user, p, last, "before delete", false, nil); err != nil {
			return err
		}
	}
	_, _, err := s.record(user, p, nil, who, true, nil)
	return err
}

// record keeps a version; with since, only when neither user's history
// nor p's was removed after *since.
func (s *Store) record(user, p string, content []byte, who string, deleted bool, since *uint64) (Version, bool, error) {
	d, err := dir(user, p)
	if err != nil {
		return Version{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if since != nil && (s.removed[user] > *since || s.removed[d] > *since) {
		return Version{}, false, nil
	}
	versions, temps, err := s.read(d)
	if err != nil {
		return Version{}, false, err
	}
	if s.forgetting[d] && !deleted {
		lines, err := s.pending(d)
		if err != nil {
			return Version{}, false, err
		}
		content = without(content, memory.Forgets(lines))
	}
	for _, n := range temps { // a crash's, in the middle of a write of this file
		s.root.Remove(path.Join(d, n))
	}
	sum := sha256.Sum256(content)
	v := Version{Path: p, Time: s.opts.Now().UTC(), Who: who, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), Deleted: deleted}
	if deleted {
		v.SHA256, v.Size = "", 0
	}
	if n := len(versions); n > 0 && versions[0].Deleted == v.Deleted && versions[0].SHA256 == v.SHA256 {
		return versions[0], false, nil
	}
	v.ID = newID(v.Time, versions)
	if err := s.root.MkdirAll(d, 0o700); err != nil {
		return Version{}, false, fmt.Errorf("history: %w", err)
	}
	if !deleted {
		if err := s.write(path.Join(d, v.ID+".md"), content); err != nil {
			return Version{}, false, err
		}
	}
	meta, _ := json.Marshal(v)
	if err := s.write(path.Join(d, v.ID+".json"), append(meta, '\n')); err != nil {
		return Version{}, false, err
	}
	if err := s.syncDir(d); err != nil {
		return Version{}, false, err
	}
	s.prune(d, append([]Version{v}, versions...))
	return v, true, nil
}

// newID names a version by its time (to the millisecond, so a listing
// sorts by name), with a suffix past any other of that millisecond, so a
// later version never sorts before an earlier one (even after pruning).
func newID(t time.Time, versions []Version) string {
	base := t.Format("20060102T150405.000Z")
	last := 0
	for _, v := range versions {
		switch rest, ok := strings.CutPrefix(v.ID, base); {
		case !ok:
		case rest == "":
			last = max(last, 1)
		default:
			if n, err := strconv.Atoi(strings.TrimPrefix(rest, "-")); err == nil {
				last = max(last, n)
			}
		}
	}
	if last == 0 {
		return base
	}
	return fmt.Sprintf("%s-%04d", base, last+1) // padded: ids sort in the order they were made
}

// write puts data at name atomically (durable.WriteFile); the caller
// fsyncs the folder once for the version's files.
func (s *Store) write(name string, data []byte) error {
	if err := durable.WriteFile(s.root, name, data, durable.WriteOptions{NoDirSync: true}); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

func (s *Store) syncDir(d string) error {
	if err := durable.SyncDir(s.root, d, nil); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// prune drops versions past Keep and older than MaxAge (newest first in
// versions); the newest is always kept. A version that cannot be removed
// now is tried again at the next record.
func (s *Store) prune(d string, versions []Version) {
	cutoff := s.opts.Now().Add(-s.opts.MaxAge)
	for i, v := range versions {
		if i == 0 || (i < s.opts.Keep && !v.Time.Before(cutoff)) {
			continue
		}
		s.root.Remove(path.Join(d, v.ID+".json")) // the record first: no half version is listed
		s.root.Remove(path.Join(d, v.ID+".md"))
	}
}

// names lists the entries of folder d; a missing folder has none.
func (s *Store) names(d string) ([]string, error) {
	f, err := s.root.Open(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return names, nil
}

// list reads the versions in folder d, newest first. A text without its
// record (a crash between the two writes) is not a version.
func (s *Store) list(d string) ([]Version, error) {
	out, _, err := s.read(d)
	return out, err
}

// read is list, and the names of the temp files in d; a forget a crash
// left half done there is finished first.
func (s *Store) read(d string) (out []Version, temps []string, err error) {
	if !s.forgetting[d] {
		if err := s.finish(d); err != nil {
			return nil, nil, err
		}
	}
	return s.readRaw(d)
}

// readRaw is read without finishing a forget.
func (s *Store) readRaw(d string) (out []Version, temps []string, err error) {
	names, err := s.names(d)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		if durable.IsTemp(n) {
			temps = append(temps, n)
			continue
		}
		if !strings.HasSuffix(n, ".json") {
			continue
		}
		data, err := s.root.ReadFile(path.Join(d, n))
		if err != nil {
			continue
		}
		var v Version
		if json.Unmarshal(data, &v) != nil || v.ID+".json" != n {
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Version) int {
		return cmp.Or(b.Time.Compare(a.Time), strings.Compare(b.ID, a.ID)) // newest first
	})
	return out, temps, nil
}

// List returns the versions of user's file p, newest first; with p "",
// those of all their files, newest first.
func (s *Store) List(user, p string) ([]Version, error) {
	if p != "" {
		d, err := dir(user, p)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.list(d)
	}
	if err := memory.ValidateOwner(user); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []Version
	for _, kind := range []string{"facts", "episodes"} {
		names, err := s.names(path.Join(user, kind))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if _, err := memory.ParsePath(kind + "/" + n); err != nil {
				continue
			}
			vs, err := s.list(path.Join(user, kind, n))
			if err != nil {
				return nil, err
			}
			all = append(all, vs...)
		}
	}
	slices.SortStableFunc(all, func(a, b Version) int { return b.Time.Compare(a.Time) })
	return all, nil
}

// Find returns the version of user's file p that at names: a version id,
// or a time (RFC 3339, "2006-01-02 15:04[:05]" or "2006-01-02", UTC
// unless it says otherwise), meaning the newest version at or before it.
func (s *Store) Find(user, p, at string) (Version, error) {
	versions, err := s.List(user, p)
	if err != nil {
		return Version{}, err
	}
	if len(versions) == 0 {
		return Version{}, fmt.Errorf("%s of %s: %w: it has no history", p, user, ErrNoVersion)
	}
	for _, v := range versions {
		if v.ID == at {
			return v, nil
		}
	}
	t, ok := parseTime(at)
	if !ok {
		return Version{}, fmt.Errorf("%s of %s: %w %q: give a version id from mnemo memory history, or a time such as 2026-11-25 14:30 (UTC) or 2026-11-25T14:30:00+01:00", p, user, ErrNoVersion, at)
	}
	for _, v := range versions {
		if !v.Time.After(t) {
			return v, nil
		}
	}
	return Version{}, fmt.Errorf("%s of %s: %w at %s: the oldest kept is %s (%s)", p, user, ErrNoVersion, t.Format(time.RFC3339), versions[len(versions)-1].ID, versions[len(versions)-1].Time.Format(time.RFC3339))
}

func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04", time.DateOnly} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			if layout == time.DateOnly {
				t = t.Add(24*time.Hour - time.Nanosecond) // the end of that day
			}
			return t, true
		}
	}
	return time.Time{}, false
}

// Read returns the text of version v of user's file p.
func (s *Store) Read(user, p string, v Version) ([]byte, error) {
	d, err := dir(user, p)
	if err != nil {
		return nil, err
	}
	if v.Deleted {
		return nil, fmt.Errorf("%s of %s: version %s records its deletion; restore an earlier one", p, user, v.ID)
	}
	s.mu.Lock() // not in the middle of a forget's rewrite of it
	defer s.mu.Unlock()
	data, err := s.root.ReadFile(path.Join(d, v.ID+".md"))
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != v.SHA256 {
		return nil, fmt.Errorf("history: %s of %s, version %s: the kept text does not match its checksum", p, user, v.ID)
	}
	return data, nil
}

// RemoveUser deletes all of user's history (a forget must forget).
func (s *Store) RemoveUser(user string) error {
	if err := memory.ValidateOwner(user); err != nil {
		return err
	}
	return s.removeAll(user)
}

// removedLocked notes a removal of d (a user, or a user's file) for
// RecordSince. s.mu is held.
func (s *Store) removedLocked(d string) {
	s.removals++
	if s.removed == nil {
		s.removed = map[string]uint64{}
	}
	s.removed[d] = s.removals
}

// Remove deletes the history of user's file p.
func (s *Store) Remove(user, p string) error {
	d, err := dir(user, p)
	if err != nil {
		return err
	}
	return s.removeAll(d)
}

func (s *Store) removeAll(d string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removedLocked(d)
	if err := s.root.RemoveAll(d); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// Summary says in a few words how version text b differs from a (the
// one before it): "+3 −1 lines", "created", "unchanged".
func Summary(a, b []byte, aExists bool) string {
	if !aExists {
		return fmt.Sprintf("created, %d lines", lineCount(b))
	}
	count := map[string]int{}
	for _, l := range lines(a) {
		count[l]++
	}
	added := 0
	for _, l := range lines(b) {
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	removed := 0
	for _, n := range count {
		removed += n
	}
	if added == 0 && removed == 0 {
		return "unchanged"
	}
	return fmt.Sprintf("+%d −%d lines", added, removed)
}

func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func lineCount(b []byte) int { return len(lines(b)) }
