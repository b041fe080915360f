package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

func TestWriteReadListRoundTrip(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	if files, err := u.List(); err != nil || len(files) != 0 {
		t.Fatalf("new user List = %v, %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "alice")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("asking about a new user created its folder: %v", err)
	}
	sess := u.NewSession()
	if err := sess.Write("facts/user.md", userFact); err != nil {
		t.Fatal(err)
	}
	if err := sess.Write("facts/project.md", "# Project\n\n> Summary: tech stack\n\n- Go\n"); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{
		"## Logger fix\n- Summary: logger fix\n- Date: 2026-01-24\n",
		"## Short ID\n- Summary: short ID\n- Date: 2026-02-24\n",
	} {
		month := e[strings.Index(e, "Date: ")+6:][:7]
		if err := sess.Append("episodes/"+month+".md", e, ""); err != nil {
			t.Fatal(err)
		}
	}
	got := listPaths(t, u)
	want := "facts/project.md=tech stack;facts/user.md=user name, language;episodes/2026-02.md=short ID;episodes/2026-01.md=logger fix"
	if got != want {
		t.Errorf("List = %q\nwant %q", got, want)
	}
	if text := readFile(t, filepath.Join(s.Dir(), "alice/facts/user.md")); text != userFact {
		t.Errorf("on disk = %q", text)
	}
	fi, _ := os.Stat(filepath.Join(s.Dir(), "alice/facts/user.md"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new memory file mode = %v; want 0600 (personal data)", fi.Mode().Perm())
	}
	files, _ := u.List()
	if files[1].Size != int64(len(userFact)) {
		t.Errorf("size = %d", files[1].Size)
	}
}

func TestWriteRules(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 200 })
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	cases := []struct {
		path, content string
		want          error
		msg           string
	}{
		{"episodes/2026-02.md", userFact, ErrBadPath, "only fact files"},
		{"facts/x.md", "- no title\n", ErrInvalid, "# Title"},
		{"facts/x.md", "# T\n- no summary\n", ErrInvalid, "> Summary:"},
		{"facts/x.md", "# T\n> Summary: s\n" + strings.Repeat("x", 200), ErrTooLarge, "the limit is 200"},
		{"facts/../x.md", userFact, ErrBadPath, "facts/<name>.md"},
	}
	for _, c := range cases {
		err := sess.Write(c.path, c.content)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Write(%q) = %v; want %v mentioning %q", c.path, err, c.want, c.msg)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "alice")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("refused writes left a folder behind")
	}
}

func TestWriteNeedsReadAndDetectsHumanEdit(t *testing.T) {
	_, u, path := aliceWithUserFact(t)

	blind := u.NewSession()
	if err := blind.Write("facts/user.md", userFact+"- x\n"); !errors.Is(err, ErrNotRead) || !strings.Contains(err.Error(), "not read first") {
		t.Fatalf("blind write = %v; want ErrNotRead", err)
	}

	sess := u.NewSession()
	if _, err := sess.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	// A person edits the file after the session read it.
	human := strings.Replace(userFact, "Zhang San", "Zhang Wei", 1)
	writeFile(t, path, human)
	err := sess.Write("facts/user.md", userFact+"- Role: dev\n")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "after it was read") {
		t.Fatalf("write over a human edit = %v; want ErrConflict", err)
	}
	if got := readFile(t, path); got != human {
		t.Fatalf("human edit lost: %q", got)
	}
	// After reading again the write goes through, and a second write based
	// on the session's own write needs no new read.
	if _, err := sess.Read("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if err := sess.Write("facts/user.md", human+"- Role: dev\n"); err != nil {
		t.Fatal(err)
	}
	if err := sess.Write("facts/user.md", human+"- Role: lead\n"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != human+"- Role: lead\n" {
		t.Fatalf("file = %q", got)
	}
	// Same content saved again by an editor (new inode) is not a conflict.
	os.Remove(path)
	writeFile(t, path, human+"- Role: lead\n")
	if err := sess.Write("facts/user.md", human+"- Role: cto\n"); err != nil {
		t.Fatalf("identical re-save treated as conflict: %v", err)
	}
	// Deleted by a person after the read: refused, not resurrected.
	os.Remove(path)
	if err := sess.Write("facts/user.md", userFact); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "was deleted") {
		t.Fatalf("write over a deletion = %v", err)
	}
	// Created by a person after the session saw it absent.
	s2 := u.NewSession()
	if _, err := s2.Read("facts/new.md"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read missing = %v", err)
	}
	if err := s2.Write("facts/new.md", userFact); err != nil {
		t.Fatalf("create: %v", err)
	}
}

