package durable

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// recorder is a Hook that records every operation and fails op (on a
// name containing part) with err.
type recorder struct {
	ops      []string
	op, part string
	err      error
}

func (r *recorder) hook(op, name string) error {
	r.ops = append(r.ops, op+":"+filepath.Base(name))
	if op == r.op && strings.Contains(name, r.part) {
		return r.err
	}
	return nil
}

func put(t *testing.T, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// temps lists the temp files left in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && IsTemp(d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// WriteFile goes through create, write, fsync, rename and the folder
// fsync, in that order, in a Dir and in an *os.Root alike, and leaves the
// new content with its permissions and no temp file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	put(t, filepath.Join(dir, "sub", "f.md"), "old")
	for name, fsys := range map[string]FS{"Dir": Dir(dir), "Root": root} {
		t.Run(name, func(t *testing.T) {
			r := &recorder{}
			if err := WriteFile(fsys, "sub/f.md", []byte("new "+name), WriteOptions{Hook: r.hook, Perm: 0o640}); err != nil {
				t.Fatal(err)
			}
			if got := read(t, filepath.Join(dir, "sub", "f.md")); got != "new "+name {
				t.Errorf("content %q", got)
			}
			fi, _ := os.Stat(filepath.Join(dir, "sub", "f.md"))
			if fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v", fi.Mode())
			}
			var ops []string
			for _, o := range r.ops {
				op, _, _ := strings.Cut(o, ":")
				ops = append(ops, op)
			}
			if !slices.Equal(ops, []string{Create, Write, Fsync, Rename, FsyncDir}) {
				t.Errorf("ops %v", r.ops)
			}
			if !strings.HasPrefix(r.ops[0], "create:.f.md"+TempMarker) || r.ops[3] != "rename:f.md" || r.ops[4] != "fsyncdir:sub" {
				t.Errorf("names %v", r.ops)
			}
			if left := temps(t, dir); left != nil {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

// A failure at any step is an *Error naming the step and the target; one
// before the rename leaves the old content and no temp file, one after it
// (the folder fsync) the new content.
func TestWriteFileFaults(t *testing.T) {
	for _, tc := range []struct {
		op, msg string
		err     error
		want    string
	}{
		{Create, "create temp file for f.md", syscall.EROFS, "old"},
		{Write, "write f.md", syscall.ENOSPC, "old"},
		{Fsync, "fsync f.md", syscall.EIO, "old"},
		{Rename, "rename into f.md", syscall.EIO, "old"},
		{FsyncDir, "fsync folder .", syscall.EIO, "new"},
	} {
		t.Run(tc.op, func(t *testing.T) {
			dir := t.TempDir()
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			put(t, filepath.Join(dir, "f.md"), "old")
			r := &recorder{op: tc.op, err: tc.err}
			err = WriteFile(root, "f.md", []byte("new"), WriteOptions{Hook: r.hook})
			var de *Error
			if !errors.As(err, &de) || de.Op != tc.op || !errors.Is(err, tc.err) || !IsDisk(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("WriteFile = %v; want an *Error of %s saying %q", err, tc.op, tc.msg)
			}
			if got := read(t, filepath.Join(dir, "f.md")); got != tc.want {
				t.Errorf("content %q; want %q", got, tc.want)
			}
			if left := temps(t, dir); left != nil {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

// Check runs before the rename; its error is returned as it is and the
// write abandoned.
func TestWriteFileCheck(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "f"), "old")
	stale := errors.New("the file changed meanwhile")
	err := WriteFile(Dir(dir), "f", []byte("new"), WriteOptions{Check: func() error { return stale }})
	if err != stale || IsDisk(err) {
		t.Fatalf("WriteFile = %v", err)
	}
	if read(t, filepath.Join(dir, "f")) != "old" || temps(t, dir) != nil {
		t.Error("an abandoned write changed the folder")
	}
}

// The real failures, without a hook: a folder where the file should go,
// a missing folder, and a name outside an *os.Root (the sandbox holds).
func TestWriteFileRealFailures(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "taken", "x"), "")
	if err := WriteFile(Dir(dir), "taken", []byte("x"), WriteOptions{}); !IsDisk(err) || !strings.Contains(err.Error(), "rename into "+filepath.Join(dir, "taken")) {
		t.Errorf("over a folder: %v", err)
	}
	if err := WriteFile(Dir(dir), "missing/f", []byte("x"), WriteOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("in a missing folder: %v", err)
	}
	root, err := os.OpenRoot(filepath.Join(dir, "taken"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := WriteFile(root, "../escaped", []byte("x"), WriteOptions{}); err == nil {
		t.Error("a write escaped the root")
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped")); err == nil {
		t.Error("the file outside the root was written")
	}
	if left := temps(t, dir); left != nil {
		t.Errorf("temp files left: %v", left)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(Dir(dir), ".", nil); err != nil {
		t.Fatal(err)
	}
	err := SyncDir(Dir(dir), "missing", nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "open folder for fsync "+filepath.Join(dir, "missing")) {
		t.Errorf("missing folder: %v", err)
	}
	r := &recorder{op: FsyncDir, err: syscall.EIO}
	if err := SyncDir(Dir(dir), ".", r.hook); !errors.Is(err, syscall.EIO) {
		t.Errorf("hook's failure: %v", err)
	}
}

func TestRemoveFile(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "f"), "x")
	r := &recorder{}
	if err := RemoveFile(Dir(dir), "f", r.hook); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("not removed")
	}
	if !slices.Equal(r.ops, []string{"remove:f", "fsyncdir:" + filepath.Base(dir)}) {
		t.Errorf("ops %v", r.ops)
	}
	if err := RemoveFile(Dir(dir), "f", nil); err != nil {
		t.Errorf("a missing file: %v", err)
	}
	put(t, filepath.Join(dir, "f"), "x")
	r = &recorder{op: Remove, err: syscall.EROFS}
	if err := RemoveFile(Dir(dir), "f", r.hook); !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), "remove "+filepath.Join(dir, "f")) {
		t.Errorf("RemoveFile = %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "f"), "text")
	if b, err := ReadFile(Dir(dir), "f"); err != nil || string(b) != "text" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile(Dir(dir), "g"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// NoDirSync leaves the folder fsync to the caller (several files, one
// SyncDir).
func TestWriteFileNoDirSync(t *testing.T) {
	dir := t.TempDir()
	r := &recorder{}
	if err := WriteFile(Dir(dir), "f", []byte("x"), WriteOptions{Hook: r.hook, NoDirSync: true}); err != nil {
		t.Fatal(err)
	}
	if len(r.ops) != 4 || r.ops[3] != "rename:f" || read(t, filepath.Join(dir, "f")) != "x" {
		t.Errorf("ops %v", r.ops)
	}
}

// NoSync writes atomically without an fsync (a cache).
func TestWriteFileNoSync(t *testing.T) {
	dir := t.TempDir()
	r := &recorder{}
	if err := WriteFile(Dir(dir), "f", []byte("x"), WriteOptions{Hook: r.hook, NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if len(r.ops) != 3 || !strings.HasPrefix(r.ops[0], "create:") || !strings.HasPrefix(r.ops[1], "write:") || r.ops[2] != "rename:f" || read(t, filepath.Join(dir, "f")) != "x" {
		t.Errorf("ops %v", r.ops)
	}
}

// Temps finds a file's own temp copies only, whatever its name holds.
func TestTemps(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a[1].md", "a1.md", "a[1].md.bak"} {
		if err := os.WriteFile(filepath.Join(dir, "."+n+TempMarker+"Z"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := Temps(filepath.Join(dir, "a[1].md"))
	if len(got) != 1 || filepath.Base(got[0]) != ".a[1].md"+TempMarker+"Z" {
		t.Errorf("Temps = %v", got)
	}
	if got := Temps(filepath.Join(dir, "none")); len(got) != 0 {
		t.Errorf("Temps of a file without = %v", got)
	}
}

// A RootDir's files are named by their full path, as a Dir's: in the
// Hook and in errors; a link that leads out of it is refused (IsEscape).
func TestRootDirNamesFullPaths(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var names []string
	hook := Hook(func(op, name string) error {
		names = append(names, name)
		return nil
	})
	if err := WriteFile(RootDir{Root: root}, "a.txt", []byte("x"), WriteOptions{Hook: hook}); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 || !strings.HasPrefix(names[0], filepath.Join(dir, ".a.txt")) && names[0] != filepath.Join(dir, "a.txt") {
		t.Errorf("hook names %q; want full paths in %s", names, dir)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	err = WriteFile(RootDir{Root: root}, "out/b.txt", []byte("x"), WriteOptions{})
	if !IsEscape(err) || !strings.Contains(err.Error(), filepath.Join(dir, "out")) {
		t.Errorf("a write through a link out: %v", err)
	}
	if IsEscape(nil) || IsEscape(errors.New("other")) || !IsEscape(errors.Join(errors.New("x"), err)) {
		t.Error("IsEscape")
	}
}

// A temp file this process is writing is not a leftover; one of another
// process (another token, or none: an older mnemo's) is.
func TestIsLeftover(t *testing.T) {
	own := filepath.Base(tempName("facts/user.md"))
	if !IsTemp(own) || IsLeftover(own) {
		t.Fatalf("own temp %q: IsTemp %v, IsLeftover %v", own, IsTemp(own), IsLeftover(own))
	}
	if own2 := filepath.Base(tempName("facts/user.md")); own2 == own {
		t.Fatalf("two temp names alike: %q", own)
	}
	for _, name := range []string{
		".user.md" + TempMarker + "0123",                        // an older mnemo's: no token
		".user.md" + TempMarker + "AAAAAAAA-" + rand.Text(),     // another process's
		".user.md" + TempMarker + procToken() + rand.Text()[:1], // the token without its "-"
	} {
		if strings.Contains(name, TempMarker+procToken()+"-") {
			t.Skip("the random token came out as the test's")
		}
		if !IsLeftover(name) {
			t.Errorf("IsLeftover(%q) = false", name)
		}
	}
	if IsLeftover("user.md") {
		t.Error("a plain name is a leftover")
	}
}
