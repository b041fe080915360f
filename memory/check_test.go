package memory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
)

var checkNow = time.Date(2026, 2, 15, 12, 0, 0, 0, time.UTC)

const goodEpisodes = "# 2026-01 Episodes\n\n> Summary: logger fix\n\n## Logger fix\n- Summary: logger fix\n- Date: 2026-01-05\n\nDetails.\n"

// layout helpers: each works on the memory root.
func put(rel, content string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) { writeFile(t, filepath.Join(root, rel), content) }
}

// layoutStep makes a layout step of an operation on the root that may fail.
func layoutStep(op func(root string) error) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		t.Helper()
		if err := op(root); err != nil {
			t.Fatal(err)
		}
	}
}

func mkdir(rel string) func(t *testing.T, root string) {
	return layoutStep(func(root string) error { return os.MkdirAll(filepath.Join(root, rel), 0o700) })
}

func symlink(target, rel string) func(t *testing.T, root string) {
	return layoutStep(func(root string) error { return os.Symlink(target, filepath.Join(root, rel)) })
}

func fifo(rel string) func(t *testing.T, root string) {
	return layoutStep(func(root string) error { return syscall.Mkfifo(filepath.Join(root, rel), 0o600) })
}

func hardlink(from, rel string) func(t *testing.T, root string) {
	return layoutStep(func(root string) error { return os.Link(filepath.Join(root, from), filepath.Join(root, rel)) })
}

// aged sets a file's modification time to checkNow minus d.
func aged(rel string, d time.Duration) func(t *testing.T, root string) {
	at := checkNow.Add(-d)
	return layoutStep(func(root string) error { return os.Chtimes(filepath.Join(root, rel), at, at) })
}

func sized(rel string, n int64) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		// Text all the way (a truncate would pad with NUL bytes).
		writeFile(t, filepath.Join(root, rel), userFact+strings.Repeat("x", int(n)-len(userFact)))
	}
}

func checkStore(t *testing.T) (*Store, string) {
	t.Helper()
	s := newStore(t, func(o *Options) {
		o.Watch, o.Clean = false, false
		o.ReadCap = 1024
		o.Clock = clocktest.New(checkNow)
	})
	return s, s.Dir()
}

