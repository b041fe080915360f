package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// lockConfig is the configuration the world's commands run with.
func lockConfig(t *testing.T, w *chatWorld) *config.Config {
	t.Helper()
	cfg, err := config.Load("", false, func(k string) string { return w.env[k] }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// inUse is the message a second writer gets.
func inUse(dataDir string, pid int, command string) string {
	return fmt.Sprintf("mnemo: data folder %s is in use by process %d (%s); stop it or point --config / MNEMO_DATA_DIR elsewhere\n", dataDir, pid, command)
}

// noChatAnswer is what a second chat gets when the holder does not answer
// on the control socket (nothing listens there).
func noChatAnswer(dataDir, holder, sock string) string {
	return fmt.Sprintf("mnemo: data folder %s is in use by %s, which does not answer on the control socket %s (connect: no such file or directory); "+
		"if it is starting or stopping, run this again in a moment; if it is an older mnemo or runs as another user, stop it or point --config / MNEMO_DATA_DIR elsewhere\n", dataDir, holder, sock)
}

// serveWorldEnv is the world's environment with Slack tokens, so that
// `mnemo serve` gets past its configuration check, and a free port.
func serveWorldEnv(w *chatWorld) map[string]string {
	env := maps.Clone(w.env)
	env["SLACK_BOT_TOKEN"] = "xoxb-test"
	env["SLACK_APP_TOKEN"] = "xapp-test"
	return env
}

// While one process owns the data folder, every writing command is refused
// before it opens anything, and the read-only admin commands still work.
func TestLockRefusesSecondWriter(t *testing.T) {
	w := newChatWorld(t)
	data := w.env["MNEMO_DATA_DIR"]
	putFile(t, filepath.Join(data, "alice", "facts", "user.md"), aliceUser)
	putFile(t, filepath.Join(data, "alice", "facts", "pets.md"), alicePets)
	cfg := lockConfig(t, w)
	l, err := lockData(nil, cfg, "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(w.dir, "data", "state", "mnemo.lock")
	if b, err := os.ReadFile(lockPath); err != nil || string(b) != fmt.Sprintf("%d mnemo serve\n", os.Getpid()) {
		t.Fatalf("lock file holds %q, %v", b, err)
	}
	want := inUse(data, os.Getpid(), "mnemo serve")
	sock := filepath.Join(w.dir, "data", "state", "mnemo.sock")

	// A chat asks the holder to carry it (remotechat.go); this one has no
	// control socket.
	r := w.chat(t, "hi\n", "--user", "alice")
	chatWant := noChatAnswer(data, fmt.Sprintf("process %d (mnemo serve)", os.Getpid()), sock)
	r.want(t, 1, "", chatWant)
	if r.stdout != "" || r.stderr != chatWant {
		t.Errorf("refused chat printed more than the message:\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
	if n := len(w.srv.Requests()); n != 0 {
		t.Errorf("refused chat called the model %d times", n)
	}
	if exists(filepath.Join(w.dir, "data", "state", "reflector")) {
		t.Error("refused chat opened the reflection journal")
	}
	cli(t, serveWorldEnv(w), "serve", "--listen", "127.0.0.1:0").want(t, 1, "", want)
	// forget asks the holder, which here has no control socket: the error
	// names the process, the socket and what to do.
	noAnswer := fmt.Sprintf("mnemo: data folder %s is in use by process %d (mnemo serve), which does not answer on the control socket %s (connect: no such file or directory); "+
		"if it is starting or stopping, run this again in a moment; if it is a mnemo without a control socket, stop it and run this again (meanwhile /memory forget works in Slack and Discord)\n", data, os.Getpid(), sock)
	r = cli(t, w.env, "memory", "forget", "alice", "--yes")
	r.want(t, 1, "", noAnswer)
	if r.stdout != "" || r.stderr != fmt.Sprintf("mnemo: process %d (mnemo serve) owns the data folder; asking it to forget alice…\n", os.Getpid())+noAnswer {
		t.Errorf("refused forget printed:\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
	cli(t, w.env, "memory", "forget", "alice", "facts/pets.md", "--yes").want(t, 1, "", noAnswer)
	if !exists(filepath.Join(data, "alice", "facts", "pets.md")) {
		t.Fatal("a refused forget deleted the file")
	}
	// Without --yes, forget only says what it would delete: no lock needed.
	cli(t, w.env, "memory", "forget", "alice").want(t, 2, "", "this would delete all memory of alice")

	// The read-only commands take no lock.
	cli(t, w.env, "memory", "users").want(t, 0, "alice\n", "")
	cli(t, w.env, "memory", "ls", "alice").want(t, 0, "facts/user.md", "")
	cli(t, w.env, "memory", "show", "alice", "facts/user.md").want(t, 0, aliceUser, "")
	cli(t, w.env, "memory", "check").want(t, 0, "ok: 1 user, 2 files checked", "")
	cli(t, w.env, "memory", "export", "alice").want(t, 0, "", "")

	// A holder that has not said who it is (or whose line is unreadable).
	if err := os.WriteFile(lockPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w.chat(t, "hi\n").want(t, 1, "", noChatAnswer(data, "another mnemo process", sock))

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cli(t, w.env, "memory", "forget", "alice", "facts/pets.md", "--yes").want(t, 0, "deleted alice/facts/pets.md", "")
	if b, _ := os.ReadFile(lockPath); string(b) != fmt.Sprintf("%d mnemo memory forget\n", os.Getpid()) {
		t.Errorf("lock file after forget holds %q", b)
	}
	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 0, "deleted all memory of alice", "")
}

// TestLockHeldByAnotherProcess: a real second process holds the lock; serve
// and chat are refused naming it, and once it is killed (no chance to clean
// up) the next chat runs: the kernel released the lock, nothing is stale.
func TestLockHeldByAnotherProcess(t *testing.T) {
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.env["MNEMO_DATA_DIR"], "alice", "facts", "user.md"), aliceUser)
	cmd := w.child("TestLockHelperProcess", "MNEMO_LOCK_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v\n%s", line, err, stderr.String())
	}
	want := inUse(w.env["MNEMO_DATA_DIR"], cmd.Process.Pid, "mnemo serve")
	cli(t, serveWorldEnv(w), "serve", "--listen", "127.0.0.1:0").want(t, 1, "", want)
	w.chat(t, "hi\n").want(t, 1, "", noChatAnswer(w.env["MNEMO_DATA_DIR"], fmt.Sprintf("process %d (mnemo serve)", cmd.Process.Pid), filepath.Join(w.dir, "data", "state", "mnemo.sock")))
	cli(t, w.env, "memory", "users").want(t, 0, "alice\n", "")

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed = true
	w.chat(t, "hi\n").want(t, 0, "Noted.\n", "")
}

// TestLockHelperProcess is the second process of TestLockHeldByAnotherProcess:
// it takes the lock as `mnemo serve` would, says so, and holds it until its
// stdin closes or it is killed.
func TestLockHelperProcess(t *testing.T) {
	if os.Getenv("MNEMO_LOCK_CHILD") != "1" {
		t.Skip("runs only as TestLockHeldByAnotherProcess's child process")
	}
	cfg, err := config.Load("", false, os.Getenv, registry.Platforms()...)
	if err == nil {
		var l *dataLock
		if l, err = lockData(nil, cfg, "mnemo serve"); err == nil {
			fmt.Println("locked")
			io.Copy(io.Discard, os.Stdin)
			l.Close()
		}
	}
	os.Exit(exitCode(err, os.Stderr))
}

// The lock lives as long as the command: held while chat or serve runs,
// released when it returns.
func TestLockHeldForTheCommandsLife(t *testing.T) {
	w := newChatWorld(t)
	cfg := lockConfig(t, w)
	data := w.env["MNEMO_DATA_DIR"]

	// Two chats one after the other both run.
	w.chat(t, "Hello, I'm Zhang San.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	w.chat(t, "What's my name?\n", "--user", "zhangsan").want(t, 0, "Your name is Zhang San.\n", "")

	// A running chat holds it.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(stopOn(context.Background()), []string{"chat", "--user", "zhangsan"}, func(k string) string { return w.env[k] }, inR, outW, io.Discard)
		outW.Close()
		done <- err
	}()
	fmt.Fprintln(inW, "hi")
	if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || line != "Noted.\n" {
		t.Fatalf("chat replied %q, %v", line, err)
	}
	cli(t, w.env, "memory", "show", "zhangsan", "facts/user.md").want(t, 0, "- Name: Zhang San", "")
	// A forget meanwhile is done by the running chat (control socket).
	cli(t, w.env, "memory", "forget", "zhangsan", "--yes").want(t, 0, "deleted all memory of zhangsan", fmt.Sprintf("process %d (mnemo chat) owns the data folder", os.Getpid()))
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l, err := lockData(nil, cfg, "mnemo test")
	if err != nil {
		t.Fatalf("lock not released after chat: %v", err)
	}
	l.Close()

	// A running serve holds it, and releases it when it stops.
	scfg := slackConfig(t, w)
	env, _ := serveEnv(w)
	fa := &fakeAdapter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	_, served := goServe(t, ctx, env, scfg, adapters(namedAdapter{"fake", fa}))
	<-fa.started
	if _, err := lockData(nil, cfg, "mnemo test"); err == nil || err.Error()+"\n" != strings.TrimPrefix(inUse(data, os.Getpid(), "mnemo serve"), "mnemo: ") {
		t.Errorf("lock while serve runs: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if l, err = lockData(nil, cfg, "mnemo test"); err != nil {
		t.Fatalf("lock not released after serve: %v", err)
	}
	l.Close()
}

// A lock that cannot be taken for another reason is exit 1 naming the lock
// file and the cause.
func TestLockErrors(t *testing.T) {
	w := newChatWorld(t)
	data := w.env["MNEMO_DATA_DIR"]
	state := filepath.Join(w.dir, "data", "state")
	lockPath := filepath.Join(state, "mnemo.lock")
	prefix := "mnemo: cannot lock the data folder " + data + ": lock file "

	// The state folder cannot be created (a file is in the way).
	putFile(t, filepath.Join(w.dir, "blocked"), "x")
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "state:\n  dir: blocked/state\n")
	w.chat(t, "hi\n").want(t, 1, "", "mnemo: state folder blocked/state: mkdir blocked: not a directory (it holds mnemo's lock and journals and must be a folder mnemo may write; set state.dir elsewhere)\n")
	cli(t, serveWorldEnv(w), "serve", "--listen", "127.0.0.1:0").want(t, 1, "", "mnemo: state folder blocked/state: mkdir blocked: not a directory")
	os.Remove(filepath.Join(w.dir, "mnemo.yaml"))

	// A missing state folder is created, private.
	cfg := lockConfig(t, w)
	l, err := lockData(nil, cfg, "mnemo test")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state folder: %v %v", fi.Mode(), err)
	}

	// The lock file cannot be opened: a folder in its place.
	os.RemoveAll(lockPath)
	if err := os.Mkdir(lockPath, 0o700); err != nil {
		t.Fatal(err)
	}
	w.chat(t, "hi\n").want(t, 1, "", prefix+lockPath+": openat: is a directory (")
	// A link in its place is not followed: what it points to (another
	// user's file, for a command run as root) is not written.
	os.RemoveAll(lockPath)
	target := filepath.Join(w.dir, "victim")
	putFile(t, target, "keep me\n")
	if err := os.Symlink(target, lockPath); err != nil {
		t.Fatal(err)
	}
	w.chat(t, "hi\n").want(t, 1, "", "mnemo: "+lockPath+" is a symbolic link; remove it (mnemo does not follow symbolic links in its state folder)\n")
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	os.RemoveAll(lockPath)

	// flock itself fails (say, a file system without locks).
	var out, errOut bytes.Buffer
	err = runWith(stopOn(context.Background()), []string{"chat"}, cliEnv{
		getenv: func(k string) string { return w.env[k] }, stdin: strings.NewReader("hi\n"), stdout: &out, stderr: &errOut,
		flock: func(int, int) error { return syscall.ENOLCK }})
	cliResult{exitCode(err, &errOut), out.String(), errOut.String()}.want(t, 1, "", prefix+lockPath+": flock: no locks available (")

	// With the lock taken, a journal that cannot be opened is still reported.
	putFile(t, filepath.Join(state, "reflector"), "a file where the journal folder goes")
	w.chat(t, "hi\n").want(t, 1, "", "reflection journal")
}

func TestLockHolder(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "mnemo.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for content, want := range map[string]string{
		"12345 mnemo serve\n":              "process 12345 (mnemo serve)",
		"12345 mnemo memory forget\nold\n": "process 12345 (mnemo memory forget)",
		"":                                 "",
		"12345 mnemo ser":                  "", // not yet whole
		"12345\n":                          "",
		"12345 \n":                         "",
		"abc mnemo chat\n":                 "",
		"-1 mnemo chat\n":                  "",
		"\x00\x00\x00":                     "",
	} {
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(content), 0); err != nil {
			t.Fatal(err)
		}
		got, ok := lockHolder(f)
		if got != want || ok != (want != "") {
			t.Errorf("lockHolder(%q) = %q, %v; want %q", content, got, ok, want)
		}
	}
}
