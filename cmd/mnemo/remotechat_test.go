package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"go.uber.org/goleak"
)

// remoteWait bounds the waits of these tests; reached only when one fails.
const remoteWait = 30 * time.Second

// leakCheck checks, once the test and its cleanups (the fakes) are done,
// that no goroutine started during it is left.
func leakCheck(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// startOwner runs `mnemo chat --user alice` piped, owning w's data folder,
// and returns it once it answered a first message (its control socket is
// served by then).
func startOwner(t *testing.T, w *chatWorld) *pipedChat {
	t.Helper()
	owner := startPipedChat(t, w, "--user", "alice")
	owner.send(t, "hi there")
	owner.waitOut(t, "Noted.\n")
	return owner
}

// serveOwner runs `mnemo serve` (with a fake Slack), owning w's data
// folder, until stop, which returns its exit code.
func serveOwner(t *testing.T, w *chatWorld) (logs *syncWriter, stop func() int) {
	t.Helper()
	w.fakeSlack(t, "xoxb-test", "xapp-test")
	ln := listenLocal(t)
	addr := ln.Addr().String()
	ln.Close()
	logs = &syncWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", addr}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, logs)
		done <- exitCode(err, logs)
	}()
	logs.waitLogged(t, remoteWait, "serve: running")
	code := -1
	stopped := false
	stop = func() int {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return logs, stop
}

// A second chat on a folder a chat owns talks through it: its replies are
// the owner's model calls, its turns are reflected by the owner under its
// own user, /memory answers for that user; a chat whose environment has
// no model at all gets in the same way. The owner's own chat goes on.
func TestSecondChatTalksThroughTheOwningChat(t *testing.T) {
	leakCheck(t)
	w := newChatWorld(t)
	w.putMemory(t, "carol/facts/user.md", "# User Facts\n\n> Summary: user name\n\n- Name: Caroline\n")
	owner := startOwner(t, w)

	r := w.chat(t, "Hello, I'm Bob Smith.\nWhat's my name?\n/memory\n", "--user", "bob")
	r.want(t, 0, "Noted.\nI don't know your name yet.\n", "")
	if r.stderr != "" {
		t.Errorf("a piped second chat said on stderr: %q", r.stderr)
	}
	// Without a model in its environment: the owner's is used.
	noModel := map[string]string{"MNEMO_DATA_DIR": w.env["MNEMO_DATA_DIR"], "MNEMO_OLLAMA_URL": "http://127.0.0.1:1/v1"}
	var out, errOut syncWriter
	err := run(stopOn(context.Background()), []string{"chat", "--user", "carol"}, func(k string) string { return noModel[k] },
		strings.NewReader("Hello, I'm Carol Jones.\n"), &out, &errOut)
	if code := exitCode(err, &errOut); code != 0 || out.String() != "Noted.\n" {
		t.Fatalf("chat without a model: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	var asked []string
	for _, q := range w.srv.Requests() {
		if !strings.Contains(q.System(), "memory reflector") {
			asked = append(asked, q.LastUser())
		}
	}
	if want := []string{"hi there", "Hello, I'm Bob Smith.", "What's my name?", "Hello, I'm Carol Jones."}; fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("the model was asked %q, want %q", asked, want)
	}
	if exists(filepath.Join(w.dir, "data", "memory", "bob")) {
		t.Error("bob's turns were reflected before the owner's reflector ran them")
	}
	owner.send(t, "still here")
	owner.waitOut(t, "Noted.\nNoted.\n")
	if code := owner.end(t); code != 0 {
		t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
	}
	// The owner reflected each person's turns in their own folder.
	if got := w.file(t, "bob/facts/user.md"); !strings.Contains(got, "- Name: Bob Smith") {
		t.Errorf("bob/facts/user.md = %q", got)
	}
	if got := w.file(t, "carol/facts/user.md"); !strings.Contains(got, "- Name: Carol Jones") {
		t.Errorf("carol/facts/user.md = %q", got)
	}
	// Her file as it was before the chat is kept: the change can be undone.
	cli(t, w.env, "memory", "history", "carol", "facts/user.md").want(t, 0, "as found at start", "")
	for _, tr := range w.brain.transcripts() {
		if strings.Contains(tr, "Bob Smith") && (strings.Contains(tr, "hi there") || strings.Contains(tr, "Carol")) {
			t.Errorf("bob's turns were reflected with another's:\n%s", tr)
		}
	}
	// /memory said what the owner's own chat says for bob (nothing then).
	local := w.chat(t, "/memory\n", "--user", "nobody")
	if !strings.HasSuffix(r.stdout, strings.ReplaceAll(local.stdout, "nobody", "bob")) {
		t.Errorf("/memory through the owner %q, in a chat of its own %q", r.stdout, local.stdout)
	}
	// Now that nobody owns the folder, bob chats on his own and is remembered.
	w.chat(t, "What's my name?\n", "--user", "bob").want(t, 0, "Your name is Bob Smith.\n", "")
	// A socket a dead owner left, and no model: the model error, as before.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(w.dir, "data", "state", "mnemo.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	errOut = syncWriter{}
	err = run(stopOn(context.Background()), []string{"chat", "--user", "carol"}, func(k string) string { return noModel[k] },
		strings.NewReader("hi\n"), io.Discard, &errOut)
	if code := exitCode(err, &errOut); code != 2 || !strings.Contains(errOut.String(), "OPENAI_BASE_URL") {
		t.Errorf("no model, no owner: exit %d, stderr %q", code, errOut.String())
	}
}

// With serve owning the folder: a second chat is answered, /memory share
// and /forget act for its user through serve; when serve stops, the chat
// still open is told so and exits 1.
func TestSecondChatThroughServeEndsWhenServeStops(t *testing.T) {
	w := newChatWorld(t)
	w.putMemory(t, "bob/facts/food.md", "# Food\n\n> Summary: likes\n\n- Likes: tea\n")
	logs, stop := serveOwner(t, w)

	r := w.chat(t, "/memory share facts/food.md\n/memory share facts/none.md\n/memory\nhello\n", "--user", "bob")
	r.want(t, 0, "`facts/food.md` is now", "")
	if !strings.Contains(r.stdout, "You have no memory file `facts/none.md`") || !strings.Contains(r.stdout, "facts/food.md") || !strings.HasSuffix(r.stdout, "Noted.\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(w.dir, "data", "memory", "bob", "facts", "food.md")); err != nil || !strings.Contains(string(b), "shared") {
		t.Errorf("food.md after /memory share: %q, %v", b, err)
	}
	w.chat(t, "/forget\n/forget yes\n", "--user", "bob").want(t, 0, "Type **/forget yes** to confirm (within 10 minutes); anything else cancels.\nDone: I deleted everything I remembered about you.\n", "")
	if exists(filepath.Join(w.dir, "data", "memory", "bob")) {
		t.Error("/forget yes through serve left bob's folder")
	}

	open := startPipedChat(t, w, "--user", "dana")
	open.send(t, "Hello, I'm Dana Scully.")
	open.waitOut(t, "Noted.\n")
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, logs.String())
	}
	select {
	case err := <-open.done:
		if code := exitCode(err, &open.errOut.b); code != 1 {
			t.Errorf("the open chat exited %d", code)
		}
	case <-time.After(remoteWait):
		t.Fatal("the open chat did not end when serve stopped")
	}
	if want := "(mnemo serve) stopped, and this chat with it (what it answered is remembered); run mnemo chat again to go on\n"; !strings.HasSuffix(open.errOut.String(), want) {
		t.Errorf("the open chat said %q", open.errOut.String())
	}
	// Serve reflected dana's turn at its shutdown.
	if got := w.file(t, "dana/facts/user.md"); !strings.Contains(got, "- Name: Dana Scully") {
		t.Errorf("dana/facts/user.md = %q", got)
	}
	open.in.Close()
}

