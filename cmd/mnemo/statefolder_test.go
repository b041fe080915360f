package main

// The state folder is mnemo's alone (issue 23, points 2 and 3), through the
// real code path: a looser folder is made private or refused, files in it
// are not opened through links that lead out, and another local user
// (nobody, uid 65534) can neither reach the running process's control
// socket nor make it act.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mnemo-agent/mnemo/cmd/internal/nobodytest"

	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// nobodyUID is the other local user of these tests.
const nobodyUID = nobodytest.UID

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it acts as another local user (nobody, uid 65534)")
	}
}

func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// mkdirMode makes dir (parents 0700) with exactly mode, whatever the umask.
func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// A state folder that already exists open to others (0755; the umask 000)
// is made 0700 by chat and said so; the files made there are private.
func TestStateFolderIsMadePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	w := newChatWorld(t)
	state := filepath.Join(w.dir, "data", "state")
	mkdirMode(t, state, 0o755)
	r := w.chat(t, "hi\n")
	r.want(t, 0, "", "the state folder was open to other users; made it private")
	if m := modeOf(t, state); m != 0o700 {
		t.Errorf("state folder left %v; want 0700", m)
	}
	if m := modeOf(t, filepath.Join(state, lockFileName)); m != 0o600 {
		t.Errorf("lock file %v; want 0600", m)
	}
	// A second run has nothing to say about it.
	if r := w.chat(t, "hi\n"); strings.Contains(r.stderr, "made it private") {
		t.Errorf("a private folder was reported again:\n%s", r.stderr)
	}
}

// Another user's state folder open to others is refused with the fix and
// left as it is: chat, serve and memory forget write nothing there.
func TestStateFolderOfAnotherUserIsRefused(t *testing.T) {
	needRoot(t)
	w := newChatWorld(t)
	state := filepath.Join(w.dir, "data", "state")
	mkdirMode(t, state, 0o755)
	if err := os.Chown(state, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	putFile(t, filepath.Join(w.dir, "data", "memory", "alice", "facts", "user.md"), aliceUser)
	want := "mnemo: state folder " + state + " is mode -rwxr-xr-x and belongs to nobody (uid 65534), not to this user (root (uid 0)): other users could put links or files there that mnemo would trust; run mnemo as its owner (sudo -u nobody mnemo …), or have the owner run chmod 700 " + state + "\n"
	w.chat(t, "hi\n").want(t, 1, "", want)
	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 1, "", want)
	if m := modeOf(t, state); m != 0o755 {
		t.Errorf("the refused folder was changed to %v", m)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("mnemo wrote into the refused folder: %v", entries)
	}
}

// nobodyMnemo is the mnemo binary (this test binary's TestMainChild, run
// from a copy nobody may execute) as user nobody, with args. With
// pastModes it also has CAP_DAC_OVERRIDE: a user the folder's and the
// socket's modes no longer keep out, as if they had been changed.
func nobodyMnemo(t *testing.T, w *chatWorld, pastModes bool, args ...string) *exec.Cmd {
	t.Helper()
	env := []string{"MNEMO_MAIN_ARGS=" + strings.Join(args, " ")}
	for k, v := range w.env {
		env = append(env, k+"="+v)
	}
	return nobodytest.Command(t, pastModes, env, "-test.run=^TestMainChild$", "-test.count=1")
}

