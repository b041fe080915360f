package memory

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// TestCommitHookSeesEachChangeBeforeItIsMade: the hook is told the version
// a change replaces and the one it makes (which Version then reports), and
// its error aborts the change, leaving the file as it was.
func TestCommitHookSeesEachChangeBeforeItIsMade(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	if v, err := u.Version("facts/user.md"); err != nil || v.Exists {
		t.Fatalf("Version of a user without a folder = %v, %v", v, err)
	}
	var seen []Commit
	refuse := error(nil)
	sess := u.NewSession()
	sess.OnCommit(func(c Commit) error {
		// The file is still the old version when the hook runs.
		if now, err := u.Version(c.Path); err != nil || !now.Same(c.Before) {
			t.Errorf("at the hook the file is %v, want the version replaced (%v)", now, c.Before)
		}
		seen = append(seen, c)
		return refuse
	})
	must(t, sess.Write("facts/user.md", userFact))
	must(t, sess.Append("episodes/2026-02.md", "## T\n- Summary: s\n- Date: 2026-02-01\n", ""))
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "Zhang San", NewText: "Ada L."}}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0].Before.Exists || !seen[0].After.Exists || !seen[2].Before.Same(seen[0].After) {
		t.Fatalf("commits seen: %+v", seen)
	}
	for _, c := range seen[1:] {
		now, err := u.Version(c.Path)
		if err != nil || !now.Same(c.After) {
			t.Errorf("%s is at %v, want the version the hook was told (%v)", c.Path, now, c.After)
		}
	}
	before, _ := os.ReadFile(filepath.Join(s.Dir(), "alice/facts/user.md"))
	refuse = errors.New("journal full")
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "Ada L.", NewText: "Grace"}}); !errors.Is(err, refuse) {
		t.Fatalf("patch with a refusing hook = %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(s.Dir(), "alice/facts/user.md"))
	if string(after) != string(before) {
		t.Fatalf("a refused change was made: %q", after)
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), "alice/facts"))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	if _, err := u.Version("../x.md"); !errors.Is(err, ErrBadPath) {
		t.Fatalf("Version of a bad path = %v", err)
	}
}

func TestRemoveDiskFault(t *testing.T) {
	var fail error
	s := newStore(t, func(o *Options) {
		o.Faults = func(op, _ string) error {
			if op == durable.Remove {
				return fail
			}
			return nil
		}
	})
	u := mustUser(t, s, "alice")
	must(t, u.NewSession().Write("facts/user.md", userFact))
	fail = syscall.EROFS
	if err := u.Remove("facts/user.md"); !errors.Is(err, mnemo.ErrStorage) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Remove on a read-only disk = %v", err)
	}
	if v, _ := u.Version("facts/user.md"); !v.Exists {
		t.Fatal("the file is gone though the remove failed")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
