package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// Errors callers can tell apart with errors.Is.
var (
	// ErrConflict: the file changed on disk since the caller read it.
	ErrConflict = errors.New("changed on disk since it was read")
	// ErrNotRead: a write or patch to an existing file without a prior read.
	ErrNotRead = errors.New("not read first")
	// ErrEditing: a person has the file open in an editor.
	ErrEditing = errors.New("open in an editor")
	// ErrNotFound: the memory file does not exist.
	ErrNotFound = errors.New("no such memory file")
	// ErrTooLarge: content over the write cap.
	ErrTooLarge = errors.New("too large")
	// ErrFileFull: an append that would grow an episode file past its
	// bound; it is also ErrTooLarge.
	ErrFileFull = fmt.Errorf("%w", ErrTooLarge)
	// ErrInvalid: content that does not have the required shape.
	ErrInvalid = errors.New("invalid content")
	// ErrPatch: a patch whose oldText is empty, missing or ambiguous.
	ErrPatch = errors.New("patch does not apply")
)

// errEmptyOnDisk: an append found its file existing and empty, as a
// person's save in place leaves it for a moment.
var errEmptyOnDisk = errors.New("empty on disk")

// conflictRetries bounds how often a write re-reads when the file keeps
// changing between its read and its rename.
const conflictRetries = 3

// filePerm is the mode of memory files, dirPerm of their folders: they
// hold personal data, for mnemo's user alone.
const (
	filePerm fs.FileMode = 0o600
	dirPerm  fs.FileMode = 0o700
)

// User is one user's memory: an os.Root on the user's own folder, so no
// path a tool gives can reach another user's files or leave the folder.
type User struct {
	name string
	s    *Store
	idx  *index
	// watchOnce adds the watches of the user's folders (Store.User).
	watchOnce sync.Once
	wmu       sync.Mutex // serialises this process's writes and root swaps
	rmu       sync.Mutex // serialises openRoot
	root      *folder    // the open folder, or nil; guarded by Store.pool's mu
	// known is the version of each file this store last wrote or saw:
	// what the watcher compares with to tell a hand edit from its own
	// write; making is the version of a file a write or remove is making,
	// from just before its rename (or remove) until it is done (own,
	// done); changes counts those calls, so the watcher can tell that
	// known or making changed while it read a file. Guarded by kmu.
	kmu     sync.Mutex
	known   map[string]Version
	making  map[string]Version
	changes uint64
	// found is the user's search index (search.go), made at the first
	// search and kept in step with idx.
	found userSearch
}

// Name is the memory user name.
func (u *User) Name() string { return u.name }