func TestCheck(t *testing.T) {
	type step = func(*testing.T, string)
	cases := []struct {
		name         string
		layout       []step
		user         string
		want         []string // "USER/PATH: kind: start of detail"
		users, files int
	}{
		{name: "empty root"},
		{
			name:   "clean",
			layout: []step{put("alice/facts/user.md", userFact), put("alice/episodes/2026-01.md", goodEpisodes), put(".gitkeep", ""), mkdir("lost+found"), mkdir(".git")},
			users:  1, files: 2,
		},
		{
			name:   "root entries",
			layout: []step{mkdir("bad name"), mkdir("alice"), symlink("alice", "bob"), put("carol", "x"), fifo("dave")},
			want: []string{
				`"bad name": bad-name: not a user or channel folder name`,
				"bob: not-regular: is a symlink, not a folder",
				"carol: not-regular: is a file, not a folder; mnemo refuses to use it as carol's memory",
				"dave: not-regular: is a FIFO, not a folder",
			},
			users: 4,
		},
		{
			name:   "user folder entries",
			layout: []step{put("alice/notes.txt", "x"), put("alice/.DS_Store", "x"), mkdir("alice/other"), symlink("/tmp", "alice/facts"), put("alice/episodes", "x")},
			want: []string{
				"alice/.DS_Store: bad-name: not part of memory",
				"alice/episodes: not-regular: is a file, not a folder",
				"alice/facts: not-regular: is a symlink, not a folder",
				"alice/notes.txt: bad-name: not part of memory",
				"alice/other: bad-name: not part of memory",
			},
			users: 1,
		},
		{
			name: "non-regular files",
			layout: []step{
				put("alice/facts/a.md", userFact), hardlink("alice/facts/a.md", "alice/facts/b.md"),
				symlink("/etc/passwd", "alice/facts/pw.md"), symlink("a.md", "alice/facts/same.md"),
				fifo("alice/facts/pipe.md"), mkdir("alice/episodes/2026-01.md"),
			},
			want: []string{
				"alice/facts/a.md: not-regular: has 2 hard links",
				"alice/facts/b.md: not-regular: has 2 hard links",
				"alice/facts/pipe.md: not-regular: is a FIFO, not a plain file",
				"alice/facts/pw.md: not-regular: is a symlink, not a plain file",
				"alice/facts/same.md: not-regular: is a symlink, not a plain file",
				"alice/episodes/2026-01.md: not-regular: is a folder, not a plain file",
			},
			users: 1, files: 6,
		},
		{
			name: "bad names and leftovers",
			layout: []step{
				put("alice/facts/user.md", userFact),
				put("alice/facts/notes.txt", "x"), put("alice/facts/user.md~", "x"), put("alice/facts/a b.md", "x"),
				put("alice/episodes/2026-13.md", "x"), put("alice/episodes/jan.md", "x"), mkdir("alice/facts/sub"),
				put("alice/facts/.user.md.swp", "x"), aged("alice/facts/.user.md.swp", time.Hour),
				put("alice/facts/.new.md.swo", "x"), aged("alice/facts/.new.md.swo", time.Minute),
				put("alice/facts/.user.md"+tempMarker+"0123", "x"), aged("alice/facts/.user.md"+tempMarker+"0123", 2*time.Hour),
				put("alice/episodes/.2026-01.md"+tempMarker+"4567", "x"), aged("alice/episodes/.2026-01.md"+tempMarker+"4567", time.Second),
				put("alice/facts/\x1b[31mred.md", "x"),
			},
			want: []string{
				`"alice/facts/\x1b[31mred.md": bad-name: not a memory file name`,
				"alice/facts/.user.md.mnemo-tmp-0123: leftover: temp file of a write interrupted 2h0m0s ago",
				"alice/facts/.user.md.swp: leftover: editor swap file unchanged for 1h0m0s; while it exists the bot cannot change facts/user.md",
				`"alice/facts/a b.md": bad-name: not a memory file name`,
				`alice/facts/notes.txt: bad-name: not a memory file name`,
				`alice/facts/sub: bad-name: is a folder inside facts/`,
				`alice/facts/user.md~: bad-name: not a memory file name`,
				`alice/episodes/2026-13.md: bad-name`,
				`alice/episodes/jan.md: bad-name`,
			},
			users: 1, files: 1,
		},
		{
			name: "content",
			layout: []step{
				put("alice/facts/nosum.md", "# Pets\n\n- a cat\n"),
				put("alice/facts/notitle.md", "> Summary: pets\n\n- a cat\n"),
				put("alice/facts/bare.md", "just a line\n"),
				put("alice/facts/empty.md", ""),
				put("alice/facts/late.md", "# Pets\n\n## Cats\n\n> Summary: too late\n"),
				put("alice/facts/deep.md", "> Summary: ok\n\n## Pets\n\n# Title down here\n"),
				put("alice/episodes/2026-01.md", "# 2026-01 Episodes\n\n> Summary: x\n\n## No summary\n- Date: 2026-01-02\n\n## Bad date\n- Summary: s\n- Date: 2026-1-2\n\n## Good\n- Summary: s\n- Date: 2026-01-03\n"),
				put("alice/episodes/2026-02.md", "## Headless\n- Summary: fixed a bug\n- Date: 2026-02-01\n"),
			},
			want: []string{
				`alice/facts/bare.md: no-title: has no "# Title" line`,
				`alice/facts/bare.md: no-summary: has no "> Summary: ..." line under its title; the index shows "just a line" instead`,
				`alice/facts/empty.md: no-title`,
				`alice/facts/empty.md: no-summary: has no "> Summary: ..." line under its title; the index shows "(empty)" instead`,
				`alice/facts/late.md: no-summary: has no "> Summary: ..." line under its title; the index shows "Pets" instead`,
				`alice/facts/nosum.md: no-summary: has no "> Summary: ..." line under its title; the index shows "Pets" instead`,
				`alice/facts/notitle.md: no-title: has no "# Title" line; the bot cannot rewrite or patch it`,
				`alice/episodes/2026-01.md: torn-entry: line 5: entry "No summary" has no "- Summary:" line: add it, or remove the entry`,
				`alice/episodes/2026-01.md: torn-entry: line 8: entry "Bad date" has no "- Date: YYYY-MM-DD" line`,
				`alice/episodes/2026-02.md: no-summary: has no "> Summary: ..." line under its title; the index shows "fixed a bug" instead`,
			},
			users: 1, files: 8,
		},
		{
			name: "not plain text",
			layout: []step{
				put("alice/facts/nul.md", "# A\n\n> Summary: a\n\nx\x00y\n"),
				put("alice/facts/latin1.md", "# A\n\n> Summary: caf\xe9\n"),
				put("alice/facts/esc.md", "# A\n\n> Summary: a\n\n\x1b[31mred\n"),
				put("alice/facts/c1.md", "# A\n\n> Summary: a \u0085\n"),
				put("alice/facts/ok.md", "# A\r\n\r\n> Summary: a\tb é ✓\r\n"),
			},
			want: []string{
				"alice/facts/c1.md: bad-text: has the control character U+0085 (line 3, byte 19); the bot reads memory as UTF-8 Markdown text",
				"alice/facts/esc.md: bad-text: has the control character U+001B (line 5, byte 20)",
				"alice/facts/latin1.md: bad-text: has invalid UTF-8 (line 3, byte 20)",
				"alice/facts/nul.md: bad-text: has a NUL byte (line 5, byte 21)",
			},
			users: 1, files: 5,
		},
		{
			name:   "sizes",
			layout: []step{sized("alice/facts/big.md", 2000), sized("alice/facts/huge.md", maxFileSize+1), sized("alice/facts/edge.md", 1024)},
			want: []string{
				"alice/facts/big.md: too-large: is 2KB, over the 1KB read cap (memory.readCap): memory_read shows only its start",
				"alice/facts/huge.md: too-large: is 8MB, over mnemo's 8MB limit for a memory file, so it cannot be read at all",
			},
			users: 1, files: 3,
		},
		{
			name:   "one user",
			layout: []step{put("alice/facts/user.md", "no title"), put("bob/facts/user.md", "no title"), mkdir("bad name")},
			user:   "bob",
			want:   []string{"bob/facts/user.md: no-title", "bob/facts/user.md: no-summary"},
			users:  1, files: 1,
		},
		{
			name:   "one user that is a symlink",
			layout: []step{mkdir("alice"), symlink("alice", "bob")},
			user:   "bob",
			want:   []string{"bob: not-regular: is a symlink, not a folder"},
			users:  1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, root := checkStore(t)
			for _, step := range tc.layout {
				step(t, root)
			}
			rep, err := s.Check(tc.user)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Name()+": "+string(p.Kind)+": "+p.Detail)
				if p.String() != p.Name()+": "+p.Detail {
					t.Errorf("String() = %q", p.String())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], tc.want[i])
				}
			}
			if rep.Users != tc.users || rep.Files != tc.files {
				t.Errorf("checked %d users, %d files; want %d, %d", rep.Users, rep.Files, tc.users, tc.files)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	s, root := checkStore(t)
	if _, err := s.Check("nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Check(nobody) = %v, want ErrNotFound", err)
	}
	if _, err := s.Check("../x"); !errors.Is(err, ErrBadUser) {
		t.Errorf("Check(../x) = %v, want ErrBadUser", err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(""); err == nil || !strings.Contains(err.Error(), "list users") {
		t.Errorf("Check on a removed root = %v", err)
	}
}

func TestCheckUnreadable(t *testing.T) {
	s, root := checkStore(t)
	writeFile(t, filepath.Join(root, "alice/facts/user.md"), userFact)
	t.Run("folder", func(t *testing.T) {
		defer func() { s.checkOps = realCheckOps() }()
		for _, tc := range []struct {
			err  error
			want string
		}{
			{errors.New("boom"), "alice: unreadable: boom"},
			{nil, "alice: unreadable: the folder was removed during the check"},
		} {
			s.checkOps.openRoot = func(*User, bool) (*os.Root, *folder, error) { return nil, nil, tc.err }
			rep, err := s.Check("alice")
			if err != nil || len(rep.Problems) != 1 {
				t.Fatalf("Check = %+v, %v", rep, err)
			}
			if p := rep.Problems[0]; p.Name()+": "+string(p.Kind)+": "+p.Detail != tc.want {
				t.Errorf("got %s, want %s", p, tc.want)
			}
		}
	})
	t.Run("entry", func(t *testing.T) {
		defer func() { s.checkOps = realCheckOps() }()
		s.checkOps.lstat = func(*os.Root, string) (os.FileInfo, error) { return nil, errors.New("gone") }
		rep, err := s.Check("alice")
		if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemUnreadable || rep.Problems[0].String() != "alice/facts/user.md: gone" {
			t.Fatalf("Check = %+v, %v", rep, err)
		}
	})
	t.Run("file", func(t *testing.T) {
		defer func() { s.checkOps = realCheckOps() }()
		s.checkOps.read = func(*os.Root, string) ([]byte, Version, error) { return nil, Version{}, errors.New("I/O error") }
		rep, err := s.Check("alice")
		if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemUnreadable || rep.Problems[0].Detail != "I/O error" {
			t.Fatalf("Check = %+v, %v", rep, err)
		}
	})
}

func TestCheckProblemName(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{User: "alice", Path: "facts/x.md"}, "alice/facts/x.md"},
		{Problem{User: "alice"}, "alice"},
		{Problem{Path: "stray"}, "stray"},
		{Problem{}, `""`},
		{Problem{User: "alice", Path: "facts/caf\u00e9.md"}, "alice/facts/caf\u00e9.md"},
		{Problem{User: "alice", Path: "facts/a\u202eb.md"}, `"alice/facts/a\u202eb.md"`},
		{Problem{User: "alice", Path: "facts/\xff.md"}, `"alice/facts/\xff.md"`},
		{Problem{User: "alice", Path: "facts/\u0085.md"}, `"alice/facts/\u0085.md"`},
		{Problem{User: "alice", Path: "a\x7f"}, `"alice/a\x7f"`},
		{Problem{User: "alice", Path: "a b"}, `"alice/a b"`},
	} {
		if got := tc.p.Name(); got != tc.want {
			t.Errorf("Name(%+v) = %s, want %s", tc.p, got, tc.want)
		}
	}
}

