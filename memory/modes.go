package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"strconv"
	"syscall"
)

// tightenDir makes folder d of root 0700 when it lets others in (a folder
// made by hand at 0755, say): mnemo writes into it what only its own user
// may read. A folder mnemo may not change (someone else's) is left for
// memory check to report; the write goes on.
func tightenDir(root *os.Root, d string) {
	fi, err := root.Lstat(d)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&^dirPerm == 0 {
		return // missing or not a folder: the write that follows says so
	}
	_ = root.Chmod(d, dirPerm)
}

// Owner says who owns a file: its uid and gid, ok false where the system
// does not tell (Options.Owner).
type Owner func(fi fs.FileInfo) (uid, gid int, ok bool)

// StatOwner is Owner from the file's stat (the default).
func StatOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	if st, isStat := fi.Sys().(*syscall.Stat_t); isStat {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}

// UserName is the login name of uid ("uid 1001" when it has none).
func UserName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// DataOwner is the uid and gid of the memory folder's owner, whose files
// every memory file and folder should be; ok false where the system does
// not tell.
func (s *Store) DataOwner() (uid, gid int, ok bool) {
	fi, err := os.Stat(s.opts.Dir)
	if err != nil {
		return 0, 0, false
	}
	return s.owner(fi)
}

// checkAccess adds a problem for an entry (the memory folder, a user
// folder, facts/ or episodes/, a memory file) that lets other local users
// in, or that someone else than the memory folder's owner owns.
func (s *Store) checkAccess(r *CheckReport, pr Problem, fi fs.FileInfo) {
	want, what := filePerm, "memory files 0600"
	if fi.IsDir() {
		want, what = dirPerm, "memory folders 0700"
	}
	if perm := fi.Mode().Perm(); perm&^want != 0 {
		pr.Kind = ProblemLooseMode
		pr.Detail = fmt.Sprintf("is mode %04o, so other local users may read it; mnemo keeps %s: run mnemo memory check --fix (or chmod %o it)", perm, what, want)
		r.Problems = append(r.Problems, pr)
	}
	uid, _, ok := s.owner(fi)
	if !ok || !r.ownerKnown || uid == r.ownerUID {
		return
	}
	who := UserName(r.ownerUID)
	pr.Kind = ProblemForeignOwner
	pr.Detail = fmt.Sprintf("belongs to %s, not to %s, who owns the memory folder: mnemo running as %s may be unable to read or change it: run sudo mnemo memory check --fix (or sudo chown %s it)",
		UserName(uid), who, who, who)
	r.Problems = append(r.Problems, pr)
}

// Fixed is one repair Fix made, or could not make (Err).
type Fixed struct {
	Problem Problem
	Err     error
}

// Fix repairs the loose modes and foreign owners of a report from Check:
// a folder becomes 0700, a file 0600, and, with chown (for root only: no
// one else may give a file away), an entry someone else owns goes back to
// the memory folder's owner. Every other problem is left for a person.
// Entries are reached through the memory folder's root, never following a
// link at the last step for a change of owner.
func (s *Store) Fix(rep CheckReport, chown bool) []Fixed {
	var out []Fixed
	uid, gid, known := s.DataOwner()
	for _, p := range rep.Problems {
		name := path.Join(p.User, p.Path)
		if p.root {
			name = "."
		}
		var err error
		switch p.Kind {
		case ProblemLooseMode:
			err = s.fixMode(name)
		case ProblemForeignOwner:
			switch {
			case !chown:
				err = errors.New("only root can give a file back to its owner: run sudo mnemo memory check --fix")
			case !known:
				err = errors.New("the memory folder's owner is unknown")
			default:
				err = s.base.Lchown(name, uid, gid)
			}
		default:
			continue
		}
		out = append(out, Fixed{Problem: p, Err: err})
	}
	return out
}

// fixMode makes the entry name of the memory folder 0700 (a folder) or
// 0600 (a file).
func (s *Store) fixMode(name string) error {
	fi, err := s.base.Lstat(name)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return s.base.Chmod(name, dirPerm)
	case fi.Mode().IsRegular():
		return s.base.Chmod(name, filePerm)
	}
	return fmt.Errorf("is a %s now; left as it is", describeMode(fi.Mode()))
}
