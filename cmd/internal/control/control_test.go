package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/logtest"
	"github.com/mnemo-agent/mnemo/cmd/internal/nobodytest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("CONTROL_TEST_CALL"); path != "" {
		// The other user's client of TestOtherUsersAreRefused.
		msg, err := Call(context.Background(), path, Request{Op: "forget", User: "alice"})
		fmt.Printf("answer %q, error: %v\n", msg, err)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// shortDir is a private folder whose socket paths fit the platform's limit
// whatever TMPDIR is.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func listen(t *testing.T, path string, h Handler) (*Server, *logtest.Buffer) {
	t.Helper()
	var logs logtest.Buffer
	s, err := Listen(path, h, Options{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, &logs
}

func TestCallIsAnsweredWhenTheWorkIsDone(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	var got []Request
	s, _ := listen(t, path, func(_ context.Context, r Request) (string, error) {
		got = append(got, r)
		if r.User == "bob" {
			return "", errors.New("bob: no such user; mnemo memory users lists them")
		}
		return "forgot " + r.User + " " + r.Path, nil
	})
	if s.Path() != path {
		t.Errorf("Path() = %q", s.Path())
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v, %v", fi.Mode(), err)
	}
	msg, err := Call(context.Background(), path, Request{Op: "forget", User: "alice", Path: "facts/pets.md"})
	if err != nil || msg != "forgot alice facts/pets.md" {
		t.Fatalf("Call = %q, %v", msg, err)
	}
	if len(got) != 1 || got[0] != (Request{Op: "forget", User: "alice", Path: "facts/pets.md"}) {
		t.Errorf("handler got %+v", got)
	}
	// The server's error reaches the caller word for word.
	if _, err := Call(context.Background(), path, Request{Op: "forget", User: "bob"}); err == nil || err.Error() != "bob: no such user; mnemo memory users lists them" {
		t.Errorf("Call with a failing handler = %v", err)
	}
	// No temp socket is left beside it.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("folder holds %d entries, want only the socket", len(ents))
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left after Close: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := Call(context.Background(), path, Request{Op: "forget"}); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), path) {
		t.Errorf("Call after Close = %v", err)
	}
}

func TestListenReplacesAStaleSocketOnly(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "mnemo.sock")
	// A socket a killed process left: it exists, nobody listens.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Call(context.Background(), path, Request{Op: "x"}); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Call on a stale socket = %v", err)
	}
	listen(t, path, func(context.Context, Request) (string, error) { return "ok", nil })
	if msg, err := Call(context.Background(), path, Request{Op: "x"}); err != nil || msg != "ok" {
		t.Fatalf("Call after the stale socket was replaced = %q, %v", msg, err)
	}

	// Anything but a socket is left alone.
	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "dir.sock"), 0o700)
	os.Symlink(path, filepath.Join(dir, "link.sock"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.sock"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"file.sock": "a file", "dir.sock": "a folder", "link.sock": "a symbolic link", "fifo.sock": "a special file (p---------)"} {
		if _, err := Listen(filepath.Join(dir, name), nil, Options{}, nil); err == nil || err.Error() != "control socket "+filepath.Join(dir, name)+": "+want+" is in the way; remove it" {
			t.Errorf("Listen over %s = %v", want, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("the file in the way was changed")
	}
}

// A stale socket that cannot be removed, and a folder where no socket can
// be made, are errors naming the socket.
func TestListenInAReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores folder permissions")
	}
	ro := filepath.Join(shortDir(t), "ro")
	os.Mkdir(ro, 0o700)
	stale, _ := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(ro, "s"), Net: "unix"})
	stale.SetUnlinkOnClose(false)
	stale.Close()
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	if _, err := Listen(filepath.Join(ro, "s"), nil, Options{}, nil); err == nil || !strings.Contains(err.Error(), "remove the one a stopped process left") {
		t.Errorf("Listen where the stale socket cannot go = %v", err)
	}
	if _, err := Listen(filepath.Join(ro, "new.sock"), nil, Options{}, nil); err == nil || !strings.Contains(err.Error(), "control socket") {
		t.Errorf("Listen in a read-only folder = %v", err)
	}
}

