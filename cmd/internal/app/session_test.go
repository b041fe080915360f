package app

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

// session opens a second chat's session on a's control socket as user.
func session(t *testing.T, a *App, user string) *control.Conn {
	t.Helper()
	c, err := control.Open(context.Background(), ControlSocket(a.cfg), control.Request{Op: OpChat, User: user, Arg: ChatProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recv is the session's next event but the reply's words.
func recv(t *testing.T, c *control.Conn) control.Event {
	t.Helper()
	for {
		e, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e.Type != EvText && e.Type != EvStatus {
			return e
		}
	}
}

// A second chat through the control socket: its lines go to the terminal
// platform, as this app's user — messages answered by the Thinker,
// /memory, /memory share and /forget yes acting on that user with every
// surface's answers; a bad event ends the session, saying why; the
// control socket's forget and access operations answer as the CLI
// expects. Without a terminal platform a chat is refused; once it closes,
// a line ends the session as this process stopping.
func TestChatSessionAndControl(t *testing.T) {
	w := newWorld(t)
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if r.LastUser() == "hello" {
			return openaitest.Text("Hello, Ann."), true
		}
		if r.LastUser() == "slow" && !strings.Contains(r.System(), "memory reflector") {
			return openaitest.Text("too late").WithDelay(time.Hour), true // ends when the client gives up
		}
		return openaitest.Text("nothing to remember"), true
	})
	w.putMemory(t, "ann/facts/food.md", foodFact)
	a := w.open(t, "")
	ctl, err := a.ListenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close(context.Background())
	if _, err := control.Open(context.Background(), ControlSocket(a.cfg), control.Request{Op: OpChat, User: "ann", Arg: ChatProtocol}); err == nil ||
		!strings.Contains(err.Error(), "no terminal chat platform") {
		t.Errorf("a chat without a terminal platform: %v", err)
	}
	term := console.New(a.TerminalDeps())
	a.UseAdapters([]Adapter{{console.Name, term}})
	termCtx, stopTerm := context.WithCancel(context.Background())
	termDone := make(chan error, 1)
	go func() { termDone <- term.Run(termCtx) }()
	defer func() { stopTerm(); <-termDone }()

	c := session(t, a, "ann")
	say := func(id, text string) control.Event {
		t.Helper()
		c.Send(control.Event{Type: EvMessage, ID: id, Text: text})
		return recv(t, c)
	}
	if e := say("t1", "hello"); e.Type != EvReply || e.Error != "" || e.Failed {
		t.Fatalf("reply %+v", e)
	}
	if e := say("t2", "/memory"); e.Type != EvReply || e.Streamed || !strings.Contains(e.Text, "facts/food.md") {
		t.Errorf("show %+v", e)
	}
	if e := say("t3", "/memory share facts/food.md"); !strings.Contains(e.Text, "is now shared") || !strings.Contains(w.file(t, "ann/facts/food.md"), "> Visibility: shared") {
		t.Errorf("share %+v", e)
	}
	if e := say("t4", "/memory share facts/none.md"); !strings.HasPrefix(e.Text, "You have no memory file `facts/none.md`") {
		t.Errorf("share of a missing file %+v", e)
	}
	if e := say("t5", "/forget"); !strings.Contains(e.Text, "Type **/forget yes** to confirm") || e.Forgot {
		t.Errorf("forget asks %+v", e)
	}
	if e := say("t6", "/forget yes"); e.Text != "Done: I deleted everything I remembered about you." || !e.Forgot {
		t.Errorf("forget %+v", e)
	}
	if e := say("t7", "/forget yes"); e.Text != "There was nothing to forget: I don't remember anything about you." {
		t.Errorf("forget again %+v", e)
	}
	c.Send(control.Event{Type: EvCancel, ID: "t7"}) // done already: nothing to cancel
	// Ctrl-C while the model writes: the reply comes back at once, not
	// failed (the cancel of another line is ignored meanwhile).
	c.Send(control.Event{Type: EvMessage, ID: "t8", Text: "slow"})
	w.srv.WaitRequests(2, time.Minute)
	c.Send(control.Event{Type: EvCancel, ID: "t1"})
	c.Send(control.Event{Type: EvCancel, ID: "t8"})
	if e := recv(t, c); e.Type != EvReply || e.Failed || strings.Contains(e.Text, "too late") {
		t.Errorf("cancelled %+v", e)
	}
	// Another event while a reply is written ends the session, saying why.
	mid := session(t, a, "ann")
	mid.Send(control.Event{Type: EvMessage, ID: "t10", Text: "slow"})
	w.srv.WaitRequests(3, time.Minute)
	mid.Send(control.Event{Type: EvMessage, ID: "t11", Text: "hello"})
	if e := recv(t, mid); e.Type != EvEnd || !strings.Contains(e.Error, "while a reply is written") {
		t.Errorf("an event mid-reply: %+v", e)
	}
	for _, bad := range []control.Event{{Type: "reboot"}, {Type: EvMessage, ID: "a b", Text: "x"}, {Type: EvMessage, ID: "t2"},
		{Type: EvMessage, ID: strings.Repeat("x", 65), Text: "x"}} {
		c := session(t, a, "ann")
		c.Send(bad)
		if e := recv(t, c); e.Type != EvEnd || e.Error == "" {
			t.Errorf("%+v: %+v", bad, e)
		}
	}
	// The client hangs up: the session ends without an error.
	c.CloseWrite()
	if _, err := c.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the client's end: %v", err)
	}
	// The terminal platform closes (this process stops): a line ends the
	// session so.
	last := session(t, a, "ann")
	stopTerm()
	<-termDone
	termDone <- nil
	last.Send(control.Event{Type: EvMessage, ID: "t9", Text: "hello"})
	if e := recv(t, last); e.Type != EvEnd || e.Text != EndStopping {
		t.Errorf("after the platform closed: %+v", e)
	}
	for _, req := range []control.Request{{Op: OpChat, User: "ann", Arg: "0"}, {Op: OpChat, User: "../x", Arg: ChatProtocol}} {
		if _, err := control.Open(context.Background(), ControlSocket(a.cfg), req); err == nil {
			t.Errorf("%+v: taken", req)
		}
	}

	sock := ControlSocket(a.cfg)
	w.putMemory(t, "bob/facts/food.md", foodFact)
	if msg, err := control.Call(context.Background(), sock, control.Request{Op: OpForget, User: "bob", Path: "facts/none.md"}); err == nil {
		t.Errorf("forget of a missing file: %q", msg)
	}
	if msg, err := control.Call(context.Background(), sock, control.Request{Op: OpForget, User: "bob"}); err != nil || msg != "" {
		t.Errorf("forget of bob: %q, %v", msg, err)
	}
	if msg, err := control.Call(context.Background(), sock, control.Request{Op: OpForget, User: "bob"}); err != nil || msg != "" {
		t.Errorf("forget of bob without a folder: %q, %v", msg, err)
	}
	if _, err := control.Call(context.Background(), sock, control.Request{Op: OpForget, User: "../x"}); err == nil {
		t.Error("forget of a bad name")
	}
	if msg, err := control.Call(context.Background(), sock, control.Request{Op: OpAccess, Path: "approve", Arg: "K7QM2XPA"}); err == nil {
		t.Errorf("approve of no code: %q", msg)
	}
}

