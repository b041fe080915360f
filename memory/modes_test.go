package memory

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func modeOf(t *testing.T, name string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// loosen makes name's mode perm, as a person's umask or chmod would.
func loosen(t *testing.T, name string, perm fs.FileMode) {
	t.Helper()
	if err := os.Chmod(name, perm); err != nil {
		t.Fatal(err)
	}
}

// mnemo writes with the modes it documents whatever was there: a rewrite
// of a 0644 file leaves it 0600, and the 0755 folders it writes into
// become 0700. Before the fix the file kept its 0644 and the folders
// stayed open to every local user.
func TestWritesTightenModes(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	dir := filepath.Join(s.Dir(), "alice")
	file := filepath.Join(dir, "facts", "food.md")
	writeFile(t, file, "# Food\n> Summary: food\n\n- Sushi\n")
	loosen(t, file, 0o644)
	loosen(t, filepath.Join(dir, "facts"), 0o755)
	loosen(t, dir, 0o755)
	d, err := u.Read("facts/food.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Replace("facts/food.md", d.Text+"- Ramen\n", d.Version, nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{file: 0o600, filepath.Join(dir, "facts"): 0o700, dir: 0o700} {
		if got := modeOf(t, name); got != want {
			t.Errorf("%s is %04o after a write; want %04o", name, got, want)
		}
	}
	// A new file in a new folder: 0600 in 0700.
	if _, err := u.Append("episodes/2026-03.md", "## Demo\n- Summary: demo\n- Date: 2026-03-09\n", "", nil); err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, filepath.Join(dir, "episodes")); got != 0o700 {
		t.Errorf("episodes/ is %04o", got)
	}
	if got := modeOf(t, filepath.Join(dir, "episodes", "2026-03.md")); got != 0o600 {
		t.Errorf("the new file is %04o", got)
	}
}

// Check reports loose modes (the memory folder, a user's, facts/, a file)
// and entries someone else owns; Fix makes folders 0700 and files 0600,
// and gives an entry back to the memory folder's owner only when allowed
// to chown (as root). Before the fix Check said ok. Owners come from an
// injected Owner: shared.md is root's.
func TestCheckAndFixModesAndOwners(t *testing.T) {
	me, myGid := os.Getuid(), os.Getgid()
	other := me + 1
	s := newStore(t, func(o *Options) {
		o.Owner = func(fi fs.FileInfo) (int, int, bool) {
			if fi.Name() == "root.md" {
				return other, myGid, true
			}
			return StatOwner(fi)
		}
	})
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(t, filepath.Join(dir, "facts", "loose.md"), "# Loose\n> Summary: loose\n")
	writeFile(t, filepath.Join(dir, "facts", "root.md"), "# Root\n> Summary: root's\n")
	writeFile(t, filepath.Join(dir, "facts", "fine.md"), "# Fine\n> Summary: fine\n")
	loosen(t, filepath.Join(dir, "facts", "loose.md"), 0o644)
	loosen(t, filepath.Join(dir, "facts"), 0o750)
	loosen(t, s.Dir(), 0o755)
	rep, err := s.Check("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.Name()+" "+string(p.Kind))
	}
	want := []string{s.Dir() + " loose-mode", "alice/facts loose-mode", "alice/facts/loose.md loose-mode", "alice/facts/root.md foreign-owner"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := rep.Problems[3].Detail; !strings.Contains(d, "sudo mnemo memory check --fix") || !strings.Contains(d, "belongs to "+UserName(other)) {
		t.Errorf("foreign owner detail: %s", d)
	}
	if d := rep.Problems[2].Detail; !strings.Contains(d, "is mode 0644") || !strings.Contains(d, "--fix") {
		t.Errorf("loose mode detail: %s", d)
	}

	// Without chown (not root): the modes are fixed, the owner is not.
	fixed := s.Fix(rep, false)
	if len(fixed) != 4 {
		t.Fatalf("fixed %+v", fixed)
	}
	for _, f := range fixed[:3] {
		if f.Err != nil {
			t.Errorf("%s: %v", f.Problem.Name(), f.Err)
		}
	}
	if fixed[3].Err == nil || !strings.Contains(fixed[3].Err.Error(), "sudo mnemo memory check --fix") {
		t.Errorf("a foreign owner without chown: %v", fixed[3].Err)
	}
	for name, want := range map[string]fs.FileMode{s.Dir(): 0o700, filepath.Join(dir, "facts"): 0o700, filepath.Join(dir, "facts", "loose.md"): 0o600} {
		if got := modeOf(t, name); got != want {
			t.Errorf("%s is %04o after Fix; want %04o", name, got, want)
		}
	}
	// With chown (root): the entry goes to the memory folder's owner
	// (here the test's own user, which any user may do).
	if f := s.Fix(rep, true); f[3].Err != nil {
		t.Errorf("chown: %v", f[3].Err)
	}
	// A one-user check sees the same in that folder.
	if one, err := s.Check("alice"); err != nil || len(one.Problems) != 1 || one.Problems[0].Kind != ProblemForeignOwner {
		t.Errorf("one user's check after Fix: %+v, %v", one.Problems, err)
	}
}

// An entry that became something else between Check and Fix is left.
func TestFixModeOfAnEntryThatChanged(t *testing.T) {
	s := newStore(t)
	writeFile(t, filepath.Join(s.Dir(), "alice", "facts", "x.md"), "# X\n> Summary: x\n")
	loosen(t, filepath.Join(s.Dir(), "alice", "facts", "x.md"), 0o644)
	rep, _ := s.Check("alice")
	os.Remove(filepath.Join(s.Dir(), "alice", "facts", "x.md"))
	if err := os.Symlink("/etc/passwd", filepath.Join(s.Dir(), "alice", "facts", "x.md")); err != nil {
		t.Fatal(err)
	}
	if f := s.Fix(rep, false); len(f) != 1 || f[0].Err == nil {
		t.Errorf("Fix = %+v", f)
	}
	os.Remove(filepath.Join(s.Dir(), "alice", "facts", "x.md"))
	if f := s.Fix(rep, false); len(f) != 1 || f[0].Err == nil {
		t.Errorf("Fix of a removed entry = %+v", f)
	}
}

// fakeInfo is a FileInfo with no system stat (another OS's).
type fakeInfo struct{ fs.FileInfo }

func (fakeInfo) Sys() any { return nil }

// Where the system tells no owner: no uid, a foreign owner cannot be
// given back, and only the two kinds Fix knows are touched; a uid without
// a name is named by its number.
func TestOwnerEdges(t *testing.T) {
	if _, _, ok := StatOwner(fakeInfo{}); ok {
		t.Error("StatOwner of a FileInfo without a stat said ok")
	}
	if got := UserName(61234); got != "uid 61234" {
		t.Errorf("UserName(61234) = %q", got)
	}
	s := newStore(t, func(o *Options) { o.Owner = func(fs.FileInfo) (int, int, bool) { return 0, 0, false } })
	rep := CheckReport{Problems: []Problem{{User: "alice", Path: "facts/x.md", Kind: ProblemForeignOwner}, {User: "alice", Path: "x", Kind: ProblemBadName}}}
	f := s.Fix(rep, true)
	if len(f) != 1 || f[0].Err == nil || !strings.Contains(f[0].Err.Error(), "owner is unknown") {
		t.Errorf("Fix = %+v", f)
	}
}
