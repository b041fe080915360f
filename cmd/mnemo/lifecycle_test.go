package main

// Tests of issue 9 points 4 (forget wins) and 7 (shutdown is bounded): a
// forget while chat or serve runs goes through the control socket and
// drops the user's pending work; SIGTERM and SIGINT stop within
// shutdown.grace, a second one at once. The signal tests run the real main
// in a child process (TestMainChild).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

// journalTurns reads state/reflector/<user>.jsonl: nil when there is no
// file; every line must be a whole JSON object.
func journalTurns(t *testing.T, w *chatWorld, user string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.dir, "data", "state", "reflector", user+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("the journal of %s ends in a torn line: %q", user, data)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("journal line of %s does not parse: %q: %v", user, line, err)
		}
		out = append(out, m)
	}
	return out
}

// gateReflections makes the world's model hold the reflector's first call
// of a run while holding is set, until release is closed, and reports each
// such call on started.
type reflectionGate struct {
	holding atomic.Bool
	release chan struct{}
	once    sync.Once
	started chan string
}

// open lets held and later calls go (also at cleanup, so that a failed
// test does not leave a call held).
func (g *reflectionGate) open() { g.once.Do(func() { close(g.release) }) }

func gateReflections(t *testing.T, w *chatWorld) *reflectionGate {
	g := &reflectionGate{release: make(chan struct{}), started: make(chan string, 16)}
	t.Cleanup(g.open)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if strings.Contains(r.System(), "memory reflector") && r.Chat.Messages[len(r.Chat.Messages)-1].Role == "user" {
			g.started <- r.LastUser()
			if g.holding.Load() {
				<-g.release
			}
		}
		return w.brain.handle(r)
	})
	return g
}

// A forget while serve runs (real serve, Slack fake, fake model) is done by
// serve: one file, then all of a user's memory while a reflection of hers
// runs and another turn waits. The CLI reports success only when the files
// are gone and her journaled turns dropped; nothing comes back, neither
// after the reflector's idle time nor at shutdown, which reflects all that
// is pending.
func TestForgetWhileServeRuns(t *testing.T) {
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "reflector:\n  idle: 50ms\nidentities:\n  ada: [\"slack:T0TEAM/U0ADA\"]\n")
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	gate := gateReflections(t, w)
	logs := &syncWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, logs)
		done <- exitCode(err, logs)
	}()
	if err := slk.WaitConnected(1, 10*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, logs)
	}
	dm := func(user, text string, posts int) {
		t.Helper()
		slk.Message(slacktest.MessageEvent{Channel: "D0" + user, ChannelType: "im", User: user, Text: text})
		if _, err := slk.WaitPosts(posts, 10*time.Second); err != nil {
			t.Fatalf("no reply to %q: %v\n%s", text, err, logs)
		}
		// A streamed reply shows before its task ends (and hands its turn
		// to the reflector): wait for the task.
		logs.waitFor(t, "slack: replied", posts)
	}
	mem := filepath.Join(w.dir, "data", "memory", "ada")
	pid := os.Getpid()

	// One file, through the socket.
	dm("U0ADA", "The logger leaked to stdout; we fixed it with a custom line transport.", 1)
	<-gate.started
	logs.waitFor(t, "reflection: done", 1)
	episode := "episodes/" + time.Now().Format("2006-01") + ".md"
	if !exists(filepath.Join(mem, episode)) {
		t.Fatalf("the reflection wrote no episode\n%s", logs)
	}
	r := cli(t, w.env, "memory", "forget", "ada", episode, "--yes")
	r.want(t, 0, "deleted ada/"+episode+" (", fmt.Sprintf("mnemo: process %d (mnemo serve) owns the data folder; asking it to forget ada/%s…\n", pid, episode))
	if !strings.HasSuffix(r.stdout, fmt.Sprintf("; also dropped 1 turn of short-term history (done by process %d (mnemo serve))\n", pid)) {
		t.Errorf("forget of one file printed %q", r.stdout)
	}
	if exists(filepath.Join(mem, episode)) {
		t.Fatal("forget reported success but the file is still there")
	}

	// All of her memory, while a reflection of hers runs (held in the
	// model) and her next turn waits in the journal.
	gate.holding.Store(true)
	dm("U0ADA", "Hello, I'm Ada Lovelace.", 2)
	<-gate.started // the run has started and is held
	dm("U0ADA", "By the way, I'm Ada Byron now.", 3)
	if turns := journalTurns(t, w, "ada"); len(turns) != 2 || turns[1]["userText"] != "By the way, I'm Ada Byron now." {
		t.Fatalf("before the forget the journal holds %v", turns)
	}
	// The forget stops the running run (held in the model: it never gets
	// its answer) and drops both turns; it reports once the run has ended.
	r = cli(t, w.env, "memory", "forget", "ada", "--yes")
	logs.waitFor(t, "reflection: stopped, the user's memory was forgotten", 1)
	gate.open()
	r.want(t, 0, "deleted all memory of ada: the folder "+mem+" and its 0 memory files; also dropped 2 turns waiting to be reflected", "")
	if !strings.HasSuffix(r.stdout, fmt.Sprintf("(done by process %d (mnemo serve))\n", pid)) {
		t.Errorf("forget printed %q", r.stdout)
	}
	// Done when reported: no folder (the held run's write included), no journal.
	if exists(mem) {
		t.Fatalf("forget reported success but %s exists", mem)
	}
	if turns := journalTurns(t, w, "ada"); turns != nil {
		t.Fatalf("after the forget the journal of ada holds %v", turns)
	}

	// Past the idle time (another user's reflection ran after it) and
	// through shutdown (which reflects everything pending), nothing of
	// hers comes back.
	dm("U0BOB", "hi there", 4)
	if tr := <-gate.started; !strings.Contains(tr, "hi there") {
		t.Fatalf("the next reflection was over %q", tr)
	}
	logs.waitFor(t, "reflection: done", 2)
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d\n%s", code, logs)
	}
	if exists(mem) {
		t.Fatal("forgotten memory was written back")
	}
	for _, tr := range w.brain.transcripts() {
		if strings.Contains(tr, "Ada Byron") {
			t.Fatalf("the turn forgotten while it waited was reflected: %q", tr)
		}
	}
	if n := strings.Count(logs.String(), "control: forget requested by mnemo memory forget"); n != 2 {
		t.Errorf("serve logged %d forget requests, want 2\n%s", n, logs)
	}
}

