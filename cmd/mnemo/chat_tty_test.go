package main

import (
	"context"
	"github.com/mnemo-agent/mnemo/agent/logtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
)

// `mnemo chat` at a terminal: a message is answered; Ctrl-C cancels a
// reply the model is slow to write, and that turn is not reflected;
// Ctrl-D at the empty prompt exits 0 with the pending reflection saved.
// The up arrow's history is in the state folder, private.
func TestChatAtATerminal(t *testing.T) {
	w := newChatWorld(t)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if !strings.Contains(r.System(), "memory reflector") && strings.Contains(r.LastUser(), "take your time") {
			return openaitest.Text("too late").WithDelay(time.Hour), true // ends when the client gives up
		}
		return w.brain.handle(r)
	})
	c := startTTYChat(t, w, "ada")
	tty := c.tty
	tty.WaitFor(t, "you> ")
	tty.Type(t, "Hello, I'm Ada Lovelace.\r")
	tty.WaitFor(t, "Noted.")
	tty.Type(t, "take your time with this one\r")
	tty.WaitFor(t, "thinking…")
	w.srv.WaitRequests(2, consoletest.Wait)
	tty.Type(t, "\x03")
	tty.WaitFor(t, "reply cancelled")
	c.endAtCtrlD(t, consoletest.Wait)
	if !strings.Contains(w.file(t, "ada/facts/user.md"), "- Name: Ada Lovelace") {
		t.Error("the reflection pending at Ctrl-D was not saved")
	}
	for _, tr := range w.brain.transcripts() {
		if strings.Contains(tr, "take your time") {
			t.Errorf("a cancelled turn was reflected:\n%s", tr)
		}
	}
	if s := tty.Screen(); strings.Contains(s, "too late") || strings.Contains(s, "Sorry") {
		t.Errorf("a cancelled reply was shown: %q", s)
	}
	if strings.Contains(c.errOut.String(), "task failed") || !strings.Contains(c.errOut.String(), "saving what is worth remembering") {
		t.Errorf("stderr:\n%s", c.errOut.String())
	}
	hist := filepath.Join(w.dir, "data", "state", "chat", "ada.history")
	b, err := os.ReadFile(hist)
	if err != nil || string(b) != "Hello, I'm Ada Lovelace.\ntake your time with this one\n" {
		t.Errorf("history %q, %v", b, err)
	}
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode: %v %v", fi.Mode(), err)
	}
}

// ttyChatRun is `mnemo chat` running at a terminal (a pty).
type ttyChatRun struct {
	tty    *consoletest.TTY
	errOut logtest.Buffer
	done   chan error
}

// startTTYChat runs `mnemo chat --user user` of w at a new terminal.
func startTTYChat(t *testing.T, w *chatWorld, user string) *ttyChatRun {
	t.Helper()
	c := &ttyChatRun{tty: consoletest.Open(t), done: make(chan error, 1)}
	go func() {
		c.done <- run(stopOn(context.Background()), []string{"chat", "--user", user}, func(k string) string { return w.env[k] }, c.tty.Slave, c.tty.Slave, &c.errOut)
	}()
	return c
}

// endAtCtrlD types Ctrl-D and fails unless the chat exits 0 within wait.
func (c *ttyChatRun) endAtCtrlD(t *testing.T, wait time.Duration) {
	t.Helper()
	c.tty.Type(t, "\x04")
	select {
	case err := <-c.done:
		if code := exitCode(err, &c.errOut); code != 0 {
			t.Fatalf("exit %d (%v); stderr:\n%s", code, err, c.errOut.String())
		}
	case <-time.After(wait):
		t.Fatalf("chat did not end at Ctrl-D; screen:\n%q", c.tty.Screen())
	}
}