// testAdapter is a platform's adapter in these tests.
type testAdapter struct{ queued int }

func (f *testAdapter) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (f *testAdapter) Ready() bool                   { return true }
func (f *testAdapter) Forget(string) int             { return f.queued }
func (f *testAdapter) Queued() int                   { return f.queued }

// A registered platform is made when its section turns it on, with its
// access gate and its section; its queue is a forget's first holder; a
// platform that refuses its section is a configuration error; serve's
// answer with no platform on names what turns each on.
func TestPlatforms(t *testing.T) {
	w := newWorld(t)
	var got platform.Deps
	made := &testAdapter{queued: 2}
	p := platform.Platform{Name: "discord", Hint: "set DISCORD_BOT_TOKEN",
		Enabled: func(s platform.Section) bool {
			var c struct{ BotToken string }
			return s(&c) == nil && c.BotToken != ""
		},
		ForgetQueued: func(string, string) (int, error) { return 0, nil },
		New: func(d platform.Deps) (platform.Adapter, error) {
			got = d
			var c struct{ BotToken string }
			if err := d.Section(&c); err != nil || c.BotToken == "bad" {
				return nil, errors.New("discord.botToken: refused")
			}
			return made, nil
		}}
	off := platform.Platform{Name: "slack", Hint: "set SLACK_BOT_TOKEN", Enabled: func(platform.Section) bool { return false }}
	cfg := w.config(t, "")
	if on := Enabled(cfg, []platform.Platform{p, off}); len(on) != 0 {
		t.Errorf("enabled without tokens: %v", on)
	}
	if err := NoPlatform([]platform.Platform{off, p}); !strings.Contains(err.Error(), "set SLACK_BOT_TOKEN, and/or set DISCORD_BOT_TOKEN; to chat in the terminal") {
		t.Errorf("no platform: %v", err)
	}
	w.env["DISCORD_BOT_TOKEN"] = "token"
	a, err := Open(context.Background(), Options{Config: w.config(t, ""), Logger: w.log(), Platforms: []platform.Platform{off, p}, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ads, err := a.Adapters()
	if err != nil || len(ads) != 1 || ads[0].Name != "discord" || got.Access == nil || got.Handler == nil || got.Memory == nil {
		t.Fatalf("adapters %+v, %v; deps %+v", ads, err, got)
	}
	got.FirstVisible(time.Second)
	a.UseAdapters(append(ads, Adapter{"fake", &testAdapter{queued: 1}}))
	var names []string
	for _, h := range a.Holders() {
		names = append(names, h.Name())
	}
	if strings.Join(names[:2], ", ") != "intake journal (discord), intake journal (fake)" {
		t.Errorf("holders %q", names)
	}
	f, err := a.Memory.Forget(context.Background(), userdataRequest("ann"))
	if err != nil || f.Dropped != "dropped 2 messages queued for an answer on discord, 1 message queued for an answer on fake" {
		t.Errorf("forget %+v, %v", f, err)
	}
	a.cfg.Section("discord").(*discord.Section).BotToken = "bad"
	if _, err := a.Adapters(); !errors.As(err, new(*ConfigError)) {
		t.Errorf("a refused section: %v", err)
	}
}