// Without a running process, forget does it itself under the lock, and
// drops the turns a stopped process left journaled, so the next start does
// not reflect them back.
func TestForgetWithoutARunningProcessDropsTheJournal(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Zhang San.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	// A turn left journaled (a process stopped before reflecting it).
	leaveTurn(t, w, mnemo.Turn{TaskID: "t1", User: "zhangsan", Platform: "console", UserText: "Actually, I'm Zhang Wei.", ReplyText: "Noted."})
	if turns := journalTurns(t, w, "zhangsan"); len(turns) != 1 {
		t.Fatalf("journal before the forget: %v", turns)
	}
	before := len(w.brain.transcripts())

	r := cli(t, w.env, "memory", "forget", "zhangsan", "--yes")
	r.want(t, 0, "", "")
	if want := "deleted all memory of zhangsan: the folder " + filepath.Join(w.dir, "data", "memory", "zhangsan") + " and its 1 memory file; also dropped 1 turn waiting to be reflected\n"; r.stdout != want {
		t.Errorf("forget printed\nstdout %q\nstderr %q\nwant %q", r.stdout, r.stderr, want)
	}
	if journalTurns(t, w, "zhangsan") != nil {
		t.Fatal("the journaled turn was not dropped")
	}
	// The next start replays nothing of his.
	w.chat(t, "", "--user", "someone").want(t, 0, "", "")
	if len(w.brain.transcripts()) != before || exists(filepath.Join(w.dir, "data", "memory", "zhangsan")) {
		t.Fatalf("forgotten turns were reflected at the next start: %q", w.brain.transcripts()[before:])
	}

	// A user with no folder but journaled turns: they are dropped, and
	// said so; with neither, the usual "no memory" error.
	leaveTurn(t, w, mnemo.Turn{TaskID: "t2", User: "newbie", Platform: "console", UserText: "I'm New Bie.", ReplyText: "Noted."})
	cli(t, w.env, "memory", "forget", "newbie").want(t, 1, "", `no memory for user "newbie"`)
	cli(t, w.env, "memory", "forget", "newbie", "--yes").want(t, 0, "newbie has no memory files; also dropped 1 turn waiting to be reflected\n", "")
	cli(t, w.env, "memory", "forget", "newbie", "--yes").want(t, 1, "", `no memory for user "newbie"`)
}

