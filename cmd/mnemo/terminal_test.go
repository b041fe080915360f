package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
)

// fakeTerminal stands in for the terminal platform in a test's registry:
// it answers every line with words of its own.
type fakeTerminal struct{ fakeAdapter }

func (f *fakeTerminal) Conversation(user string) platform.Conversation {
	return fakeConversation{user}
}

type fakeConversation struct{ user string }

func (c fakeConversation) Say(_ context.Context, l platform.Line) (platform.Said, error) {
	return platform.Said{Text: "the fake terminal heard " + c.user + ": " + l.Text}, nil
}

func (fakeConversation) Cancel(string) {}

// fakeRegistry is a registry of a platform with tokens (fa, when not nil)
// and a terminal (term, when not nil) registered under the console's name.
func fakeRegistry(fa *fakeAdapter, term *fakeTerminal) []platform.Platform {
	var ps []platform.Platform
	if fa != nil {
		ps = append(ps, platform.Platform{Name: "fake", Enabled: func(platform.Section) bool { return true },
			New: func(platform.Deps) (platform.Adapter, error) { return fa, nil }})
	}
	if term != nil {
		ps = append(ps, platform.Platform{Name: console.Name, Terminal: true,
			New: func(platform.Deps) (platform.Adapter, error) { return term, nil }})
	}
	return ps
}

// serve runs the terminal the registry lists, as it runs the others, and
// no other: a second chat on its data folder is answered by the
// registered terminal, and it is named once among the adapters. (A
// terminal serve made by hand would run beside the registered one and
// take the second chats.)
func TestServeRunsTheRegisteredTerminal(t *testing.T) {
	w := newChatWorld(t)
	cfg, err := config.Load("", false, func(k string) string { return w.env[k] }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	env, logs := serveEnv(w)
	fa := &fakeAdapter{started: make(chan struct{})}
	term := &fakeTerminal{fakeAdapter{started: make(chan struct{})}}
	env.platforms = fakeRegistry(fa, term)
	ctx, cancel := context.WithCancel(context.Background())
	_, done := goServe(t, ctx, env, cfg, platformAdapters)
	<-fa.started
	<-term.started
	c, err := control.Open(context.Background(), app.ControlSocket(cfg), control.Request{Op: app.OpChat, User: "ann", Arg: app.ChatProtocol})
	if err != nil {
		t.Fatal(err)
	}
	c.Send(control.Event{Type: app.EvMessage, ID: "t1", Text: "hello"})
	e, err := c.Recv()
	if err != nil || e.Type != app.EvReply || e.Text != "the fake terminal heard ann: hello" {
		t.Errorf("second chat's reply %+v, %v; want the registered terminal's", e, err)
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !term.stopped.Load() || !strings.Contains(logs.String(), `adapters="[fake console]"`) {
		t.Errorf("the terminal stopped: %v; logs:\n%s", term.stopped.Load(), logs.String())
	}
}

// chat talks to the terminal the registry lists; with none registered it
// says so and exits 1.
func TestChatRunsTheRegisteredTerminal(t *testing.T) {
	w := newChatWorld(t)
	chat := func(ps []platform.Platform) cliResult {
		var out, errOut bytes.Buffer
		err := runWith(stopOn(context.Background()), []string{"chat", "--user", "ann"}, cliEnv{getenv: func(k string) string { return w.env[k] },
			stdin: strings.NewReader("hello\n"), stdout: &out, stderr: &errOut, platforms: ps})
		return cliResult{exitCode(err, &errOut), out.String(), errOut.String()}
	}
	term := &fakeTerminal{fakeAdapter{started: make(chan struct{})}}
	chat(fakeRegistry(nil, term)).want(t, 0, "the fake terminal heard ann: hello\n", "")
	if !term.stopped.Load() {
		t.Error("chat left its terminal running")
	}
	chat(fakeRegistry(&fakeAdapter{}, nil)).want(t, 1, "", "no terminal platform is registered")
}
