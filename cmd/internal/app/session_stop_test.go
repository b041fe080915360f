package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

// logSignal is a log handler that hands every message on to a channel,
// so that a test waits for a log line instead of polling.
type logSignal chan string

func (l logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l logSignal) Handle(_ context.Context, r slog.Record) error {
	select {
	case l <- r.Message:
	default: // nobody waits for it
	}
	return nil
}
func (l logSignal) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logSignal) WithGroup(string) slog.Handler      { return l }

// waitLog waits for a log line that holds want.
func (l logSignal) waitLog(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case msg := <-l:
			if strings.Contains(msg, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no log line %q", want)
		}
	}
}

// chatOwner is an app that owns a terminal platform and serves its control
// socket, as a running `mnemo chat` does, logging to logs. The model's
// replies are given by reply (the reflector's: nothing to remember).
func chatOwner(t *testing.T, reply func(openaitest.Request) openaitest.Reply) (*App, *control.Server, logSignal) {
	t.Helper()
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", foodFact)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if strings.Contains(r.System(), "memory reflector") {
			return openaitest.Text("nothing to remember"), true
		}
		return reply(r), true
	})
	logs := make(logSignal, 100)
	a, err := Open(context.Background(), Options{Config: w.config(t, ""), Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	ctl, err := a.ListenControl()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close(context.Background()) })
	term := console.New(a.TerminalDeps())
	a.UseAdapters([]Adapter{{console.Name, term}})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- term.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return a, ctl, logs
}

// A second chat sees what the agent does while it works (a status line
// for the tool it calls) and the reply's words; when the owner stops,
// an idle chat is told so (end: stopping).
func TestChatSessionStatusAndStop(t *testing.T) {
	a, ctl, _ := chatOwner(t, func(r openaitest.Request) openaitest.Reply {
		for _, m := range r.Chat.Messages {
			if m.Role == "tool" {
				return openaitest.Text("You like ramen.")
			}
		}
		return openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/food.md"}`))
	})
	c := session(t, a, "ann")
	if err := c.Send(control.Event{Type: EvMessage, ID: "t1", Text: "what do I like?"}); err != nil {
		t.Fatal(err)
	}
	var status []string
	var words strings.Builder
	for {
		e, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == EvStatus && e.Text != "" {
			status = append(status, e.Text)
		}
		if e.Type == EvText {
			words.WriteString(e.Text)
		}
		if e.Type == EvReply {
			words.WriteString(e.Text)
			break
		}
	}
	if len(status) == 0 || !strings.Contains(strings.Join(status, "|"), "facts/food.md") {
		t.Errorf("status lines %q; want the memory read shown", status)
	}
	if got := words.String(); got != "You like ramen." {
		t.Errorf("reply %q", got)
	}
	if err := ctl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, c); e.Type != EvEnd || e.Text != EndStopping || e.Error != "" {
		t.Errorf("after the owner stopped: %+v", e)
	}
}

// The owner stops while a reply to a second chat is written: it says so
// in its log, the reply is finished and sent, and the chat is told the
// owner stops.
func TestChatSessionStopDuringAReply(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	a, ctl, logs := chatOwner(t, func(openaitest.Request) openaitest.Reply {
		arrived <- struct{}{}
		<-release
		return openaitest.Text("done at last")
	})
	c := session(t, a, "ann")
	if err := c.Send(control.Event{Type: EvMessage, ID: "t1", Text: "take your time"}); err != nil {
		t.Fatal(err)
	}
	<-arrived
	closed := make(chan error, 1)
	go func() { closed <- ctl.Close(context.Background()) }()
	logs.waitLog(t, "control: stopping: a reply to a chat through this process is being written")
	close(release)
	var words strings.Builder
	for {
		e := recvAll(t, c)
		if e.Type == EvText {
			words.WriteString(e.Text)
			continue
		}
		if e.Type != EvReply || e.Failed {
			t.Fatalf("before the reply: %+v", e)
		}
		words.WriteString(e.Text)
		break
	}
	if words.String() != "done at last" {
		t.Errorf("the reply %q", words.String())
	}
	if e := recv(t, c); e.Type != EvEnd || e.Text != EndStopping {
		t.Errorf("after the reply: %+v", e)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A second chat that hangs up while its reply is written: the reply is
// made all the same (the model is not cut off), and the session ends
// without an error.
func TestChatSessionClientLeavesDuringAReply(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	a, _, logs := chatOwner(t, func(openaitest.Request) openaitest.Reply {
		arrived <- struct{}{}
		<-release
		return openaitest.Text("you left")
	})
	c := session(t, a, "ann")
	if err := c.Send(control.Event{Type: EvMessage, ID: "t1", Text: "bye"}); err != nil {
		t.Fatal(err)
	}
	<-arrived
	c.CloseWrite()
	close(release)
	logs.waitLog(t, "control: a chat through this process ended")
	if m := scrapeText(a.metrics); !strings.Contains(m, `mnemo_llm_requests_total{outcome="ok",role="thinker"} 1`) {
		t.Errorf("the reply was not made:\n%s", m)
	}
}

// The shutdown grace ends while a reply to a second chat is written: the
// reply is cancelled (the model call cut) and the chat hung up; Close
// returns.
func TestChatSessionGraceOver(t *testing.T) {
	arrived := make(chan struct{}, 1)
	a, ctl, _ := chatOwner(t, func(openaitest.Request) openaitest.Reply {
		arrived <- struct{}{}
		return openaitest.Text("too late").WithDelay(time.Hour) // ends when the call is cut
	})
	c := session(t, a, "ann")
	if err := c.Send(control.Event{Type: EvMessage, ID: "t1", Text: "slow"}); err != nil {
		t.Fatal(err)
	}
	<-arrived
	over, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ctl.Close(over); err != nil {
		t.Errorf("Close: %v", err)
	}
	for {
		e, err := c.Recv()
		if err != nil {
			break // hung up
		}
		if strings.Contains(e.Text, "too late") {
			t.Fatalf("the reply came after the grace: %+v", e)
		}
	}
	if m := scrapeText(a.metrics); strings.Contains(m, `mnemo_llm_requests_total{outcome="ok",role="thinker"}`) {
		t.Errorf("the model call was not cut:\n%s", m)
	}
}

// recvAll is the session's next event, the reply's words included.
func recvAll(t *testing.T, c *control.Conn) control.Event {
	t.Helper()
	e, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return e
}
