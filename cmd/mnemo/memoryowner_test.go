package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/memory"
)

// ownerWorld is a data folder with one fact of ann's, and a way to run
// mnemo as another user (uid) seeing files someone else owns (foreign).
type ownerWorld struct {
	dir, mem string
	env      map[string]string
	uid      int             // who runs the command
	foreign  map[string]bool // file names owned by uid 4242
}

func newOwnerWorld(t *testing.T) *ownerWorld {
	t.Helper()
	dir := inTempDir(t)
	w := &ownerWorld{dir: dir, mem: filepath.Join(dir, "memory"), uid: os.Getuid(), foreign: map[string]bool{}}
	fact := filepath.Join(w.mem, "ann", "facts", "user.md")
	if err := os.MkdirAll(filepath.Dir(fact), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(w.mem, 0o700)
	if err := os.WriteFile(fact, []byte("# Ann\n> Summary: who Ann is\n\n- Name: Ann\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = map[string]string{"MNEMO_DATA_DIR": w.mem, "TMPDIR": dir}
	return w
}

func (w *ownerWorld) run(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cliEnv{getenv: func(k string) string { return w.env[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		uid: func() int { return w.uid },
		owner: func(fi fs.FileInfo) (int, int, bool) {
			if w.foreign[fi.Name()] {
				return 4242, 4242, true
			}
			return memory.StatOwner(fi)
		}}
	err := runWith(stopOn(context.Background()), args, env)
	return cliResult{exitCode(err, &errOut), out.String(), errOut.String()}
}

// An admin command run as another user than the data folder's owner says
// so and stops, naming sudo -u OWNER; --as-any-user runs it; check (read
// only) always runs. Before the fix root's forget, edit or restore left
// root-owned files the service could not read.
func TestMemoryCommandAsAnotherUser(t *testing.T) {
	w := newOwnerWorld(t)
	owner := memory.UserName(os.Getuid())
	w.uid = os.Getuid() + 1000
	r := w.run(t, "memory", "forget", "ann", "facts/user.md", "--yes")
	r.want(t, 1, "", "the data folder "+w.mem+" belongs to "+owner+"|sudo -u "+owner+" mnemo memory forget …|--as-any-user")
	if _, err := os.Stat(filepath.Join(w.mem, "ann", "facts", "user.md")); err != nil {
		t.Fatalf("the refused forget deleted the file: %v", err)
	}
	for _, args := range [][]string{{"memory", "edit", "ann", "facts/user.md"}, {"memory", "restore", "ann", "facts/user.md", "--at", "2026-01-01"},
		{"memory", "pending", "ann", "--drop"}} {
		w.run(t, args...).want(t, 1, "", "sudo -u "+owner+" mnemo memory "+args[1]+" …")
	}
	// Reading writes nothing: ls, show, check run as anyone.
	w.run(t, "memory", "ls", "ann").want(t, 0, "facts/user.md", "")
	w.run(t, "memory", "show", "ann", "facts/user.md").want(t, 0, "Name: Ann", "")
	w.run(t, "memory", "check").want(t, 0, "ok: ", "")
	w.run(t, "memory", "forget", "ann", "facts/user.md", "--yes", "--as-any-user").want(t, 0, "deleted ann/facts/user.md", "")
}

// A data folder whose owner has no name (a systemd DynamicUser while its
// service is stopped) is named '#UID', as sudo -u takes it.
func TestSudoUser(t *testing.T) {
	if got := sudoUser(0); got != "root" {
		t.Errorf("sudoUser(0) = %q", got)
	}
	if got := sudoUser(61234); got != "'#61234'" {
		t.Errorf("sudoUser(61234) = %q", got)
	}
}

// memory check reports loose modes and foreign owners (exit 1); --fix
// makes folders 0700 and files 0600, and, run as root, gives the files
// back; then nothing is left (exit 0). Not as root, a foreign owner stays
// reported, with the sudo command that fixes it. Before the fix check
// said ok.
func TestMemoryCheckFixModesAndOwners(t *testing.T) {
	w := newOwnerWorld(t)
	fact := filepath.Join(w.mem, "ann", "facts", "user.md")
	os.Chmod(fact, 0o644)
	os.Chmod(filepath.Join(w.mem, "ann"), 0o755)
	w.foreign["user.md"] = true
	r := w.run(t, "memory", "check")
	r.want(t, 1, "ann: is mode 0755", "3 problems")
	for _, s := range []string{"ann/facts/user.md: is mode 0644", "ann/facts/user.md: belongs to uid 4242"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("check lacks %q:\n%s", s, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n != 3 {
		t.Errorf("%d lines:\n%s", n, r.stdout)
	}

	w.uid = os.Getuid() + 1000 // not root
	r = w.run(t, "memory", "check", "--fix")
	r.want(t, 1, "fixed ann: mode 0700", "could not fix ann/facts/user.md (foreign-owner): only root can give a file back")
	if got := modeOf(t, fact); got != 0o600 {
		t.Errorf("the file is %04o after --fix", got)
	}
	if got := modeOf(t, filepath.Join(w.mem, "ann")); got != 0o700 {
		t.Errorf("the folder is %04o after --fix", got)
	}
	if !strings.Contains(r.stdout, "belongs to uid 4242") || strings.Contains(r.stdout, "is mode") {
		t.Errorf("after --fix not as root:\n%s", r.stdout)
	}

	w.uid = 0 // root: the file goes back to the data folder's owner
	r = w.run(t, "memory", "check", "--fix")
	if !strings.Contains(r.stdout, "fixed ann/facts/user.md: given back to the data folder's owner") {
		t.Errorf("--fix as root:\n%s%s", r.stdout, r.stderr)
	}
	delete(w.foreign, "user.md") // as the chown made it
	w.run(t, "memory", "check").want(t, 0, "ok: ", "")
}