// With the umask 000 and a state folder that existed as 0755 (issue 23,
// point 2), user nobody cannot make a running serve forget someone: the
// folder is made 0700, so nobody cannot reach the socket; and a nobody the
// modes no longer keep out is refused by the socket (SO_PEERCRED), told
// why, and nothing is forgotten.
func TestOtherUsersCannotSteerARunningMnemo(t *testing.T) {
	needRoot(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	state := filepath.Join(w.dir, "data", "state")
	mkdirMode(t, state, 0o755)
	alice := filepath.Join(w.dir, "data", "memory", "alice", "facts", "user.md")
	putFile(t, alice, aliceUser)
	// nobody may come as far as the data folder, as with a 0755 /srv/mnemo.
	// (The folders below the temp folder only: that one is left as it is.)
	for d := w.dir; strings.HasPrefix(d, os.TempDir()+string(filepath.Separator)); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env, logs := serveEnv(w)
	fa := &fakeAdapter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	_, done := goServe(t, ctx, env, cfg, func(_ *cliEnv, _ *config.Config, a *app.App) ([]namedAdapter, error) {
		return []namedAdapter{{"fake", fa}}, nil
	})
	<-fa.started
	if m := modeOf(t, state); m != 0o700 {
		t.Errorf("state folder %v; want 0700", m)
	}
	if m := modeOf(t, app.ControlSocket(cfg)); m != 0o600 {
		t.Errorf("control socket %v; want 0600", m)
	}

	out, _ := nobodyMnemo(t, w, false, "memory", "forget", "alice", "--yes").CombinedOutput()
	if !strings.Contains(string(out), "permission denied") {
		t.Errorf("nobody's forget got past the state folder's mode:\n%s", out)
	}

	cmd := nobodyMnemo(t, w, true, "memory", "forget", "alice", "--yes")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "could not forget alice: control: refused: the caller runs as uid 65534; this mnemo answers only its own user (uid 0) and root: run the command as that user") {
		t.Errorf("nobody past the modes: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if _, err := os.Stat(alice); err != nil {
		t.Errorf("alice's memory is gone: %v", err)
	}
	if !strings.Contains(logs.String(), "control: refused a connection") {
		t.Errorf("the refusal was not logged:\n%s", logs)
	}
	// Root still may.
	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 0, "deleted all memory of alice", "")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// ttyChat runs `mnemo chat --user ada` at a terminal, sends msg, ends it
// with Ctrl-D and returns the screen and stderr.
func ttyChat(t *testing.T, w *chatWorld, msg string) (string, string) {
	t.Helper()
	c := startTTYChat(t, w, "ada")
	tty := c.tty
	tty.WaitFor(t, "you> ")
	tty.Type(t, msg+"\r")
	tty.WaitFor(t, "Noted.")
	c.endAtCtrlD(t, consoletest.Wait)
	return tty.Screen(), c.errOut.String()
}

// unchanged fails unless the file at p still holds text with mode 0644.
func unchanged(t *testing.T, p, text string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != text {
		t.Errorf("the link's target %s was written: %q, %v", p, b, err)
	}
	if m := modeOf(t, p); m != 0o644 {
		t.Errorf("the link's target %s was made %v", p, m)
	}
}

// The files of the state folder are opened through its root (issue 23,
// point 3): the terminal chat's history and the memory index cache are
// never written where a link leads out of the state folder, whether the
// link is the file or its folder; the link is refused with the fix.
func TestStateFilesAreNotOpenedThroughLinks(t *testing.T) {
	const keep = "another user's file\n"
	w := newChatWorld(t)
	state := filepath.Join(w.dir, "data", "state")
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	putFile(t, victim, keep)
	os.Chmod(victim, 0o644)
	link := func(target, at string) {
		t.Helper()
		os.RemoveAll(at)
		if err := os.MkdirAll(filepath.Dir(at), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
	}

	// The history file itself is a link out.
	link(victim, filepath.Join(state, "chat", "ada.history"))
	screen, _ := ttyChat(t, w, "Hello, I'm Ada Lovelace.")
	if !strings.Contains(screen, "ada.history is a symbolic link; mnemo does not follow links in its state folder: remove it") {
		t.Errorf("the refused history was not said:\n%q", screen)
	}
	unchanged(t, victim, keep)

	// Its folder is a link out.
	link(outside, filepath.Join(state, "chat"))
	_, stderr := ttyChat(t, w, "Hello again.")
	if want := "mnemo: chat history: " + filepath.Join(state, "chat") + ": a symbolic link on the way leads out of the state folder; remove it"; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	if _, err := os.Lstat(filepath.Join(outside, "ada.history")); err == nil {
		t.Error("the history was written in the folder the link leads to")
	}
	unchanged(t, victim, keep)
	os.Remove(filepath.Join(state, "chat"))

	// The index cache file is a link out: replaced, its target untouched.
	link(victim, filepath.Join(state, "index", "ada.idx"))
	w.chat(t, "hi\n", "--user", "ada").want(t, 0, "", "")
	if fi, err := os.Lstat(filepath.Join(state, "index", "ada.idx")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("index cache: %v, %v; want a file of its own", fi, err)
	}
	unchanged(t, victim, keep)

	// Its folder is a link out: refused with the fix, nothing written there.
	link(outside, filepath.Join(state, "index"))
	w.chat(t, "hi\n", "--user", "ada").want(t, 1, "", "mnemo: memory index cache: "+filepath.Join(state, "index")+": a symbolic link on the way leads out of the state folder; remove it (")
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("written in the folder the link leads to: %v", entries)
	}
	unchanged(t, victim, keep)
	os.Remove(filepath.Join(state, "index"))

	// A journal file that is a link out: the turn is not journaled there
	// (the chat says it could not be saved), the target untouched.
	link(victim, filepath.Join(state, "reflector", "ada.jsonl"))
	r := w.chat(t, "hi\n", "--user", "ada")
	r.want(t, 1, "", "open journal "+filepath.Join(state, "reflector", "ada.jsonl")+": openat ada.jsonl: path escapes from parent|1 turn(s) could not be saved to the reflection journal")
	unchanged(t, victim, keep)
	os.Remove(filepath.Join(state, "reflector", "ada.jsonl"))

	// The journal's and the history's folders linked out: refused the same way.
	for _, c := range []struct{ dir, what string }{{"reflector", "reflection journal"}, {"history", "history"}} {
		link(outside, filepath.Join(state, c.dir))
		w.chat(t, "hi\n", "--user", "ada").want(t, 1, "", "mnemo: "+c.what+": "+filepath.Join(state, c.dir)+": a symbolic link on the way leads out of the state folder; remove it (")
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Errorf("%s: written in the folder the link leads to: %v", c.dir, entries)
		}
		os.Remove(filepath.Join(state, c.dir))
	}
}
