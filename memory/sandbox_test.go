package memory

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A layout describes files under the memory root, one per line, in the
// spirit of Go's os/root_test.go:
//
//	alice/facts/user.md              a file (content: its own path)
//	alice/facts/x.md -> ../../bob    a symlink with that target
//	alice/facts/p.md |               a FIFO
//	alice/facts/s.md =               a Unix socket
//	alice/facts/h.md => bob/facts/user.md   a hard link to that file
//	alice/notes/                     a folder
func makeLayout(t *testing.T, root string, layout []string) {
	t.Helper()
	for _, line := range layout {
		name, target, _ := strings.Cut(line, " ")
		full := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(full, 0o755)
		case strings.HasPrefix(target, "-> "):
			err = os.Symlink(strings.TrimPrefix(target, "-> "), full)
		case strings.HasPrefix(target, "=> "):
			err = os.Link(filepath.Join(root, strings.TrimPrefix(target, "=> ")), full)
		case target == "|":
			err = syscall.Mkfifo(full, 0o644)
		case target == "=":
			var l net.Listener
			if l, err = net.Listen("unix", full); err == nil {
				t.Cleanup(func() { l.Close() })
			}
		default:
			err = os.WriteFile(full, []byte("# "+name+"\n\n> Summary: "+name+"\n"), 0o644)
		}
		if err != nil {
			t.Fatalf("layout %q: %v", line, err)
		}
	}
}

// snapshot reads every regular file under dir, to prove nothing outside
// the target changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return nil
	})
	return m
}

var bobAndOutside = []string{"bob/facts/user.md", "bob/episodes/2026-02.md", "outside/secret.md"}

func TestSandboxEscapes(t *testing.T) {
	cases := []struct {
		name    string
		layout  []string
		path    string
		wantErr error  // errors.Is target, or nil to match text only
		wantMsg string // substring of the error
		readOK  bool   // reading is allowed (the path stays inside and is a plain file)
	}{
		{name: "dotdot", path: "../bob/facts/user.md", wantErr: ErrBadPath},
		{name: "dotdot inside", path: "facts/../../bob/facts/user.md", wantErr: ErrBadPath},
		{name: "absolute", path: "/etc/passwd", wantErr: ErrBadPath},
		{name: "absolute memory path", path: "/facts/user.md", wantErr: ErrBadPath},
		{name: "trailing slash", layout: []string{"alice/facts/user.md"}, path: "facts/user.md/", wantErr: ErrBadPath},
		{name: "NUL", path: "facts/user.md\x00.md", wantErr: ErrBadPath},
		{name: "over-long name", path: "facts/" + strings.Repeat("a", 65) + ".md", wantErr: ErrBadPath},
		{name: "backslash", path: `facts\..\..\bob\facts\user.md`, wantErr: ErrBadPath},
		{name: "url-encoded dots", path: "facts/%2e%2e%2f%2e%2e%2fbob.md", wantErr: ErrBadPath},
		{name: "fullwidth dots", path: "facts/\uff0e\uff0e.md", wantErr: ErrBadPath},
		{name: "one-dot leader", path: "facts/\u2024\u2024.md", wantErr: ErrBadPath},
		{name: "symlink last part to other user", layout: []string{"alice/facts/user.md -> ../../bob/facts/user.md"}, path: "facts/user.md", wantErr: ErrNotRegular, wantMsg: "symlink"},
		{name: "symlink last part inside", layout: []string{"alice/facts/real.md", "alice/facts/user.md -> real.md"}, path: "facts/user.md", wantErr: ErrNotRegular, wantMsg: "symlink"},
		{name: "symlink last part absolute", layout: []string{"alice/facts/user.md -> /etc/passwd"}, path: "facts/user.md", wantErr: ErrNotRegular},
		{name: "dangling symlink", layout: []string{"alice/facts/user.md -> nowhere.md"}, path: "facts/user.md", wantErr: ErrNotRegular},
		{name: "folder symlink out", layout: []string{"alice/facts -> ../bob/facts"}, path: "facts/user.md", wantMsg: "escapes"},
		{name: "folder symlink absolute", layout: []string{"alice/facts -> /tmp"}, path: "facts/user.md", wantMsg: "escapes"},
		{name: "folder symlink chained out", layout: []string{"alice/a -> b", "alice/b -> ../outside", "alice/facts -> a"}, path: "facts/secret.md", wantMsg: "escapes"},
		{name: "folder symlink chained in", layout: []string{"alice/store/user.md", "alice/a -> store", "alice/facts -> a"}, path: "facts/user.md", readOK: true},
		{name: "FIFO", layout: []string{"alice/facts/user.md |"}, path: "facts/user.md", wantErr: ErrNotRegular, wantMsg: "FIFO"},
		{name: "socket", layout: []string{"alice/facts/user.md ="}, path: "facts/user.md", wantErr: ErrNotRegular, wantMsg: "socket"},
		{name: "folder", layout: []string{"alice/facts/user.md/"}, path: "facts/user.md", wantErr: ErrNotRegular, wantMsg: "folder"},
		{name: "hard link to other user", layout: []string{"alice/facts/user.md => bob/facts/user.md"}, path: "facts/user.md", wantErr: ErrNotRegular, wantMsg: "hard links"},
		{name: "hard link to outside", layout: []string{"alice/episodes/2026-02.md => outside/secret.md"}, path: "episodes/2026-02.md", wantErr: ErrNotRegular, wantMsg: "hard links"},
		{name: "user folder is a symlink", layout: []string{"alice -> bob"}, path: "facts/user.md", wantMsg: "is a symlink, not a folder"},
		{name: "user folder is a file", layout: []string{"alice"}, path: "facts/user.md", wantMsg: "not a folder"},
		{name: "quarter 5", path: "episodes/2026-Q5.md", wantErr: ErrBadPath},
		{name: "quarter 0", path: "episodes/2026-Q0.md", wantErr: ErrBadPath},
		{name: "five-digit year", path: "episodes/02026.md", wantErr: ErrBadPath},
		{name: "lower-case quarter", path: "episodes/2026-q1.md", wantErr: ErrBadPath},
		{name: "shared roll-up", path: "episodes/2026-Q1.shared.md", wantErr: ErrBadPath},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			dir := filepath.Join(top, "memory")
			makeLayout(t, dir, bobAndOutside)
			makeLayout(t, top, []string{"outside/secret.md"})
			makeLayout(t, dir, c.layout)
			s := newStore(t, func(o *Options) { o.Dir = dir; o.EditWait = 1 })
			u := mustUser(t, s, "alice")
			before := snapshot(t, top)

			check := func(op string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s %q: no error", op, c.path)
				}
				if c.wantErr != nil && !errors.Is(err, c.wantErr) {
					t.Errorf("%s %q: error %v; want %v", op, c.path, err, c.wantErr)
				}
				if !strings.Contains(err.Error(), c.wantMsg) {
					t.Errorf("%s %q: error %q does not mention %q", op, c.path, err, c.wantMsg)
				}
			}
			_, rerr := u.Read(c.path)
			if c.readOK {
				if rerr != nil {
					t.Fatalf("Read %q: %v", c.path, rerr)
				}
			} else {
				check("Read", rerr)
			}
			sess := u.NewSession()
			_, _ = sess.Read(c.path)
			if !c.readOK {
				if !strings.HasPrefix(c.path, "episodes/") {
					check("Write", sess.Write(c.path, userFact))
				}
				_, err := sess.Patch(c.path, []Patch{{OldText: "Summary", NewText: "pwned"}})
				check("Patch", err)
			}
			if strings.HasPrefix(c.path, "episodes/") {
				check("Append", sess.Append(c.path, "## X\n- Summary: pwned\n- Date: 2026-02-01\n", ""))
			}
			if files, err := u.List(); err == nil {
				for _, f := range files {
					if f.Path == c.path && !c.readOK {
						t.Errorf("List shows refused file %s", f.Path)
					}
				}
			}
			// Removing a special file removes the name only (an admin's
			// clean-up); anything else must be refused.
			if err := u.Remove(c.path); !c.readOK && !errors.Is(c.wantErr, ErrNotRegular) {
				check("Remove", err)
			}
			after := snapshot(t, top)
			for p, v := range before {
				if _, still := after[p]; strings.Contains(p, "/alice/") && (c.readOK || !still) {
					continue // alice's own file, or the removed name itself
				}
				if after[p] != v {
					t.Errorf("%s changed: %q -> %q", p, v, after[p])
				}
			}
		})
	}
}