func TestPatch(t *testing.T) {
	_, u, path := aliceWithUserFact(t)
	sess := u.NewSession()
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "Zhang San", NewText: "Li Si"}}); !errors.Is(err, ErrNotRead) {
		t.Fatalf("patch before read = %v", err)
	}
	sess.Read("facts/user.md")
	bad := []struct {
		patches []Patch
		msg     string
	}{
		{nil, "no patches given"},
		{[]Patch{{OldText: "", NewText: "x"}}, "patch 1 of 1: oldText is empty"},
		{[]Patch{{OldText: "Zhang San", NewText: "Li Si"}, {OldText: "nowhere", NewText: "x"}}, "patch 2 of 2: oldText not found; nothing was applied"},
		{[]Patch{{OldText: "- ", NewText: "* "}}, "patch 1 of 1: oldText found 2 times"},
		{[]Patch{{OldText: "> Summary: user name, language", NewText: ""}}, "after patching"},
	}
	for _, b := range bad {
		n, err := sess.Patch("facts/user.md", b.patches)
		if err == nil || n != 0 || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("Patch(%v) = %d, %v; want %q", b.patches, n, err, b.msg)
		}
		if got := readFile(t, path); got != userFact {
			t.Fatalf("a failed patch changed the file: %q", got)
		}
	}
	n, err := sess.Patch("facts/user.md", []Patch{{OldText: "Zhang San", NewText: "Li Si"}, {OldText: "Chinese", NewText: "English"}})
	if err != nil || n != 2 {
		t.Fatalf("Patch = %d, %v", n, err)
	}
	want := strings.NewReplacer("Zhang San", "Li Si", "Chinese", "English").Replace(userFact)
	if got := readFile(t, path); got != want {
		t.Fatalf("patched = %q", got)
	}
	// A person adds a line; the session's next patch still applies to the
	// new text because its oldText matches once there.
	writeFile(t, path, want+"- Pet: cat\n")
	if n, err := sess.Patch("facts/user.md", []Patch{{OldText: "Li Si", NewText: "Wang Wu"}}); err != nil || n != 1 {
		t.Fatalf("re-applied patch = %d, %v", n, err)
	}
	if got := readFile(t, path); !strings.Contains(got, "Wang Wu") || !strings.Contains(got, "- Pet: cat") {
		t.Fatalf("human line lost or patch missing: %q", got)
	}
	// A person changes exactly the text the patch targets: conflict.
	writeFile(t, path, strings.Replace(readFile(t, path), "Wang Wu", "Zhao Liu", 1))
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "Wang Wu", NewText: "X"}}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "oldText not found") {
		t.Fatalf("conflicting patch = %v", err)
	}
	if !strings.Contains(readFile(t, path), "Zhao Liu") {
		t.Fatal("human edit lost")
	}
	// Patching a file that is gone.
	if _, err := sess.Patch("facts/none.md", []Patch{{OldText: "a", NewText: "b"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("patch missing = %v", err)
	}
	sess.Read("facts/user.md")
	os.Remove(path)
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "a", NewText: "b"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("patch deleted = %v", err)
	}
}

func TestPatchSizeCapAndEpisodes(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 120 })
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	if err := sess.Append("episodes/2026-02.md", "## A\n- Summary: a\n- Date: 2026-02-01\n- x\n", ""); err != nil {
		t.Fatal(err)
	}
	if n, err := sess.Patch("episodes/2026-02.md", []Patch{{OldText: "- x", NewText: "- y"}}); err != nil || n != 1 {
		t.Fatalf("episode patch = %d %v", n, err)
	}
	if _, err := sess.Patch("episodes/2026-02.md", []Patch{{OldText: "- y", NewText: strings.Repeat("y", 200)}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized patch = %v", err)
	}
}

