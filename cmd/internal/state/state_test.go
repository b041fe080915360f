package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the other local user of the tests that need one.
const nobody = 65534

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the folder must belong to another user (nobody)")
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func open(t *testing.T, dir string) *State {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A missing state folder is made 0700 whatever the umask; its missing
// parents too.
func TestOpenMakesThePrivateFolder(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data", "state")
	s := open(t, dir)
	if m := mode(t, dir); m != Mode {
		t.Errorf("state folder mode %v; want %v", m, Mode)
	}
	if m := mode(t, filepath.Dir(dir)); m != Mode {
		t.Errorf("its new parent's mode %v; want %v", m, Mode)
	}
	if s.dir != dir || s.Tightened() != 0 {
		t.Errorf("dir, Tightened = %q, %v", s.dir, s.Tightened())
	}
}

// A looser folder of this user is made 0700 (issue 23, point 2: a data/state
// that already existed as 0755 stayed so).
func TestOpenTightensALooserFolder(t *testing.T) {
	for _, m := range []os.FileMode{0o755, 0o750, 0o777, 0o701} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, m); err != nil {
			t.Fatal(err)
		}
		s := open(t, dir)
		if got := mode(t, dir); got != Mode {
			t.Errorf("a %v folder is left %v; want %v", m, got, Mode)
		}
		if s.Tightened() != m {
			t.Errorf("Tightened = %v; want %v", s.Tightened(), m)
		}
	}
}

// A looser folder of another user is refused with the fix and left as it
// is; a 0700 one of another user (root running an admin command on the
// service's folder) is used.
func TestOpenRefusesAnotherUsersLooserFolder(t *testing.T) {
	asRoot(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if err == nil {
		t.Fatal("another user's 0755 state folder was accepted")
	}
	for _, want := range []string{dir + " is mode -rwxr-xr-x and belongs to", "nobody (uid 65534)", "sudo -u nobody mnemo", "chmod 700 " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if m := mode(t, dir); m != 0o755 {
		t.Errorf("the refused folder was changed to %v", m)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	open(t, dir)
}

// Files are opened through the root: a link that leads out of the state
// folder is refused and its target left as it was (issue 23, point 3); a
// link that stays inside is followed.
func TestLinksOutAreNotFollowed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir)
	if err := os.Symlink(outside, filepath.Join(dir, "mnemo.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := s.OpenFile("mnemo.lock", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if want := filepath.Join(dir, "mnemo.lock") + " is a symbolic link; remove it (mnemo does not follow symbolic links in its state folder)"; err == nil || !errors.Is(err, ErrLink) || err.Error() != want {
		t.Errorf("a link: %v; want %s", err, want)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sub("index"); err == nil || !IsEscape(err) || !errors.Is(err, ErrLink) || !strings.Contains(err.Error(), "leads out of the state folder; remove it") {
		t.Errorf("a folder linked out: %v", err)
	}
	if _, err := s.OpenFile("index/alice.idx", os.O_RDWR|os.O_CREATE, 0o600); err == nil || !IsEscape(err) {
		t.Errorf("a file through a folder linked out: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "precious\n" || mode(t, outside) != 0o644 {
		t.Errorf("the target was changed: %q, %v", b, mode(t, outside))
	}

	if err := os.WriteFile(filepath.Join(dir, "real"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.d", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	// A folder linked inside is harmless: it is another of mnemo's.
	f, err := s.OpenFile("inside/x", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("a folder linked inside: %v", err)
	}
	f.Close()
	sub, err := s.Sub("chat")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if m := mode(t, filepath.Join(dir, "chat")); m != Mode {
		t.Errorf("subfolder mode %v", m)
	}
	if _, err := s.OpenFile("missing", os.O_RDONLY, 0); err == nil || IsEscape(err) {
		t.Errorf("a missing file: %v", err)
	}
	// A file where a subfolder goes: said as it is.
	if _, err := s.Sub("real"); err == nil || IsEscape(err) || errors.Is(err, ErrLink) {
		t.Errorf("a file in a subfolder's place: %v", err)
	}
	if fi, err := s.root.Stat("real"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Root: %v, %v", fi, err)
	}
}

// What cannot be made or opened is named with the fix.
func TestOpenFailures(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "state")} {
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), "state folder "+dir) || !strings.Contains(err.Error(), "set state.dir elsewhere") {
			t.Errorf("Open(%s) = %v", dir, err)
		}
	}
}

func TestUserNames(t *testing.T) {
	if got := userName(0); got != "root (uid 0)" {
		t.Errorf("userName(0) = %q", got)
	}
	if got, want := sudoUser(0), "root"; got != want {
		t.Errorf("sudoUser(0) = %q", got)
	}
	if got := userName(1 << 30); got != "uid 1073741824" {
		t.Errorf("an unknown uid: %q", got)
	}
	if got := sudoUser(1 << 30); got != "'#1073741824'" {
		t.Errorf("an unknown uid for sudo: %q", got)
	}
}