// A symlinked file is refused even for reading, so one user's tools can
// never read another's memory through it, and listing never hangs on a FIFO.
func TestSandboxListSkipsSpecialFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	makeLayout(t, dir, append(bobAndOutside,
		"alice/facts/ok.md", "alice/facts/fifo.md |", "alice/facts/link.md -> ../../bob/facts/user.md",
		"alice/facts/hard.md => bob/facts/user.md", "alice/facts/dir.md/", "alice/facts/notes.txt", "alice/facts/.ok.md.swp",
		"alice/episodes/2026-13.md", "alice/episodes/2026-01.md"))
	for _, watch := range []bool{true, false} {
		s := newStore(t, func(o *Options) { o.Dir = dir; o.Watch = watch })
		if got, want := listPaths(t, mustUser(t, s, "alice")), "facts/ok.md=alice/facts/ok.md;episodes/2026-01.md=alice/episodes/2026-01.md"; got != want {
			t.Errorf("watch=%v: List = %q; want %q", watch, got, want)
		}
	}
}

func TestUsersListing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	makeLayout(t, dir, []string{"alice/facts/a.md", "bob/", ".hidden/", "bad name/", "file.md", "link -> alice", ".gitkeep"})
	s := newStore(t, func(o *Options) { o.Dir = dir })
	users, err := s.Users()
	if err != nil || strings.Join(users, ",") != "alice,bob" {
		t.Errorf("Users = %v, %v", users, err)
	}
	if _, err := s.User("../alice"); !errors.Is(err, ErrBadUser) {
		t.Errorf("User(../alice) = %v", err)
	}
	if s.Dir() != dir {
		t.Errorf("Dir = %q", s.Dir())
	}
}