func TestAppend(t *testing.T) {
	s := newStore(t, func(o *Options) { o.WriteCap = 300 })
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	e1 := "## Logger stdout leak fix\n- Summary: pino leak → custom transport\n- Date: 2026-02-24\n- Lesson: no .ts in workers\n"
	if err := sess.Append("episodes/2026-02.md", e1, ""); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), "alice/episodes/2026-02.md")
	want := "# 2026-02 Episodes\n\n> Summary: pino leak → custom transport\n\n" + e1
	if got := readFile(t, path); got != want {
		t.Fatalf("new episode file:\n%q\nwant\n%q", got, want)
	}
	if err := sess.Append("episodes/2026-02.md", "\n## Short ID\n- Summary: UUID → short ID\n- Date: 2026-02-25\n\n", ""); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if !strings.Contains(got, "> Summary: pino leak → custom transport, UUID → short ID\n") || !strings.HasSuffix(got, "- Date: 2026-02-25\n") || strings.Count(got, "## ") != 2 {
		t.Fatalf("after second append:\n%s", got)
	}
	if err := sess.Append("episodes/2026-02.md", "## Third\n- Summary: third\n- Date: 2026-02-26\n", "  custom\nsummary "); err != nil {
		t.Fatal(err)
	}
	if got := FileSummary(readFile(t, path)); got != "custom summary" {
		t.Fatalf("explicit summary = %q", got)
	}
	// A hand-written file without a header keeps its text and gains one.
	other := filepath.Join(s.Dir(), "alice/episodes/2026-03.md")
	writeFile(t, other, "## Hand entry\n- Summary: by hand\n- Date: 2026-03-01\n")
	if err := sess.Append("episodes/2026-03.md", "## Bot entry\n- Summary: by bot\n- Date: 2026-03-02\n", ""); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, other); !strings.HasPrefix(got, "# 2026-03 Episodes\n\n> Summary: by hand, by bot\n\n## Hand entry\n") {
		t.Fatalf("headerless file:\n%s", got)
	}
	bad := []struct {
		path, entry string
		want        error
		msg         string
	}{
		{"facts/user.md", e1, ErrBadPath, "appended to episode files"},
		{"episodes/2026-03.md", e1, ErrInvalid, "append it to episodes/2026-02.md"},
		{"episodes/2026-02.md", "just text", ErrInvalid, "## Title"},
		{"episodes/2026-02.md", "## T\n- Summary: " + strings.Repeat("x", 300) + "\n- Date: 2026-02-01\n", ErrTooLarge, "limit is 300"},
		{"episodes/2026-2.md", e1, ErrBadPath, "episodes/YYYY-MM.md"},
	}
	before := readFile(t, path)
	for _, b := range bad {
		if err := sess.Append(b.path, b.entry, ""); !errors.Is(err, b.want) || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("Append(%q) = %v; want %v with %q", b.path, err, b.want, b.msg)
		}
	}
	if readFile(t, path) != before {
		t.Error("a refused append changed the file")
	}
}

func TestAppendFileCap(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	big := "# 2026-02 Episodes\n\n> Summary: x\n\n" + strings.Repeat("- filler line\n", maxEpisodeFile/14)
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md"), big)
	err := u.NewSession().Append("episodes/2026-02.md", "## T\n- Summary: s\n- Date: 2026-02-01\n", "")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "would pass") {
		t.Fatalf("append past the file cap = %v", err)
	}
}

func TestInvisibleCharactersStripped(t *testing.T) {
	s := newStore(t)
	sess := mustUser(t, s, "alice").NewSession()
	evil := "# User\n\n> Summary: name\n\n- Name: Al\u200bice\U000E0049\U000E0047\u202e\n"
	if err := sess.Write("facts/user.md", evil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "alice/facts/user.md")); got != "# User\n\n> Summary: name\n\n- Name: Alice\n" {
		t.Fatalf("stored %q", got)
	}
	sess.Patch("facts/user.md", []Patch{{OldText: "Alice", NewText: "Bob\u2066"}})
	sess.Append("episodes/2026-02.md", "## T\u200d\n- Summary: s\ufeff\n- Date: 2026-02-01\n", "x\U000E0020y")
	all := readFile(t, filepath.Join(s.Dir(), "alice/facts/user.md")) + readFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md"))
	for _, r := range all {
		if isInvisible(r) {
			t.Fatalf("invisible %U stored:\n%q", r, all)
		}
	}
}