// leaveTurn journals turn for reflection as a process that stopped before
// reflecting it leaves it: a line of the user's reflector journal
// (reflector/journal.go's format; the time now when turn has none).
func leaveTurn(t *testing.T, w *chatWorld, turn mnemo.Turn) {
	t.Helper()
	if turn.Time.IsZero() {
		turn.Time = time.Now()
	}
	line, err := json.Marshal(map[string]any{"taskId": turn.TaskID, "user": turn.User, "platform": turn.Platform,
		"userText": turn.UserText, "replyText": turn.ReplyText, "time": turn.Time})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(w.dir, "data", "state", "reflector")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, turn.User+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

func cancelledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// The control operations of a running serve, asked directly, and the
// CLI's report of what the running process answers.
func TestControlRequests(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	putFile(t, filepath.Join(w.dir, "data", "memory", "alice", "facts", "user.md"), aliceUser)
	env, logs := serveEnv(w)
	// A front end's queued messages are dropped first.
	fa := &fakeAdapter{started: make(chan struct{}), forget: func(user string) int {
		if user == "alice" {
			return 3
		}
		return 0
	}}
	// A holder that fails stops the forget with its reason.
	putFile(t, filepath.Join(w.dir, "data", "state", "chat", "broken.history", "x"), "in the way")
	ctx, cancel := context.WithCancel(context.Background())
	_, done := goServe(t, ctx, env, cfg, func(_ *cliEnv, _ *config.Config, a *app.App) ([]namedAdapter, error) {
		return []namedAdapter{{"fake", fa}}, nil
	})
	<-fa.started
	sock := filepath.Join(w.dir, "data", "state", "mnemo.sock")
	call := func(req control.Request) (string, error) {
		return control.Call(context.Background(), sock, req)
	}
	for _, tc := range []struct {
		req  control.Request
		want string
	}{
		{control.Request{Op: "restart"}, `unknown control operation "restart"; this mnemo knows "forget"`},
		{control.Request{Op: "forget", User: "../etc"}, "bad memory user name"},
		{control.Request{Op: "forget", User: "alice", Path: "../bob/facts/user.md"}, "../bob/facts/user.md"},
		{control.Request{Op: "forget", User: "alice", Path: "facts/none.md"}, "facts/none.md: no such memory file"},
		{control.Request{Op: "forget", User: "broken"}, "the memory is deleted, but not the chat history " + filepath.Join(w.dir, "data", "state", "chat", "broken.history")},
	} {
		if _, err := call(tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.req, err, tc.want)
		}
	}
	// All of a user with no folder and nothing pending is no error for
	// the socket (the CLI decides what to say).
	if msg, err := call(control.Request{Op: "forget", User: "nobody"}); err != nil || msg != "" {
		t.Errorf("forget of nobody = %q, %v", msg, err)
	}
	if msg, err := call(control.Request{Op: "forget", User: "alice", Path: "facts/user.md"}); err != nil || msg != "dropped 3 messages queued for an answer on fake" {
		t.Errorf("forget of one file = %q, %v", msg, err)
	}
	cli(t, w.env, "memory", "forget", "nobody", "--yes").want(t, 1, "", `no memory for user "nobody"`)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "control=") {
		t.Errorf("serve did not log its control socket:\n%s", logs)
	}
}

// When the running process answers with an error, the CLI says which
// process could not do what, and fails.
func TestForgetReportsTheRunningProcessError(t *testing.T) {
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.dir, "data", "memory", "alice", "facts", "user.md"), aliceUser)
	cfg := lockConfig(t, w)
	l, err := lockData(nil, cfg, "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := control.Listen(app.ControlSocket(cfg), func(context.Context, control.Request) (string, error) {
		return "", errors.New("a reflection of alice is still running: context deadline exceeded")
	}, control.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 1, "",
		fmt.Sprintf("mnemo: process %d (mnemo serve) could not forget alice: a reflection of alice is still running: context deadline exceeded\n", os.Getpid()))
	if !exists(filepath.Join(w.dir, "data", "memory", "alice", "facts", "user.md")) {
		t.Fatal("the file went although the forget failed")
	}
}

// chat and serve refuse to start when their control socket cannot be made,
// naming the socket and the fix.
func TestControlSocketInTheWay(t *testing.T) {
	w := newChatWorld(t)
	sock := filepath.Join(w.dir, "data", "state", "mnemo.sock")
	putFile(t, sock, "not a socket")
	want := "mnemo: control socket " + sock + ": a file is in the way; remove it (mnemo memory forget and a second mnemo chat use it to reach the running process)\n"
	w.chat(t, "hi\n").want(t, 1, "", want)
	cfg := slackConfig(t, w)
	env, _ := serveEnv(w)
	var errOut bytes.Buffer
	err := serveWith(context.Background(), env, cfg, nil, listenLocal(t), adapters(namedAdapter{"fake", &fakeAdapter{started: make(chan struct{})}}))
	if code := exitCode(err, &errOut); code != 1 || errOut.String() != want {
		t.Errorf("serve: exit %d, %q", code, errOut.String())
	}
}

// lingeringAdapter stops taking messages at ctx's end but returns only
// when finish is closed, like an adapter whose tasks still run.
type lingeringAdapter struct {
	started, stopped, finish chan struct{}
}

func (l *lingeringAdapter) Run(ctx context.Context) error {
	close(l.started)
	<-ctx.Done()
	close(l.stopped)
	<-l.finish
	return nil
}

func (l *lingeringAdapter) Ready() bool { return true }

func (l *lingeringAdapter) Forget(string) int { return 0 }

// From the first signal on, /readyz says serve is stopping, while the
// adapters still finish their work.
func TestServeIsStoppingFromTheFirstSignal(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	env, _ := serveEnv(w)
	la := &lingeringAdapter{started: make(chan struct{}), stopped: make(chan struct{}), finish: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := goServe(t, ctx, env, cfg, adapters(namedAdapter{"slow", la}))
	base := "http://" + addr
	<-la.started
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz before the signal = %d %q", code, body)
	}
	cancel() // SIGTERM
	<-la.stopped
	if code, body := get(t, base+"/readyz"); code != 503 || body != "stopping\n" {
		t.Errorf("/readyz during the grace = %d %q", code, body)
	}
	close(la.finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A chat whose input breaks (a line over the bound) exits 1 with the
// cause, after saving what it has.
func TestChatInputErrorIsAFailure(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "hello\n"+strings.Repeat("x", 1<<20+1)+"\n", "--user", "ada").want(t, 1, "Noted.\n", "console: a line is longer than")
}