// A client that vanishes while its reply is written: the owner finishes
// the reply (the message was taken), remembers it, keeps serving others,
// and leaks nothing.
func TestSecondChatVanishingMidReply(t *testing.T) {
	leakCheck(t)
	w := newChatWorld(t)
	scriptThinker(w, func(user string, _ int) openaitest.Reply {
		if strings.Contains(user, "slowly") {
			return openaitest.Text("Once upon a time there was a very long story.").WithPauseAfter(2)
		}
		return openaitest.Text("Noted.")
	})
	owner := startOwner(t, w)
	sock := filepath.Join(w.dir, "data", "state", "mnemo.sock")
	c, err := control.Open(context.Background(), sock, control.Request{Op: app.OpChat, User: "erin", Arg: app.ChatProtocol})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(control.Event{Type: app.EvMessage, ID: "ERIN1", Text: "tell me slowly, I'm Erin Hale."}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Recv(); err != nil || e.Type != app.EvText {
		t.Fatalf("first event %+v, %v", e, err)
	}
	w.srv.WaitPaused(1, remoteWait)
	c.Close() // gone mid-reply
	w.srv.Resume()
	w.chat(t, "hello\n", "--user", "bob").want(t, 0, "Noted.\n", "")
	if code := owner.end(t); code != 0 {
		t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
	}
	tr := w.reflected()
	if !strings.Contains(tr, "tell me slowly") || !strings.Contains(tr, "Once upon a time there was a very long story.") {
		t.Errorf("the vanished chat's turn was not reflected whole:\n%s", tr)
	}
}

// Refusals, each saying why and what to do: an owner that does not answer
// on the socket, an older owner, a full house, a client of another
// protocol version, a client that breaks the protocol.
func TestSecondChatRefusals(t *testing.T) {
	leakCheck(t)
	w := newChatWorld(t)
	data := w.env["MNEMO_DATA_DIR"]
	cfg := lockConfig(t, w)
	l, err := lockData(nil, cfg, "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(w.dir, "data", "state", "mnemo.sock")
	holder := fmt.Sprintf("process %d (mnemo serve)", os.Getpid())
	w.chat(t, "hi\n", "--user", "bob").want(t, 1, "", fmt.Sprintf("mnemo: data folder %s is in use by %s, which does not answer on the control socket %s (connect: no such file or directory); "+
		"if it is starting or stopping, run this again in a moment; if it is an older mnemo or runs as another user, stop it or point --config / MNEMO_DATA_DIR elsewhere\n", data, holder, sock))

	// An older owner: it knows forget and access only.
	old, err := control.Listen(sock, func(_ context.Context, r control.Request) (string, error) {
		return "", fmt.Errorf("unknown control operation %q; this mnemo knows %q and %q", r.Op, app.OpForget, app.OpAccess)
	}, control.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.chat(t, "hi\n", "--user", "bob").want(t, 1, "", "mnemo: data folder "+data+" is in use by "+holder+`, an older mnemo that cannot take a second chat (it said: unknown control operation "chat"; this mnemo knows "forget" and "access"); restart it with this mnemo, or stop it to chat here`)
	old.Close(context.Background())
	l.Close()
	if n := len(w.srv.Requests()); n != 0 {
		t.Errorf("refused chats called the model %d times", n)
	}

	owner := startOwner(t, w)
	// Another protocol version, a bad user.
	if _, err := control.Open(context.Background(), sock, control.Request{Op: app.OpChat, User: "bob", Arg: "99"}); err == nil ||
		err.Error() != `this mnemo speaks chat protocol 2 and the second chat "99": run both from the same mnemo version` {
		t.Errorf("another version: %v", err)
	}
	if _, err := control.Open(context.Background(), sock, control.Request{Op: app.OpChat, User: "../x", Arg: app.ChatProtocol}); err == nil || !strings.Contains(err.Error(), "chat: --user: bad memory user name") {
		t.Errorf("bad user: %v", err)
	}
	// A client that breaks the protocol is told why and hung up on.
	for _, bad := range []control.Event{{Type: "dance"}, {Type: app.EvMessage, ID: "../1", Text: "hi"}, {Type: app.EvMessage, ID: "A1"}} {
		c, err := control.Open(context.Background(), sock, control.Request{Op: app.OpChat, User: "bob", Arg: app.ChatProtocol})
		if err != nil {
			t.Fatal(err)
		}
		c.Send(bad)
		if e, err := c.Recv(); err != nil || e.Type != app.EvEnd || e.Error == "" {
			t.Errorf("%+v: got %+v, %v", bad, e, err)
		}
		if _, err := c.Recv(); err != io.EOF { // hung up: its place is free
			t.Errorf("%+v: after the end %v", bad, err)
		}
		c.Close()
	}
	// A full house: the next chat is told to wait for one to end.
	var open []*control.Conn
	for range app.MaxRemoteChats {
		c, err := control.Open(context.Background(), sock, control.Request{Op: app.OpChat, User: "bob", Arg: app.ChatProtocol})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	w.chat(t, "hi\n", "--user", "bob").want(t, 1, "", fmt.Sprintf(`(mnemo chat) owns the data folder %s and did not take this chat: control: refused: %d "chat" sessions are open, the most this process takes; end one and try again`, data, app.MaxRemoteChats))
	for _, c := range open {
		c.Close()
	}
	if code := owner.end(t); code != 0 {
		t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
	}
}

// A second chat's own end: EOF ends it (exit 0) while the owner runs on;
// a second signal stops its wait for a reply (exit 130).
func TestSecondChatSignals(t *testing.T) {
	w := newChatWorld(t)
	scriptThinker(w, func(user string, _ int) openaitest.Reply {
		if strings.Contains(user, "forever") {
			return openaitest.Text("this takes a while to write").WithPauseAfter(1)
		}
		return openaitest.Text("Noted.")
	})
	owner := startOwner(t, w)
	stop, cancel := context.WithCancel(context.Background())
	abort := make(chan struct{})
	inR, inW := io.Pipe()
	var out, errOut syncWriter
	done := make(chan error, 1)
	env := maps.Clone(w.env)
	go func() {
		done <- run(signals{stop: stop, abort: abort}, []string{"chat", "--user", "bob"}, func(k string) string { return env[k] }, inR, &out, &errOut)
	}()
	fmt.Fprintln(inW, "take forever")
	w.srv.WaitPaused(1, remoteWait)
	cancel()
	close(abort)
	select {
	case err := <-done:
		if code := exitCode(err, &errOut.b); code != exitAborted {
			t.Errorf("exit %d after a second signal; stderr %q", code, errOut.String())
		}
	case <-time.After(remoteWait):
		t.Fatal("the second chat did not stop at the second signal")
	}
	inW.Close()
	w.srv.Resume()
	if code := owner.end(t); code != 0 {
		t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
	}
}

// A second chat at a terminal, through the owner: the reply is shown as
// in a chat of its own; Ctrl-C cancels a slow reply and the owner does not
// remember that turn; /memory answers; Ctrl-D ends it (exit 0) and the up
// arrow's history is kept in the state folder.
func TestSecondChatAtATerminal(t *testing.T) {
	w := newChatWorld(t)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if !strings.Contains(r.System(), "memory reflector") && strings.Contains(r.LastUser(), "take your time") {
			return openaitest.Text("too late").WithDelay(time.Hour), true // ends when the owner cancels the call
		}
		return w.brain.handle(r)
	})
	w.putMemory(t, "bob/facts/food.md", "# Food\n\n> Summary: likes\n\n- Likes: green tea\n")
	owner := startOwner(t, w)
	c := startTTYChat(t, w, "bob")
	tty := c.tty
	tty.WaitFor(t, "you> ")
	tty.Type(t, "Hello, I'm Bob Smith.\r")
	tty.WaitFor(t, "Noted.")
	n := len(w.srv.Requests())
	tty.Type(t, "take your time with this one\r")
	tty.WaitFor(t, "thinking…")
	w.srv.WaitRequests(n+1, consoletest.Wait)
	tty.Type(t, "\x03")
	tty.WaitFor(t, "reply cancelled")
	tty.Type(t, "/memory\r")
	tty.WaitFor(t, "about you, bob")
	tty.WaitFor(t, "green tea")
	c.endAtCtrlD(t, consoletest.Wait)
	if s := tty.Screen(); strings.Contains(s, "too late") || strings.Contains(s, "Sorry") {
		t.Errorf("a cancelled reply was shown: %q", s)
	}
	if e := c.errOut.String(); !strings.Contains(e, "(mnemo chat) owns this data folder: this chat talks through it") || !strings.Contains(e, "(mnemo chat) keeps what is worth remembering of this chat.") {
		t.Errorf("stderr:\n%s", e)
	}
	hist := filepath.Join(w.dir, "data", "state", "chat", "bob.history")
	if b, err := os.ReadFile(hist); err != nil || string(b) != "Hello, I'm Bob Smith.\ntake your time with this one\n/memory\n" {
		t.Errorf("history %q, %v", b, err)
	}
	if code := owner.end(t); code != 0 {
		t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
	}
	if got := w.file(t, "bob/facts/user.md"); !strings.Contains(got, "- Name: Bob Smith") {
		t.Errorf("bob/facts/user.md = %q", got)
	}
	for _, tr := range w.brain.transcripts() {
		if strings.Contains(tr, "take your time") {
			t.Errorf("a cancelled turn was reflected:\n%s", tr)
		}
	}
}

// The owning chat reaches its end of input while a reply to a chat through
// it is being written: the reply is finished and shown (and remembered),
// then the second chat is told the owner stopped (exit 1); the owner exits 0.
func TestOwnerEndsDuringASecondChatsReply(t *testing.T) {
	leakCheck(t)
	w := newChatWorld(t)
	scriptThinker(w, func(user string, n int) openaitest.Reply {
		switch {
		case !strings.Contains(user, "slowly"):
			return openaitest.Text("Noted.")
		case n == 1:
			return openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`))
		}
		return openaitest.Text("Here is the whole story, told slowly.").WithPauseAfter(2)
	})
	w.putMemory(t, "bob/facts/user.md", "# User\n\n> Summary: user name\n\n- Name: Bob\n")
	owner := startPipedChat(t, w, "--user", "alice", "--verbose")
	owner.send(t, "hi there")
	owner.waitOut(t, "Noted.\n")
	// A client that opened a chat and never reads nor writes: the owner
	// does not wait on it.
	idle, err := control.Open(context.Background(), filepath.Join(w.dir, "data", "state", "mnemo.sock"), control.Request{Op: app.OpChat, User: "idle", Arg: app.ChatProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	bob := startPipedChat(t, w, "--user", "bob")
	bob.send(t, "tell me slowly")
	w.srv.WaitPaused(1, remoteWait)
	owner.in.Close()
	owner.errOut.waitLogged(t, remoteWait, "control: stopping: a reply to a chat through this process is being written")
	w.srv.Resume()
	bob.waitOut(t, "Here is the whole story, told slowly.\n")
	select {
	case err := <-bob.done:
		if code := exitCode(err, &bob.errOut.b); code != 1 || !strings.HasSuffix(bob.errOut.String(), "(mnemo chat) stopped, and this chat with it (what it answered is remembered); run mnemo chat again to go on\n") {
			t.Errorf("bob: exit %d, stderr %q", code, bob.errOut.String())
		}
	case <-time.After(remoteWait):
		t.Fatal("the second chat did not end with its owner")
	}
	bob.in.Close()
	select {
	case err := <-owner.done:
		if code := exitCode(err, &owner.errOut.b); code != 0 {
			t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
		}
	case <-time.After(remoteWait):
		t.Fatal("the owner did not end")
	}
	if e, err := idle.Recv(); err != nil || e.Type != app.EvEnd || e.Text != app.EndStopping {
		t.Errorf("the idle client got %+v, %v", e, err)
	}
	if tr := w.reflected(); !strings.Contains(tr, "Here is the whole story, told slowly.") {
		t.Errorf("the reply finished at the owner's end was not reflected:\n%s", tr)
	}
}

// An owner that misbehaves (a stand-in holding the lock and serving the
// chat op itself): every misstep ends in a line that says what happened,
// never a hang or a panic.
func TestSecondChatWithAMisbehavingOwner(t *testing.T) {
	leakCheck(t)
	w := newChatWorld(t)
	l, err := lockData(nil, lockConfig(t, w), "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	owner := func(_ context.Context, _ control.Request, s *control.Session) error {
		s.Open("")
		for e := range s.Events() {
			var out []control.Event
			switch {
			case e.Text == "/memory": // a command's answer comes whole
				out = []control.Event{{Type: app.EvReply, Text: "shown"}}
			case e.Text == "fail":
				out = []control.Event{{Type: app.EvText, Text: "par"}, {Type: app.EvReply, Error: "agent: the task could not run"}}
			case e.Text == "odd":
				out = []control.Event{{Type: "dance"}}
			case e.Text == "bye":
				out = []control.Event{{Type: app.EvEnd, Error: "too tired"}}
			case e.Text == "vanish":
				return nil
			default:
				out = []control.Event{{Type: app.EvStatus, Text: "reading"}, {Type: app.EvText, Text: "Hi "}, {Type: app.EvText, Text: "there."},
					{Type: app.EvReply, Streamed: true}}
			}
			for _, o := range out {
				s.Send(o)
			}
		}
		return nil
	}
	sock := filepath.Join(w.dir, "data", "state", "mnemo.sock")
	srv, err := control.Listen(sock, nil, control.Options{Sessions: map[string]control.SessionHandler{app.OpChat: owner}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	holder := fmt.Sprintf("process %d (mnemo serve)", os.Getpid())
	r := w.chat(t, "hello\n/memory\nhello\n", "--user", "bob")
	r.want(t, 0, "Hi there.\nshown\nHi there.\n", "")
	w.chat(t, "fail\n", "--user", "bob").want(t, 1, "par", "mnemo: agent: the task could not run\n")
	w.chat(t, "odd\n", "--user", "bob").want(t, 1, "", "mnemo: "+holder+` sent a "dance" event during a reply; run both chats from the same mnemo version`)
	w.chat(t, "bye\n", "--user", "bob").want(t, 1, "", "mnemo: "+holder+" ended this chat: too tired\n")
	w.chat(t, "vanish\n", "--user", "bob").want(t, 1, "", "mnemo: "+holder+" hung up on this chat: did it stop? run mnemo chat again to go on\n")
}

// A message the owner's model could not answer: the second chat shows
// the owner's explanation, and piped, exits 1 as a chat of its own does.
func TestSecondChatUnansweredMessage(t *testing.T) {
	w := newChatWorld(t)
	scriptThinker(w, func(user string, _ int) openaitest.Reply {
		if strings.Contains(user, "refused") {
			return openaitest.Error(401, "invalid_api_key", "Incorrect API key provided")
		}
		return openaitest.Text("Noted.")
	})
	owner := startOwner(t, w)
	r := w.chat(t, "this will be refused\n", "--user", "bob")
	r.want(t, 1, "API key", "mnemo: 1 message(s) could not be answered; the replies say why\n")
	if code := owner.end(t); code != 0 {
		t.Fatalf("owner exit %d:\n%s", code, owner.errOut.String())
	}
}