func TestReadCap(t *testing.T) {
	s := newStore(t, func(o *Options) { o.ReadCap = 100 })
	u := mustUser(t, s, "alice")
	content := "# Big\n\n> Summary: big\n\n" + strings.Repeat("- line of text\n", 20)
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/big.md"), content)
	got, err := u.NewSession().Read("facts/big.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := strings.Split(got, "\n[mnemo:")[0]
	if !strings.HasPrefix(content, shown) || len(shown) > 100 || !strings.HasSuffix(shown, "\n") {
		t.Fatalf("cut text = %q", shown)
	}
	note := fmt.Sprintf("[mnemo: the file is %d bytes; only the first %d are shown, %d bytes were left out]", len(content), len(shown), len(content)-len(shown))
	if !strings.HasSuffix(got, note) {
		t.Fatalf("note missing: %q", got)
	}
	if got := capText(strings.Repeat("é", 100), 51); !strings.HasPrefix(got, strings.Repeat("é", 25)+"\n[mnemo:") {
		t.Fatalf("cut inside a character: %q", got)
	}
}

func TestHugeFileRefused(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	p := filepath.Join(s.Dir(), "alice/facts/huge.md")
	writeFile(t, p, "# Huge\n> Summary: huge\n")
	if err := os.Truncate(p, maxFileSize+1); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Read("facts/huge.md"); err == nil || !strings.Contains(err.Error(), "split it") {
		t.Fatalf("huge read = %v", err)
	}
	if got := listPaths(t, u); got != "facts/huge.md=huge" {
		t.Fatalf("huge file still lists by its head: %q", got)
	}
}

func TestEditorSwapFile(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 2, 15, 12, 0, 0, 0, time.UTC))
	s, u, path := aliceWithUserFact(t, func(o *Options) { o.EditWait, o.Clock = 100*time.Millisecond, clk })
	swap := filepath.Join(s.Dir(), "alice/facts/.user.md.swp")
	writeFile(t, swap, "vim")
	sess := u.NewSession()
	sess.Read("facts/user.md")
	// The editor closes while the write waits: the write goes through.
	done := make(chan error, 1)
	go func() { done <- sess.Write("facts/user.md", userFact+"- a\n") }()
	clk.WaitArmed(1) // the write saw the swap file and waits
	os.Remove(swap)
	clk.Advance(50 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("write after the editor closed = %v", err)
	}
	// The editor stays open: the write is refused with a clear error.
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/.user.md.swo"), "vim")
	go func() { done <- sess.Write("facts/user.md", userFact+"- b\n") }()
	clk.WaitArmed(1)
	clk.Advance(99 * time.Millisecond) // still within EditWait: it looks again
	clk.WaitArmed(1)
	select {
	case err := <-done:
		t.Fatalf("the write gave up before EditWait: %v", err)
	default:
	}
	clk.Advance(50 * time.Millisecond) // past EditWait: refused
	err := <-done
	if !errors.Is(err, ErrEditing) || !strings.Contains(err.Error(), "facts/.user.md.swo") || !strings.Contains(err.Error(), "stale swap file") {
		t.Fatalf("write during an edit = %v", err)
	}
	if got := readFile(t, path); got != userFact+"- a\n" {
		t.Fatalf("file = %q", got)
	}
}

func TestEditorWaitEndsAtClose(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 2, 15, 12, 0, 0, 0, time.UTC))
	s := newStore(t, func(o *Options) { o.EditWait, o.Clock = time.Hour, clk })
	u := mustUser(t, s, "alice")
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/.2026-02.md.swp"), "vim")
	done := make(chan error, 1)
	go func() {
		done <- u.NewSession().Append("episodes/2026-02.md", "## T\n- Summary: s\n- Date: 2026-02-01\n", "")
	}()
	clk.WaitArmed(1) // the append waits for the editor
	s.Close()
	if err := <-done; !errors.Is(err, ErrEditing) || !strings.Contains(err.Error(), "closing") {
		t.Fatalf("append at close = %v", err)
	}
}

