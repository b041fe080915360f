package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ProblemKind names one kind of thing `mnemo memory check` reports.
type ProblemKind string

// The kinds of problem Check reports.
const (
	// ProblemBadName: an entry whose name is outside the grammar (a user
	// folder name, facts/ and episodes/, facts/<name>.md, episodes/YYYY-MM.md),
	// so mnemo ignores it.
	ProblemBadName ProblemKind = "bad-name"
	// ProblemNotRegular: a symlink, FIFO, socket, device, folder or
	// hard-linked file where a plain file (or a real folder) belongs; mnemo
	// refuses to read it.
	ProblemNotRegular ProblemKind = "not-regular"
	// ProblemTooLarge: a file over the read cap (memory_read shows only its
	// start) or over mnemo's hard limit (it cannot be read at all).
	ProblemTooLarge ProblemKind = "too-large"
	// ProblemNoSummary: a file without a file-level "> Summary:" line; it
	// lists with a fallback summary.
	ProblemNoSummary ProblemKind = "no-summary"
	// ProblemNoTitle: a fact file without a "# Title" line; memory_write and
	// memory_patch refuse to produce such a file, so the bot cannot change it.
	ProblemNoTitle ProblemKind = "no-title"
	// ProblemTorn: an episode entry without a "- Summary:" line or a valid
	// "- Date: YYYY-MM-DD" line.
	ProblemTorn ProblemKind = "torn-entry"
	// ProblemLeftover: a temp file of an interrupted write, or an editor swap
	// file, older than LeftoverAge.
	ProblemLeftover ProblemKind = "leftover"
	// ProblemUnreadable: a file that could not be read (permissions, I/O).
	ProblemUnreadable ProblemKind = "unreadable"
	// ProblemBadText: a file with NUL bytes, invalid UTF-8 or control
	// characters: not the Markdown text a person or the model can read
	// (often a binary pasted in, or an editor's wrong encoding).
	ProblemBadText ProblemKind = "bad-text"
	// ProblemLooseMode: a memory file not 0600, or a memory folder (the
	// memory folder itself, a user's, facts/, episodes/) not 0700: other
	// local users may read it. Fix repairs it.
	ProblemLooseMode ProblemKind = "loose-mode"
	// ProblemForeignOwner: an entry owned by someone else than the memory
	// folder's owner (left by an admin command run as root, say): mnemo,
	// running as that owner, may be unable to read or change it. Fix
	// repairs it when run as root.
	ProblemForeignOwner ProblemKind = "foreign-owner"
)

// LeftoverAge is how old a temp file or an editor swap file must be before
// Check reports it: younger ones belong to a write or an edit in progress.
const LeftoverAge = 10 * time.Minute

// Problem is one thing wrong in the memory folder.
type Problem struct {
	User   string // the user folder; "" for an entry of the memory root itself
	Path   string // inside the user folder ("facts/x.md", "notes.txt"); "" for the folder itself
	Kind   ProblemKind
	Detail string // what is wrong and how to fix it
	root   bool   // about the memory folder itself (Path is its path)
}

// Name is the entry the problem is about: "USER/PATH", "USER", or the name
// of an entry of the memory root. Names with spaces, control, invisible or
// non-UTF-8 characters are quoted, so a line stays unambiguous and printing
// it cannot drive a terminal.
func (p Problem) Name() string {
	name := p.User
	if p.Path != "" {
		if name != "" {
			name += "/"
		}
		name += p.Path
	}
	return displayName(name)
}

// String is the line `mnemo memory check` prints: "USER/PATH: detail".
func (p Problem) String() string { return p.Name() + ": " + p.Detail }