func TestListenInAMissingFolder(t *testing.T) {
	path := filepath.Join(shortDir(t), "missing", "mnemo.sock")
	if _, err := Listen(path, nil, Options{}, nil); err == nil || !strings.HasPrefix(err.Error(), "control socket "+path+": ") || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Listen in a missing folder = %v", err)
	}
}

// The socket is never reachable by another user, not even before its mode
// is set: with umask 000 and a state folder open to all, it is made in a
// folder only its user may enter, already 0600 when it is renamed into
// place, and nothing of the making is left behind.
func TestListenMakesTheSocketWhereNobodyElseCanReach(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mnemo.sock")
	seen := false
	s, err := listenShowing(path, func(context.Context, Request) (string, error) { return "ok", nil }, Options{}, nil, func(tmp string) {
		seen = true
		parent, err := os.Stat(filepath.Dir(tmp))
		if err != nil || filepath.Dir(filepath.Dir(tmp)) != dir || parent.Mode().Perm() != 0o700 {
			t.Errorf("the socket is made in %s (%v, %v); want a folder of its own in %s, mode 0700", filepath.Dir(tmp), parent, err, dir)
		}
		if fi, err := os.Lstat(tmp); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the socket before the rename: %v, %v; want mode 0600", fi, err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if !seen {
		t.Fatal("the socket was not shown before the rename")
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket in place: %v, %v", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the state folder holds %v; want the socket alone", entries)
	}
	if msg, err := Call(context.Background(), path, Request{Op: "x"}); err != nil || msg != "ok" {
		t.Errorf("Call = %q, %v", msg, err)
	}
}

func TestListenPathTooLong(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", maxPath) + "/mnemo.sock"
	_, err := Listen(long, nil, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "set state.dir to a shorter folder") {
		t.Fatalf("Listen(long path) = %v", err)
	}
}