// TestDiskFaultsFailTheWrite injects each disk failure at each step of the
// atomic write: the write fails with mnemo.ErrStorage naming the file and
// the cause, the file keeps its old text (or stays absent) and no temp file
// is left behind.
func TestDiskFaultsFailTheWrite(t *testing.T) {
	cases := []struct {
		op  string
		err error
	}{
		{durable.Create, syscall.EROFS},
		{durable.Write, syscall.ENOSPC},
		{durable.Fsync, syscall.EIO},
		{durable.Rename, syscall.EROFS},
		{durable.FsyncDir, syscall.EIO},
	}
	for _, tc := range cases {
		for _, exists := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exists=%v", tc.op, exists), func(t *testing.T) {
				var armed atomic.Bool
				s := newStore(t, func(o *Options) {
					o.Faults = func(op, name string) error {
						if armed.Load() && op == tc.op {
							return tc.err
						}
						return nil
					}
				})
				u := mustUser(t, s, "alice")
				sess := u.NewSession()
				const before = "# User\n\n> Summary: old\n\n- old\n"
				if exists {
					if err := sess.Write("facts/user.md", before); err != nil {
						t.Fatal(err)
					}
				}
				armed.Store(true)
				err := sess.Write("facts/user.md", userFact)
				if !errors.Is(err, mnemo.ErrStorage) || !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "facts") {
					t.Fatalf("write with %s failing = %v; want mnemo.ErrStorage wrapping %v and naming the file", tc.op, err, tc.err)
				}
				entries, _ := os.ReadDir(filepath.Join(s.Dir(), "alice/facts"))
				for _, e := range entries {
					if isTempName(e.Name()) {
						t.Errorf("temp file left: %s", e.Name())
					}
				}
				got, rerr := os.ReadFile(filepath.Join(s.Dir(), "alice/facts/user.md"))
				switch {
				case tc.op == durable.FsyncDir:
					// The rename happened; only its durability is in doubt:
					// the caller is told, and a retry rewrites the same text.
					if string(got) != userFact {
						t.Errorf("after a failed folder fsync the file holds %q", got)
					}
				case exists && string(got) != before:
					t.Errorf("a failed write changed the file to %q", got)
				case !exists && rerr == nil:
					t.Errorf("a failed write created the file: %q", got)
				}
			})
		}
	}
}

// A temp file a crashed writer left is removed when its folder is first
// listed by the store that owns the data folder (Options.Clean), not by
// a reader's.
func TestLeftoverTempFilesRemovedAtFirstList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	left := filepath.Join(dir, "alice/facts/.user.md"+tempMarker+"0123")
	keep := filepath.Join(dir, "alice/facts/user.md")
	writeFile(t, left, "half a fi")
	writeFile(t, keep, userFact)
	s := newStore(t, func(o *Options) { o.Dir = dir; o.Clean = false })
	if _, err := mustUser(t, s, "alice").List(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(left); err != nil {
		t.Fatal("Clean=false removed a temp file")
	}
	s = newStore(t, func(o *Options) { o.Dir = dir })
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("removed before alice was listed: %v", err)
	}
	if files, err := mustUser(t, s, "alice").List(); err != nil || len(files) != 1 {
		t.Fatalf("List = %v, %v", files, err)
	}
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("leftover still there: %v", err)
	}
	if readFile(t, keep) != userFact {
		t.Fatal("memory file touched")
	}
}