// displayName quotes a name that is not plain printable text.
func displayName(name string) string {
	for _, r := range name {
		if r <= ' ' || r == 0x7f || r == utf8.RuneError || isInvisible(r) || (r >= 0x80 && r < 0xa0) {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}

// CheckReport is the result of Check.
type CheckReport struct {
	Users    int       // user folders checked
	Files    int       // memory files (names in the path grammar) checked
	Problems []Problem // in folder order: users by name, facts, then episodes

	ownerUID   int  // the memory folder's owner, whom every entry should have
	ownerKnown bool // the system tells owners
}

// Check looks at one user's memory folder, or at every user folder and the
// memory root itself when user is "", and reports what mnemo would ignore,
// refuse or show badly: names outside the grammar, non-regular files,
// files over the read cap, files without a summary (fact files also without
// a title), torn episode entries, and old temp or swap files. It only reads:
// nothing is changed or removed, so it is safe beside a running server.
// A user with no folder is an error wrapping ErrNotFound.
func (s *Store) Check(user string) (CheckReport, error) {
	var r CheckReport
	r.ownerUID, _, r.ownerKnown = s.DataOwner()
	if user != "" {
		if err := ValidateOwner(user); err != nil {
			return r, err
		}
		li, err := s.base.Lstat(user)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s has no memory folder: %w", user, ErrNotFound)
		}
		if err != nil {
			return r, err
		}
		s.checkUser(&r, user, li.Mode())
		return r, nil
	}
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return r, fmt.Errorf("memory: list users in %s: %w", s.opts.Dir, err)
	}
	if fi, err := os.Lstat(s.opts.Dir); err == nil {
		s.checkAccess(&r, Problem{Path: s.opts.Dir, root: true}, fi)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".") || name == "lost+found":
			// .gitkeep and the like: never a user (names cannot start with '.')
		case ValidateOwner(name) != nil:
			r.Problems = append(r.Problems, Problem{Path: name, Kind: ProblemBadName,
				Detail: "not a user or channel folder name, so mnemo ignores it: user names are 1-64 letters, digits, '.', '_' or '-', not starting with '.'; a channel's is '#' and such a name"})
		default:
			s.checkUser(&r, name, e.Type())
		}
	}
	return r, nil
}

// checkOps are the file operations Check makes: a field of the Store, so
// tests can make them fail as only races or a non-root user would.
type checkOps struct {
	openRoot func(*User, bool) (*os.Root, *folder, error)
	lstat    func(*os.Root, string) (os.FileInfo, error)
	read     func(*os.Root, string) ([]byte, Version, error)
}

// realCheckOps are the operations of a Store opened for use.
func realCheckOps() checkOps {
	return checkOps{openRoot: (*User).openRoot, lstat: (*os.Root).Lstat, read: readRegular}
}

// checkUser checks one user folder whose type is mode.
func (s *Store) checkUser(r *CheckReport, name string, mode fs.FileMode) {
	r.Users++
	if !mode.IsDir() {
		r.Problems = append(r.Problems, Problem{User: name, Kind: ProblemNotRegular,
			Detail: fmt.Sprintf("is a %s, not a folder; mnemo refuses to use it as %s's memory: put a real folder here", entryKind(mode), name)})
		return
	}
	u, _ := s.User(name) // the name is valid
	root, ref, err := s.checkOps.openRoot(u, false)
	defer ref.release()
	if err == nil && root == nil {
		err = errors.New("the folder was removed during the check")
	}
	if err != nil {
		r.Problems = append(r.Problems, Problem{User: name, Kind: ProblemUnreadable, Detail: err.Error()})
		return
	}
	if fi, err := s.checkOps.lstat(root, "."); err == nil {
		s.checkAccess(r, Problem{User: name}, fi)
	}
	names := readDirNames(root, ".")
	slices.Sort(names)
	for _, top := range names {
		if top != factsDir && top != episodesDir {
			r.Problems = append(r.Problems, Problem{User: name, Path: top, Kind: ProblemBadName,
				Detail: "not part of memory, so mnemo ignores it: a user folder holds only facts/ and episodes/"})
			continue
		}
		fi, err := root.Lstat(top)
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("is a %s, not a folder; mnemo does not use it: put a real folder here", entryKind(fi.Mode()))
		}
		if err != nil {
			r.Problems = append(r.Problems, Problem{User: name, Path: top, Kind: ProblemNotRegular, Detail: err.Error()})
			continue
		}
		s.checkAccess(r, Problem{User: name, Path: top}, fi)
	}
	for _, sub := range []string{factsDir, episodesDir} {
		if fi, err := root.Lstat(sub); err != nil || !fi.IsDir() {
			continue // missing, or reported above
		}
		files := readDirNames(root, sub)
		slices.Sort(files)
		for _, f := range files {
			s.checkEntry(r, u, root, sub, f)
		}
	}
}