func TestCheckSwapName(t *testing.T) {
	for name, want := range map[string]bool{
		".user.md.swp": true, ".user.md.swo": true, ".user.md.swa": true, ".x.swp": true,
		".user.md.swq": false, "user.md.swp": false, "..swp": false, ".swp": false, ".user.md.sw": false, ".user.md.txt": false,
	} {
		if got := isSwapName(name); got != want {
			t.Errorf("isSwapName(%q) = %v", name, got)
		}
	}
}

func TestCheckUserStat(t *testing.T) {
	s, root := checkStore(t)
	writeFile(t, filepath.Join(root, "alice/facts/user.md"), userFact)
	alice, bob, carol := mustUser(t, s, "alice"), mustUser(t, s, "bob"), mustUser(t, s, "carol")
	if fi, err := alice.Stat("facts/user.md"); err != nil || fi.Size() != int64(len(userFact)) {
		t.Errorf("Stat = %v, %v", fi, err)
	}
	if _, err := alice.Stat("facts/none.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat(missing) = %v", err)
	}
	if _, err := alice.Stat("../bob/facts/user.md"); !errors.Is(err, ErrBadPath) {
		t.Errorf("Stat(bad path) = %v", err)
	}
	if _, err := bob.Stat("facts/user.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat(no folder) = %v", err)
	}
	if err := os.Symlink("alice", filepath.Join(root, "carol")); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.Stat("facts/user.md"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Stat(symlinked folder) = %v", err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "alice/facts/pw.md")); err != nil {
		t.Fatal(err)
	}
	if fi, err := alice.Stat("facts/pw.md"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Stat(symlink) = %v, %v; want the link itself", fi, err)
	}
}

// TestCheckEdges pins the boundaries of check: a leftover exactly
// LeftoverAge old is reported; C1 controls in names are quoted, a
// no-break space is not.
func TestCheckEdges(t *testing.T) {
	s, root := checkStore(t)
	for _, step := range []func(*testing.T, string){
		put("alice/facts/user.md", userFact),
		put("alice/facts/.user.md.swp", "x"), aged("alice/facts/.user.md.swp", LeftoverAge),
		put("alice/facts/.user.md"+tempMarker+"0123", "x"), aged("alice/facts/.user.md"+tempMarker+"0123", LeftoverAge),
	} {
		step(t, root)
	}
	rep, err := s.Check("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.String())
	}
	if len(got) != 2 || !strings.Contains(got[0], "interrupted 10m0s ago") || !strings.Contains(got[1], "unchanged for 10m0s") {
		t.Fatalf("leftovers exactly LeftoverAge old: %q", got)
	}
	if got := displayName("a\u0080b"); got != `"a\u0080b"` {
		t.Errorf("displayName with a C1 control = %s", got)
	}
	if got := displayName("a\u00a0b"); got != "a\u00a0b" {
		t.Errorf("displayName with a no-break space = %s", got)
	}
}