// A listing while this process writes removes the crashed writer's temp
// file beside the write's own, and leaves the write's own: the write
// completes.
func TestLeftoverRemovedBesideAWriteInFlight(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	left := filepath.Join(dir, "alice/facts/.user.md"+tempMarker+"AAAAAAAA-0123")
	writeFile(t, left, "half a fi")
	var u *User
	var inFlight []string
	listed := false
	s := newStore(t, func(o *Options) {
		o.Dir = dir
		o.Faults = func(op, name string) error {
			if op != durable.Rename || listed {
				return nil
			}
			listed = true // the write's temp file is complete, not yet renamed
			u.idx.invalidateAll(false, false)
			if _, err := u.List(); err != nil {
				t.Errorf("List during the write: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, "alice/facts"))
			for _, e := range entries {
				inFlight = append(inFlight, e.Name())
			}
			return nil
		}
	})
	u = mustUser(t, s, "alice")
	if err := u.NewSession().Write("facts/user.md", userFact); err != nil {
		t.Fatal(err)
	}
	if !listed {
		t.Fatal("the write never reached its rename")
	}
	if len(inFlight) != 1 || !strings.HasPrefix(inFlight[0], ".user.md"+tempMarker) || inFlight[0] == filepath.Base(left) {
		t.Fatalf("during the write the folder held %q; want the write's own temp file only", inFlight)
	}
	if readFile(t, filepath.Join(dir, "alice/facts/user.md")) != userFact {
		t.Fatal("the write did not complete")
	}
	if files, err := u.List(); err != nil || len(files) != 1 {
		t.Fatalf("List = %v, %v", files, err)
	}
}

func TestRemove(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	if err := u.Remove("facts/user.md"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("remove with no folder = %v", err)
	}
	sess.Write("facts/user.md", userFact)
	if err := u.Remove("facts/other.md"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("remove missing = %v", err)
	}
	if err := u.Remove("facts/x/../user.md"); !errors.Is(err, ErrBadPath) {
		t.Fatalf("remove bad path = %v", err)
	}
	if err := u.Remove("facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if got := listPaths(t, u); got != "" {
		t.Fatalf("List after remove = %q", got)
	}
	sess2 := u.NewSession()
	sess2.Write("facts/user.md", userFact)
	if err := u.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "alice")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("folder still there")
	}
	if got := listPaths(t, u); got != "" {
		t.Fatalf("List after RemoveAll = %q", got)
	}
	if err := u.RemoveAll(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RemoveAll twice = %v", err)
	}
	// Writing again recreates the folder through a fresh handle.
	if err := u.NewSession().Write("facts/user.md", userFact); err != nil {
		t.Fatal(err)
	}
	if got := listPaths(t, u); got != "facts/user.md=user name, language" {
		t.Fatalf("after re-create = %q", got)
	}
	os.RemoveAll(filepath.Join(s.Dir(), "bob"))
	writeFile(t, filepath.Join(s.Dir(), "bob"), "not a folder")
	if err := mustUser(t, s, "bob").RemoveAll(); err == nil || !strings.Contains(err.Error(), "remove it by hand") {
		t.Fatalf("RemoveAll of a file = %v", err)
	}
}

// A person replaces the whole user folder (rm -rf, restore from backup):
// the store must write into the new folder, not the deleted one.
func TestUserFolderReplacedByHand(t *testing.T) {
	for _, watch := range []bool{true, false} {
		s := newStore(t, func(o *Options) { o.Watch = watch })
		u := mustUser(t, s, "alice")
		sess := u.NewSession()
		sess.Write("facts/user.md", userFact)
		dir := filepath.Join(s.Dir(), "alice")
		os.RemoveAll(dir)
		writeFile(t, filepath.Join(dir, "facts/restored.md"), "# Restored\n> Summary: from backup\n")
		if err := u.NewSession().Write("facts/new.md", userFact); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "facts/new.md")); err != nil {
			t.Fatalf("watch=%v: write went to the deleted folder: %v", watch, err)
		}
		eventually(t, "restored folder listed", func() bool {
			return listPaths(t, u) == "facts/new.md=user name, language;facts/restored.md=from backup"
		})
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(Options{}); err == nil || !strings.Contains(err.Error(), "MNEMO_DATA_DIR") {
		t.Fatalf("Open without dir = %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	writeFile(t, file, "x")
	if _, err := Open(Options{Dir: filepath.Join(file, "memory")}); err == nil || !strings.Contains(err.Error(), "create data folder") {
		t.Fatalf("Open under a file = %v", err)
	}
	if _, err := Open(Options{Dir: file}); err == nil || !strings.Contains(err.Error(), "data folder") {
		t.Fatalf("Open on a file = %v", err)
	}
	s := newStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestVersionString(t *testing.T) {
	if got := (Version{}).String(); got != "absent" {
		t.Errorf("absent version = %q", got)
	}
	if got := versionOf([]byte("abc"), 1).String(); got != "3 bytes sha256:ba7816bf8f01" {
		t.Errorf("version = %q", got)
	}
}

func TestMoreRefusalsAndErrors(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	// A device node where a memory file belongs (needs root to make one).
	dev := filepath.Join(s.Dir(), "alice/facts/dev.md")
	os.MkdirAll(filepath.Dir(dev), 0o700)
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o600, 0x0103); err == nil {
		if _, err := u.Read("facts/dev.md"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "device") {
			t.Errorf("device read = %v", err)
		}
	}
	// A writer that saw the file absent, while a person created it since.
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/new.md"), userFact)
	if _, err := u.Write("facts/new.md", userFact, &Version{}, nil); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "was created") {
		t.Errorf("write over a file created since = %v", err)
	}
	// The data folder disappears under a running store.
	os.RemoveAll(s.Dir())
	if _, err := s.Users(); err == nil || !strings.Contains(err.Error(), "list users") {
		t.Errorf("Users on a removed root = %v", err)
	}
}
