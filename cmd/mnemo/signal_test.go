package main

// SIGTERM and SIGINT against the real binary's code path: main itself runs
// in a child process (TestMainChild) against the fake model (and the fake
// Slack), and the test signals it. Durations are measured and logged; the
// only bounds asserted are the grace itself (a lower bound the hung model
// makes certain) and upper bounds far from any real timing.

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// TestMainChild is the mnemo binary of the signal tests: the real main,
// with the arguments in MNEMO_MAIN_ARGS, in its own process.
func TestMainChild(t *testing.T) {
	args := os.Getenv("MNEMO_MAIN_ARGS")
	if args == "" {
		t.Skip("runs only as the child process of the signal tests")
	}
	os.Args = append([]string{"mnemo"}, strings.Fields(args)...)
	main()
}

// mainProcess is a running child mnemo.
type mainProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *syncWriter
	stderr *syncWriter
	done   chan struct{} // closed when it has exited; then code and exited are set
	code   int
	exited time.Time
}

func startMain(t *testing.T, w *chatWorld, args ...string) *mainProcess {
	t.Helper()
	p := &mainProcess{stdout: &syncWriter{}, stderr: &syncWriter{}, done: make(chan struct{})}
	// GORACE: a -race binary otherwise sleeps 1s at exit, which would be
	// measured as shutdown time.
	p.cmd = w.child("TestMainChild", "MNEMO_MAIN_ARGS="+strings.Join(args, " "), "GORACE=atexit_sleep_ms=0")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.exited, p.code = time.Now(), p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
			t.Logf("child killed at cleanup; stderr:\n%s", p.stderr)
		}
	})
	return p
}

func (p *mainProcess) signal(t *testing.T, sig os.Signal) time.Time {
	t.Helper()
	at := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return at
}

// wait waits for the exit (at most a minute) and returns the code and how
// long after since it came.
func (p *mainProcess) wait(t *testing.T, since time.Time) (int, time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("the child did not exit within a minute\nstderr:\n%s", p.stderr)
	}
	return p.code, p.exited.Sub(since)
}

// hangModel makes the world's model hang the calls hang selects (they end
// when the client gives up) and reports each on the channel; the others get
// the brain's answers.
func hangModel(w *chatWorld, hang func(r openaitest.Request) bool) <-chan string {
	started := make(chan string, 16)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if hang(r) {
			started <- r.LastUser()
			return openaitest.Text("too late").WithDelay(time.Hour), true
		}
		return w.brain.handle(r)
	})
	return started
}

func isReflection(r openaitest.Request) bool { return strings.Contains(r.System(), "memory reflector") }

func receive(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30s for %s", what)
		return ""
	}
}

// inOrder fails unless log holds each part, each after the one before.
func inOrder(t *testing.T, log string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(log[at:], p)
		if i < 0 {
			t.Fatalf("%q missing (or out of order) in:\n%s", p, log)
		}
		at += i + len(p)
	}
}

// SIGTERM to `mnemo chat` while its reflection hangs in the model: it
// waits shutdown.grace, then cancels the call, leaves the turn journaled
// and exits 0.
func TestSigtermChatWaitsTheGraceThenKeepsTheTurnJournaled(t *testing.T) {
	w := newChatWorld(t)
	const grace = time.Second
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "reflector:\n  idle: 1ms\nshutdown:\n  grace: 1s\n")
	reflections := hangModel(w, isReflection)
	p := startMain(t, w, "chat", "--user", "ada", "--verbose")
	io.WriteString(p.stdin, "Hello, I'm Ada Lovelace.\n")
	p.stdout.waitFor(t, "Noted.\n", 1)
	receive(t, reflections, "the reflection to start")
	if turns := journalTurns(t, w, "ada"); len(turns) != 1 {
		t.Fatalf("journal while the reflection runs: %v", turns)
	}

	code, took := p.wait(t, p.signal(t, syscall.SIGTERM))
	t.Logf("SIGTERM to exit: %v (shutdown.grace %v)", took, grace)
	if code != 0 || took < grace || took > grace+10*time.Second {
		t.Fatalf("exit %d after %v; want 0 after the %v grace\nstderr:\n%s", code, took, grace, p.stderr)
	}
	inOrder(t, p.stderr.String(),
		"mnemo: stopping: no new messages are taken; running replies and reflections have up to 1s (shutdown.grace)",
		"mnemo: shutdown.grace (1s) is over: cancelling the model calls still running",
		"reflection: interrupted by shutdown; the turns stay journaled",
		"turn(s) stay journaled")
	if turns := journalTurns(t, w, "ada"); len(turns) != 1 || turns[0]["userText"] != "Hello, I'm Ada Lovelace." {
		t.Fatalf("journal after the shutdown: %v", turns)
	}
}