// rawExchange writes raw bytes as a client and returns the answer line.
func rawExchange(t *testing.T, path string, send []byte, closeWrite bool) Response {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(send); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		c.(*net.UnixConn).CloseWrite()
	}
	line, err := readLine(c, MaxResponse)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseResponse(line)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBadRequestsAreAnsweredWithTheReason(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	calls := 0
	listen(t, path, func(context.Context, Request) (string, error) { calls++; return "done", nil })
	for _, tc := range []struct {
		send       string
		closeWrite bool
		want       string
	}{
		{"not json\n", false, "control: bad request: invalid character"},
		{`{"op":"forget","who":"alice"}` + "\n", false, `unknown field "who"`},
		{`{"user":"alice"}` + "\n", false, `"op" is missing`},
		{`{"op":"forget"} {"op":"again"}` + "\n", false, "data after the JSON object"},
		{`{"op":"forget"`, true, "control: reading the request: unexpected EOF"},
		{strings.Repeat("x", MaxRequest+10), false, "longer than 4096 bytes"},
	} {
		r := rawExchange(t, path, []byte(tc.send), tc.closeWrite)
		if r.OK || !strings.Contains(r.Error, tc.want) {
			t.Errorf("send %.40q: answer %+v, want an error with %q", tc.send, r, tc.want)
		}
	}
	if calls != 0 {
		t.Errorf("the handler ran %d times for bad requests", calls)
	}
	if r := rawExchange(t, path, []byte(`{"op":"ping"}`+"\n"), false); !r.OK || r.Message != "done" {
		t.Errorf("good request after bad ones: %+v", r)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"op":"forget","user":"a","path":"facts/x.md"}`, true},
		{`{"op":"forget"}` + "\n", true},
		{`{"op":""}`, false},
		{`{"op":"a"}` + "\n\n", false},
		{`{"op":"a"}` + "\n" + `{"op":"b"}`, false},
		{"", false},
		{`[]`, false},
		{`{"op":1}`, false},
	} {
		if _, err := ParseRequest([]byte(tc.line)); (err == nil) != tc.ok {
			t.Errorf("ParseRequest(%q) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"ok":true}`, true},
		{`{"ok":true,"message":"m"}`, true},
		{`{"ok":false,"error":"e"}`, true},
		{`{"ok":false}`, false},
		{`{"ok":false,"error":""}`, false},
		{`{"ok":"yes"}`, false},
		{`{"ok":true,"extra":1}`, false},
		{`{"ok":true,"message":"` + strings.Repeat("m", MaxResponse) + `"}`, false},
	} {
		if _, err := ParseResponse([]byte(tc.line)); (err == nil) != tc.ok {
			t.Errorf("ParseResponse(%.60q) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
}

// fakeServer accepts one connection on path and lets the test answer it.
func fakeServer(t *testing.T, path string, answer func(c net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := readLine(c, MaxRequest); err != nil {
			return
		}
		answer(c)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
}

func TestCallFailures(t *testing.T) {
	dir := shortDir(t)
	none := filepath.Join(dir, "none.sock")
	_, err := Call(context.Background(), none, Request{Op: "x"})
	var ns *NoServerError
	if !errors.Is(err, ErrNoServer) || !errors.As(err, &ns) || ns.Path != none || ns.Err.Error() != "connect: no such file or directory" ||
		err.Error() != "nothing answers on the control socket "+none+": connect: no such file or directory" || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Call without a socket = %v", err)
	}

	hangUp := filepath.Join(dir, "hangup.sock")
	fakeServer(t, hangUp, func(net.Conn) {})
	if _, err := Call(context.Background(), hangUp, Request{Op: "x"}); err == nil || !strings.Contains(err.Error(), "hung up without an answer (did it stop?)") {
		t.Errorf("Call to a server that hangs up = %v", err)
	}

	garbled := filepath.Join(dir, "garbled.sock")
	fakeServer(t, garbled, func(c net.Conn) { c.Write([]byte("{\"ok\":false}\n")) })
	if _, err := Call(context.Background(), garbled, Request{Op: "x"}); err == nil || !strings.Contains(err.Error(), "control: bad response: neither ok nor an error") {
		t.Errorf("Call to a server answering nonsense = %v", err)
	}

	long := filepath.Join(dir, "long.sock")
	fakeServer(t, long, func(c net.Conn) { c.Write(bytes.Repeat([]byte("x"), MaxResponse+1)) })
	if _, err := Call(context.Background(), long, Request{Op: "x"}); err == nil || !strings.Contains(err.Error(), "longer than 65536 bytes") {
		t.Errorf("Call to a server answering too much = %v", err)
	}

	// The caller stops waiting (Ctrl-C): it says the work may still finish.
	slow := filepath.Join(dir, "slow.sock")
	started := make(chan struct{})
	release := make(chan struct{})
	listen(t, slow, func(context.Context, Request) (string, error) {
		close(started)
		<-release
		return "done", nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Call(ctx, slow, Request{Op: "forget"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the running process may still finish the request") {
		t.Errorf("Call cancelled while waiting = %v", err)
	}
	close(release)

	// A context that has ended before the call.
	if _, err := Call(ctx, slow, Request{Op: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Call with a done context = %v", err)
	}
}

// Close waits for the request in progress; when its context ends first it
// cancels the handler's context and still waits for the handler to return.
func TestCloseWaitsForRequestsInProgress(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "mnemo.sock")
	started := make(chan struct{})
	release := make(chan struct{})
	s, _ := listen(t, path, func(ctx context.Context, _ Request) (string, error) {
		close(started)
		select {
		case <-release:
			return "finished", nil
		case <-ctx.Done():
			return "", errors.New("cancelled: " + ctx.Err().Error())
		}
	})
	answer := make(chan string, 1)
	go func() {
		msg, err := Call(context.Background(), path, Request{Op: "forget"})
		if err != nil {
			msg = err.Error()
		}
		answer <- msg
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := <-answer; got != "finished" {
		t.Errorf("the request in progress during Close got %q", got)
	}

	path2 := filepath.Join(dir, "two.sock")
	started2 := make(chan struct{})
	s2, _ := listen(t, path2, func(ctx context.Context, _ Request) (string, error) {
		close(started2)
		<-ctx.Done()
		return "", errors.New("cancelled at shutdown")
	})
	go func() {
		_, err := Call(context.Background(), path2, Request{Op: "forget"})
		answer <- err.Error()
	}()
	<-started2
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-answer; got != "cancelled at shutdown" {
		t.Errorf("the cancelled request got %q", got)
	}
}

// A client that leaves before its answer does not stop the work; the
// server logs that the answer could not be sent.
func TestClientLeavesBeforeTheAnswer(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	started := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan struct{})
	s, logs := listen(t, path, func(context.Context, Request) (string, error) {
		close(started)
		<-release
		close(finished)
		return strings.Repeat("a long answer ", 1<<12), nil
	})
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(`{"op":"forget","user":"alice"}` + "\n"))
	<-started
	c.Close()
	close(release)
	<-finished
	s.Close(context.Background())
	if !strings.Contains(logs.String(), "control: could not send the answer; the client left") || !strings.Contains(logs.String(), "user=alice") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

// nobody is the other local user of the tests that need one.
const nobody = nobodytest.UID

// asNobody is this test binary run as user nobody with CAP_DAC_OVERRIDE:
// a process that the socket's mode and its folder no longer keep out, as
// if they had been changed.
func asNobody(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	return nobodytest.Command(t, true, env, "-test.run=^$")
}

// A caller is answered only when it runs as the server's user or root
// (SO_PEERCRED): another user who gets to the socket, past its mode and
// its folder, is refused and told why, and nothing is done; the refusal is
// logged (issue 23, point 2).
func TestOtherUsersAreRefused(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "mnemo.sock")
	var calls []Request
	var mu sync.Mutex
	_, logs := listen(t, path, func(_ context.Context, r Request) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r)
		return "forgot " + r.User, nil
	})
	out, err := asNobody(t, "CONTROL_TEST_CALL="+path).CombinedOutput()
	if err != nil {
		t.Fatalf("the client as nobody: %v\n%s", err, out)
	}
	want := `answer "", error: control: refused: the caller runs as uid 65534; this mnemo answers only its own user (uid 0) and root: run the command as that user`
	if !strings.Contains(string(out), want) {
		t.Errorf("nobody's client got %q; want %q", out, want)
	}
	mu.Lock()
	if len(calls) != 0 {
		t.Errorf("the handler ran for nobody: %v", calls)
	}
	mu.Unlock()
	if !strings.Contains(logs.String(), "control: refused a connection") || !strings.Contains(logs.String(), "uid 65534") {
		t.Errorf("the refusal was not logged:\n%s", logs)
	}
	if msg, err := Call(context.Background(), path, Request{Op: "forget", User: "bob"}); err != nil || msg != "forgot bob" {
		t.Errorf("root's call = %q, %v", msg, err)
	}
}

// A connection whose peer cannot be told is refused (here: one already
// closed), and the peer of a live one is this process's user.
func TestPeerUID(t *testing.T) {
	path := filepath.Join(shortDir(t), "p.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	if uid, err := peerUID(sc); err != nil || uid != os.Geteuid() {
		t.Errorf("peerUID = %d, %v; want %d", uid, err, os.Geteuid())
	}
	s := &Server{owner: os.Geteuid()}
	if err := s.allowed(sc); err != nil {
		t.Errorf("own user refused: %v", err)
	}
	sc.Close()
	if err := s.allowed(sc); err == nil || !strings.Contains(err.Error(), "cannot tell which user connected") {
		t.Errorf("a closed connection: %v", err)
	}
}