// checkEntry checks one entry of facts/ or episodes/.
func (s *Store) checkEntry(r *CheckReport, u *User, root *os.Root, sub, base string) {
	p := sub + "/" + base
	add := func(kind ProblemKind, format string, args ...any) {
		r.Problems = append(r.Problems, Problem{User: u.name, Path: p, Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	li, err := s.checkOps.lstat(root, p)
	if err != nil {
		add(ProblemUnreadable, "%v", err) // removed since it was listed
		return
	}
	kind, perr := ParsePath(p)
	if perr != nil {
		s.checkStray(add, li, sub, base)
		return
	}
	r.Files++
	_, nlink := fileIno(li)
	switch {
	case !li.Mode().IsRegular():
		add(ProblemNotRegular, "is a %s, not a plain file; mnemo refuses to read it: replace it with a plain Markdown file", describeMode(li.Mode()))
		return
	case nlink > 1:
		add(ProblemNotRegular, "has %d hard links, so it may also be a file outside this user's folder; mnemo refuses to read it: replace it with a copy of its own (cp %s x.tmp && mv x.tmp %s)", nlink, base, base)
		return
	}
	s.checkAccess(r, Problem{User: u.name, Path: p}, li)
	switch {
	case li.Size() > maxFileSize:
		add(ProblemTooLarge, "is %s, over mnemo's %s limit for a memory file, so it cannot be read at all: split it into smaller files", FormatSize(li.Size()), FormatSize(maxFileSize))
		return
	}
	data, _, err := s.checkOps.read(root, p)
	if err != nil {
		add(ProblemUnreadable, "%v", err)
		return
	}
	s.textProblems(kind, data, add)
}

// badText says what makes data not plain UTF-8 text (NUL bytes, invalid
// UTF-8, control characters other than tab, newline and carriage return),
// with where it first happens, or "".
func badText(data []byte) string {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("has invalid UTF-8 (line %d, byte %d)", line, i+1)
		case r == 0:
			return fmt.Sprintf("has a NUL byte (line %d, byte %d)", line, i+1)
		case r == '\n':
			line++
		case r != '\t' && r != '\r' && unicode.IsControl(r):
			return fmt.Sprintf("has the control character %U (line %d, byte %d)", r, line, i+1)
		}
		i += size
	}
	return ""
}

// entryKind names what an entry is, for messages.
func entryKind(m fs.FileMode) string {
	if m.IsRegular() {
		return "file"
	}
	return describeMode(m)
}

func hasTitle(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		if t, ok := headingText(line, "#"); ok && t != "" {
			return true
		}
	}
	return false
}

// checkStray reports an entry of facts/ or episodes/ outside the grammar:
// old temp and swap files as leftovers (recent ones are a write or an edit
// in progress), everything else as a bad name.
func (s *Store) checkStray(add func(ProblemKind, string, ...any), li fs.FileInfo, sub, base string) {
	age := s.clock.Now().Sub(li.ModTime()).Truncate(time.Second)
	switch {
	case isTempName(base) && li.Mode().IsRegular():
		if age >= LeftoverAge {
			add(ProblemLeftover, "temp file of a write interrupted %s ago; safe to delete (mnemo removes these when it next lists this memory)", age)
		}
	case isSwapName(base):
		if age >= LeftoverAge {
			target := sub + "/" + strings.TrimPrefix(base[:len(base)-len(".swp")], ".")
			add(ProblemLeftover, "editor swap file unchanged for %s; while it exists the bot cannot change %s: if nobody is editing that file, delete it", age, target)
		}
	case li.IsDir():
		add(ProblemBadName, "is a folder inside %s/, so mnemo ignores it: memory has no subfolders", sub)
	default:
		add(ProblemBadName, "not a memory file name, so mnemo ignores it: %s", pathHelp)
	}
}

// isSwapName reports vim's swap file names: ".NAME.swp", ".swo", ... ".swa".
func isSwapName(base string) bool {
	if len(base) < len("..swp")+1 || base[0] != '.' {
		return false
	}
	ext := base[len(base)-4:]
	return ext[:3] == ".sw" && ext[3] >= 'a' && ext[3] <= 'p'
}

// Stat describes one memory file without following a symlink: what
// `mnemo memory forget` shows before deleting. A missing file is an error
// wrapping ErrNotFound.
func (u *User) Stat(p string) (fs.FileInfo, error) {
	if _, err := ParsePath(p); err != nil {
		return nil, err
	}
	root, ref, err := u.openRoot(false)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, notFound(p)
	}
	defer ref.release()
	fi, err := root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(p)
	}
	return fi, err
}