// SIGTERM to `mnemo serve` while a reply hangs in the model: Slack gets no
// new messages, the reply's call is cancelled when the grace is over (the
// person gets the apology, posted before the exit), exit 0. The turn,
// whose reply never came, is not journaled for reflection.
func TestSigtermServeCancelsAHungReplyAfterTheGrace(t *testing.T) {
	w := newChatWorld(t)
	const grace = time.Second
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "reflector:\n  idle: 1h\nshutdown:\n  grace: 1s\nidentities:\n  ada: [\"slack:T0TEAM/U0ADA\"]\n")
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	replies := hangModel(w, func(r openaitest.Request) bool { return !isReflection(r) })
	p := startMain(t, w, "serve", "--listen", "127.0.0.1:0")
	if err := slk.WaitConnected(1, 30*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, p.stderr)
	}
	slk.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0ADA", Text: "Hello, I'm Ada Lovelace."})
	receive(t, replies, "the reply's model call")

	code, took := p.wait(t, p.signal(t, syscall.SIGTERM))
	t.Logf("SIGTERM to exit: %v (shutdown.grace %v)", took, grace)
	if code != 0 || took < grace || took > grace+10*time.Second {
		t.Fatalf("exit %d after %v; want 0 after the %v grace\nstderr:\n%s", code, took, grace, p.stderr)
	}
	posts := slk.Posts()
	if len(posts) != 1 || posts[0].Text != mnemo.ApologyText {
		t.Fatalf("posts %+v; want the apology once the call was cancelled", posts)
	}
	inOrder(t, p.stderr.String(),
		"mnemo: stopping: no new messages are taken",
		"mnemo: shutdown.grace (1s) is over: cancelling the model calls still running",
		"serve: adapters stopped",
		"serve: stopped")
	if turns := journalTurns(t, w, "ada"); len(turns) != 0 {
		t.Fatalf("journal after the shutdown: %v; want nothing of the unanswered turn", turns)
	}
}

// A second signal stops at once (exit 130), long before the grace, with
// the journal whole: Ctrl-C twice in chat, SIGTERM twice to serve.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  os.Signal
	}{{"chat", os.Interrupt}, {"serve", syscall.SIGTERM}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newChatWorld(t)
			putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "reflector:\n  idle: 1h\nshutdown:\n  grace: 1m\nidentities:\n  ada: [\"slack:T0TEAM/U0ADA\"]\n")
			// The first message is answered; the second one's reply hangs.
			replies := hangModel(w, func(r openaitest.Request) bool { return strings.Contains(r.LastUser(), "second") })
			var p *mainProcess
			var send func(text string)
			if tc.name == "chat" {
				p = startMain(t, w, "chat", "--user", "ada", "--verbose")
				send = func(text string) { io.WriteString(p.stdin, text+"\n") }
			} else {
				slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
				p = startMain(t, w, "serve", "--listen", "127.0.0.1:0")
				if err := slk.WaitConnected(1, 30*time.Second); err != nil {
					t.Fatalf("no Socket Mode connection: %v\n%s", err, p.stderr)
				}
				send = func(text string) {
					slk.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0ADA", Text: text})
				}
			}
			send("Hello, I'm Ada Lovelace.")
			if tc.name == "chat" {
				p.stdout.waitFor(t, "Noted.\n", 1)
			}
			send("A second message.")
			receive(t, replies, "the second reply's model call")

			p.signal(t, tc.sig)
			p.stderr.waitFor(t, "mnemo: stopping", 1)
			code, took := p.wait(t, p.signal(t, tc.sig))
			t.Logf("second signal to exit: %v (shutdown.grace 1m)", took)
			if code != exitAborted || took > 10*time.Second {
				t.Fatalf("exit %d %v after the second signal; want %d at once\nstderr:\n%s", code, took, exitAborted, p.stderr)
			}
			inOrder(t, p.stderr.String(), "mnemo: second signal: cancelling running work now", "mnemo: stopped at a second signal")
			turns := journalTurns(t, w, "ada") // fails on a torn or unparsable line
			if len(turns) == 0 || turns[0]["userText"] != "Hello, I'm Ada Lovelace." {
				t.Fatalf("journal after the second signal: %v", turns)
			}
		})
	}
}