// openRoot returns the user's folder as an os.Root, with the use to
// release once done with it (nil with no error when the folder does not
// exist and create is false; a nil use releases nothing). The folder must
// be a real directory (os.OpenRoot would follow a symlink such as alice ->
// bob), and a cached handle is checked against the path so a folder
// removed and recreated by a person is picked up. Open folders are pooled
// (see folders): an idle one may be closed, never one in use.
func (u *User) openRoot(create bool) (*os.Root, *folder, error) {
	u.rmu.Lock()
	defer u.rmu.Unlock()
	base, pool := u.s.base, u.s.pool
	li, err := base.Lstat(u.name)
	if errors.Is(err, fs.ErrNotExist) {
		pool.drop(u) // gone; closed once its uses end
		if !create {
			return nil, nil, nil
		}
		if err = base.Mkdir(u.name, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, nil, fmt.Errorf("create memory folder for %s: %w", u.name, err)
		}
		li, err = base.Lstat(u.name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("memory folder of %s: %w", u.name, err)
	}
	if !li.IsDir() {
		return nil, nil, fmt.Errorf("memory folder %s is a %s, not a folder; user folders must be real folders", path.Join(u.s.opts.Dir, u.name), describeMode(li.Mode()))
	}
	if f := pool.take(u); f != nil {
		if fi, err := f.r.Stat("."); err == nil && os.SameFile(fi, li) {
			return f.r, f, nil
		}
		pool.drop(u) // replaced on disk
		f.release()
	}
	r, err := base.OpenRoot(u.name)
	if err != nil {
		return nil, nil, fmt.Errorf("open memory folder of %s: %w", u.name, err)
	}
	if fi, err := r.Stat("."); err != nil || !os.SameFile(fi, li) {
		r.Close()
		return nil, nil, fmt.Errorf("memory folder of %s changed while being opened; try again", u.name)
	}
	return r, pool.add(u, r), nil
}

// List returns the user's files: facts by name, then episodes newest first.
// The slice is shared with the index: read it, never modify it.
func (u *User) List() ([]FileInfo, error) {
	l, err := u.listing(false)
	return l.files, err
}

// ListShared returns the user's shared files (IsShared), in List's order.
// The slice is shared with the index: read it, never modify it.
func (u *User) ListShared() ([]FileInfo, error) {
	l, err := u.listing(true)
	return l.files, err
}

// listing is List (shared: ListShared) with its counts and version. While
// the index is watched and nothing changed, the folder is not even opened:
// the watcher reports every change to it, the folder's own removal or
// replacement included (Store.forgetRoot), and that makes the next
// listing open it and rescan.
func (u *User) listing(shared bool) (listing, error) {
	if l, ok := u.idx.current(shared); ok {
		return l, nil
	}
	root, ref, err := u.openRoot(false)
	if err != nil {
		return listing{}, err
	}
	defer ref.release()
	if shared {
		return u.idx.listShared(root), nil
	}
	return u.idx.list(root), nil
}

// KeepEach calls keep with the text of each of the user's files that has
// not been kept since it last changed, and marks it kept when keep returns
// nil, so that the next call (in this run or, with Options.IndexCache, the
// next) skips it while it stays the same. cmd/mnemo keeps the files as
// found at start in their history this way without reading every file
// at every start. It stops when stop returns true and returns how many
// files it marked. Without events from the watcher nothing is marked:
// a change could go unnoticed.
func (u *User) KeepEach(stop func() bool, keep func(p string, text []byte) error) (int, error) {
	u.checkLazy(stop) // a start's unchecked entries, stopping when told
	if stop() {
		return 0, nil
	}
	if _, err := u.List(); err != nil { // rescans: every entry is current
		return 0, err
	}
	todo := u.idx.unkept()
	paths := make([]string, 0, len(todo))
	for p := range todo {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	marked := 0
	for _, p := range paths {
		if stop() {
			break
		}
		d, err := u.Read(p)
		if err != nil {
			continue // gone or not readable: memory check says why
		}
		if keep(p, []byte(d.Text)) == nil && u.idx.markKept(p, todo[p]) {
			marked++
		}
	}
	return marked, nil
}

// Version is the current version of a memory file (absent when missing).
func (u *User) Version(p string) (Version, error) {
	if _, err := ParsePath(p); err != nil {
		return Version{}, err
	}
	root, ref, err := u.openRoot(false)
	if err != nil || root == nil {
		return Version{}, err
	}
	defer ref.release()
	_, v, err := currentVersion(root, p)
	return v, err
}

// Doc is a file as read: its whole text and the version it was read at.
type Doc struct {
	Path    string
	Text    string
	Version Version
}

// Read returns the whole text of a memory file and its version.
func (u *User) Read(p string) (Doc, error) {
	if _, err := ParsePath(p); err != nil {
		return Doc{}, err
	}
	root, ref, err := u.openRoot(false)
	if err != nil {
		return Doc{}, err
	}
	if root == nil {
		return Doc{}, notFound(p)
	}
	defer ref.release()
	data, v, err := readRegular(root, p)
	if errors.Is(err, fs.ErrNotExist) {
		return Doc{}, notFound(p)
	}
	if err != nil {
		return Doc{}, err
	}
	return Doc{Path: p, Text: string(data), Version: v}, nil
}

func notFound(p string) error {
	return fmt.Errorf("%s: %w", p, ErrNotFound)
}

// checkTarget refuses a write of text to p unless p is a path of kind
// want and text is within the write cap (what names text in the error).
func (u *User) checkTarget(p string, want Kind, what, text string) error {
	kind, err := ParsePath(p)
	if err != nil {
		return err
	}
	if kind == KindRollup {
		return rollupError(p)
	}
	if kind != want {
		return &KindError{Path: p, Want: want}
	}
	if len(text) > u.s.opts.WriteCap {
		return fmt.Errorf("%s: %w: %s%d bytes, the limit is %d", p, ErrTooLarge, what, len(text), u.s.opts.WriteCap)
	}
	return nil
}

// Write replaces (or creates) a fact file. base is the version the caller
// read; it is required when the file exists and must still be current.
func (u *User) Write(p, content string, base *Version, commit CommitHook) (Version, error) {
	return u.write(p, content, base, commit, visKeep, nil)
}

// write is Write; with st (a model's session) content is the plain text
// the model wrote, stamped against the file's current text (stamping).
func (u *User) write(p, content string, base *Version, commit CommitHook, vis visPolicy, st *stamping) (Version, error) {
	if err := u.checkTarget(p, KindFact, "", content); err != nil {
		return Version{}, err
	}
	if err := checkFact(content); err != nil {
		return Version{}, fmt.Errorf("%s: %w: %v", p, ErrInvalid, err)
	}
	return u.update(p, ChangeWrite, true, commit, vis.guard(p, func(cur []byte, v Version) ([]byte, error) {
		switch {
		case v.Exists && base == nil:
			return nil, fmt.Errorf("%s: %w: it already exists", p, ErrNotRead)
		case base != nil && !v.Same(*base):
			return nil, conflict(p, *base, v)
		}
		if st != nil {
			return []byte(st.apply(KindFact, string(cur), content)), nil
		}
		return []byte(content), nil
	}))
}

// Patch is one text replacement of memory_patch.
type Patch struct {
	OldText string `json:"oldText" desc:"exact text to replace; must occur once"`
	NewText string `json:"newText"`
}

// applyPatches applies every patch in order, each oldText occurring exactly
// once in the text at that point, or nothing at all.
func applyPatches(p, text string, patches []Patch) (string, error) {
	if len(patches) == 0 {
		return "", fmt.Errorf("%s: %w: no patches given", p, ErrPatch)
	}
	for i, pt := range patches {
		var why string
		switch n := strings.Count(text, pt.OldText); {
		case pt.OldText == "":
			why = "oldText is empty"
		case n == 0:
			why = "oldText not found"
		case n > 1:
			why = fmt.Sprintf("oldText found %d times; include more surrounding text so it matches once", n)
		}
		if why != "" {
			return "", fmt.Errorf("%s: %w: patch %d of %d: %s; nothing was applied", p, ErrPatch, i+1, len(patches), why)
		}
		text = strings.Replace(text, pt.OldText, pt.NewText, 1)
	}
	return text, nil
}

// Patch applies replacements to an existing file, all or nothing. When the
// file changed since base, the patches are re-applied to the new text if
// each oldText still matches once there; otherwise it is a conflict.
func (u *User) Patch(p string, patches []Patch, base *Version, commit CommitHook) (Version, error) {
	return u.patch(p, patches, base, commit, visKeep, nil)
}

// patch is Patch; with st (a model's session) the patches apply to the
// text without stamps, as the model read it, and the result is stamped.
func (u *User) patch(p string, patches []Patch, base *Version, commit CommitHook, vis visPolicy, st *stamping) (Version, error) {
	kind, err := ParsePath(p)
	if err != nil {
		return Version{}, err
	}
	if kind == KindRollup {
		return Version{}, rollupError(p)
	}
	var forgot []string
	nv, err := u.updateForgetting(p, ChangePatch, false, commit, &forgot, vis.guard(p, func(cur []byte, v Version) ([]byte, error) {
		forgot = nil
		switch {
		case !v.Exists:
			if base != nil && base.Exists {
				return nil, conflict(p, *base, v)
			}
			return nil, notFound(p)
		case base == nil:
			return nil, fmt.Errorf("%s: %w", p, ErrNotRead)
		}
		text := string(cur)
		if st != nil {
			text = StripStamps(text)
		}
		out, err := applyPatches(p, text, patches)
		if err != nil {
			if !v.Same(*base) {
				c := conflict(p, *base, v)
				c.Also = err
				return nil, c
			}
			return nil, err
		}
		if len(out) > u.s.opts.WriteCap && len(out) > len(cur) {
			return nil, fmt.Errorf("%s: %w: the patched file would be %d bytes, the limit is %d", p, ErrTooLarge, len(out), u.s.opts.WriteCap)
		}
		if kind == KindFact {
			if err := checkFact(out); err != nil {
				return nil, fmt.Errorf("%s: %w: after patching, %v", p, ErrInvalid, err)
			}
		}
		if st != nil {
			out, forgot = forgetting(kind, text, out, patches)
			if len(forgot) > 0 && kind == KindEpisode {
				out = resummarised(p, out, forgot)
			}
			out = st.apply(kind, string(cur), out)
		}
		return []byte(out), nil
	}))
	if err == nil && len(forgot) > 0 {
		err = u.forgetRollups(p)
	}
	return nv, err
}

// maxEpisodeFile bounds an episode file that memory_append grows.
const maxEpisodeFile = 1 << 20

// Append adds one entry at the end of a month's episode file, creating it
// with its title when new, and sets the file-level summary: to summary when
// given, else regenerated from the entries' own summaries.
func (u *User) Append(p, entry, summary string, commit CommitHook) (Version, error) {
	return u.appendEntry(p, entry, summary, commit, visKeep, nil)
}

// appendEntry is Append; with st's source the entry's heading is stamped,
// and an entry the file already has (same heading and date) is not added
// again: its stamp is renewed.
func (u *User) appendEntry(p, entry, summary string, commit CommitHook, vis visPolicy, st *stamping) (Version, error) {
	if err := u.checkTarget(p, KindEpisode, "the entry is ", entry); err != nil {
		return Version{}, err
	}
	e, err := parseEntry(entry)
	if err != nil {
		return Version{}, fmt.Errorf("%s: %w: %v", p, ErrInvalid, err)
	}
	month := trimShared(strings.TrimSuffix(path.Base(p), ".md")) // episodes/2026-03.shared.md: 2026-03
	if !strings.HasPrefix(e.Date, month) {
		return Version{}, fmt.Errorf("%s: %w: the entry is dated %s; append it to episodes/%s.md", p, ErrInvalid, e.Date, e.Date[:7])
	}
	summary = oneLine(summary, maxSummaryLen)
	return u.update(p, ChangeAppend, true, commit, vis.guard(p, func(cur []byte, v Version) ([]byte, error) {
		if v.Exists && len(cur) == 0 {
			return nil, errEmptyOnDisk
		}
		text := string(cur)
		if strings.TrimSpace(text) == "" {
			text = "# " + month + " Episodes\n\n> Summary: \n"
		}
		add := entry
		if st != nil {
			stamped, renewed, dup := stampEntry(text, entry, e, st.src)
			if dup {
				return []byte(renewed), nil // told again: one entry, its newest source
			}
			add = stamped
		}
		text = strings.TrimRight(text, "\n") + "\n\n" + strings.Trim(add, "\n") + "\n"
		if len(text) > maxEpisodeFile {
			return nil, fmt.Errorf("%s: %w: the file would pass %d bytes", p, ErrFileFull, maxEpisodeFile)
		}
		s := summary
		if s == "" {
			_, entries, _ := parseEpisodes(text)
			s = episodeSummary(entries)
		}
		return []byte(setSummary(text, s, month+" Episodes")), nil
	}))
}
