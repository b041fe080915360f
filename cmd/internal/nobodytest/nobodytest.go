// Package nobodytest runs a copy of the running test binary as user
// nobody, for the tests that prove another local user cannot steer mnemo
// (its state folder, its control socket).
package nobodytest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// UID is user nobody's uid (and gid).
const UID = 65534

// Command is the test binary, copied where nobody may run it, as a
// command run as nobody in "/" with args and the environment plus env.
// pastModes gives it CAP_DAC_OVERRIDE: a process that files' modes no
// longer keep out, as if they had been changed. It skips the test unless
// it runs as root.
func Command(t testing.TB, pastModes bool, env []string, args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a process as user nobody (uid 65534)")
	}
	dir, err := os.MkdirTemp("", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = "/"
	// GOCOVERDIR off: nobody cannot write a -cover run's folder.
	cmd.Env = append(append(os.Environ(), "GOCOVERDIR="), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID}}
	if pastModes {
		cmd.SysProcAttr.AmbientCaps = []uintptr{1} // CAP_DAC_OVERRIDE
	}
	return cmd
}
