package slack

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

func TestTimestamps(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"1.1", "1.2", true}, {"9.5", "10.1", true}, {"10.1", "9.5", false}, {"1700000000.000100", "1700000000.0002", true},
		{"1700000000.0002", "1700000000.000100", false}, {"01.5", "1.6", true}, {"1.5", "1.5", false}, {"2.5", "1.6", false},
	} {
		if got := tsLess(c.a, c.b); got != c.less {
			t.Errorf("tsLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
	for ts, ok := range map[string]bool{"1.2": true, "12": false, ".2": false, "1.": false, "1.2a": false, "a.2": false,
		strings.Repeat("1", 40) + ".1": false} {
		if validTS(ts) != ok {
			t.Errorf("validTS(%q) != %v", ts, ok)
		}
	}
	for id, ok := range map[string]bool{"T0TEAM": true, "": false, "U-1": false, "../x": false, strings.Repeat("A", 25): false, strings.Repeat("A", 24): true} {
		if validID(id) != ok {
			t.Errorf("validID(%q) != %v", id, ok)
		}
	}
	if cmp.Or("", "") != "" || cmp.Or("", "b", "c") != "b" {
		t.Error("firstNonEmpty")
	}
}

func TestLogAdapter(t *testing.T) {
	var buf bytes.Buffer
	logAdapter{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}.Output(2, "hello\n")
	if !strings.Contains(buf.String(), "slack-go: hello") {
		t.Errorf("log %q", buf.String())
	}
}

func TestSocketErrors(t *testing.T) {
	b, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: bottest.NewHandler()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "Socket Mode stopped"},
		{errors.New("boom"), "Socket Mode failed: boom"},
		{slackgo.SlackErrorResponse{Err: "x"}, "SLACK_APP_TOKEN was refused by Slack (x)"},
		{slackgo.StatusCodeError{Code: 404}, "HTTP 404; check SLACK_API_URL"},
	} {
		if got := b.socketError(c.err); !strings.Contains(got.Error(), c.want) {
			t.Errorf("socketError(%v) = %v", c.err, got)
		}
	}
	if refusedForGood(errors.New("net")) || refusedForGood(slackgo.SlackErrorResponse{Err: "ratelimited"}) ||
		!refusedForGood(slackgo.SlackErrorResponse{Err: "not_allowed_token_type"}) {
		t.Error("refusedForGood")
	}
	// A response_url that does not answer.
	b2, _ := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api/", Handler: bottest.NewHandler(),
		Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
	b2.respond(t.Context(), "http://127.0.0.1:1/commands/x", ephemeral("x"))
	b2.http.CloseIdleConnections()
}

// panicMemory panics, as a broken store might.
type panicMemory struct{}

func (panicMemory) Show(string, string) (string, error) { panic("show broke") }
func (panicMemory) Forget(string, string) error         { panic("forget broke") }
func (panicMemory) CheckPath(string) error              { panic("check broke") }
func (panicMemory) SetShared(string, string, bool) (bool, error) {
	panic("set shared broke")
}
func (panicMemory) Why(string, string, string, bool) (string, error) { panic("why broke") }

func TestMemoryPanics(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.Memory = panicMemory{} }})
	p := hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{}))
	if !strings.Contains(p.Text, "something went wrong") {
		t.Errorf("ack %+v", p)
	}
	p = hs.ackPayload(t, hs.srv.SlashCommand(slacktest.SlashCommand{Text: "forget all"}))
	press(hs, "U0USER", actionForgetConfirm, p.button(actionForgetConfirm))
	rs, err := hs.srv.WaitResponses(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[0].Text, "couldn't delete") || !strings.Contains(rs[0].Text, "internal error") {
		t.Errorf("response %+v", rs[0])
	}
}

func TestAckFailures(t *testing.T) {
	hs := start(t, setup{})
	// An acknowledgement Slack would drop is refused and logged.
	if err := hs.bot.ack(t.Context(), "env", strings.Repeat("x", 30000)); err == nil {
		t.Error("a 30 KB ack was sent")
	}
	if !strings.Contains(hs.logs.String(), "cannot acknowledge") {
		t.Error("not logged")
	}
	// Shutdown while /memory works: the ack cannot go out any more, so
	// the answer goes to the response_url.
	// The store answers once the socket is closed (before, a 300ms store
	// raced the stop: on a loaded machine the answer could be ready
	// first, and went in the ack).
	hs.mem.ShowText = "facts/a.md: a"
	gate := make(chan struct{})
	hs.mem.Gate = gate
	hs.srv.SlashCommand(slacktest.SlashCommand{})
	waitFor(t, "Show", func() bool { return len(hs.mem.Shown()) == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	waitFor(t, "the socket closed", func() bool {
		c := hs.srv.Conns()
		return len(c) > 0 && !c[len(c)-1].ClosedAt.IsZero()
	})
	close(gate)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	rs := hs.srv.Responses()
	if len(rs) != 1 || !strings.Contains(rs[0].Text, "facts/a.md") {
		t.Errorf("responses %+v", rs)
	}
}

func TestOddEnvelopes(t *testing.T) {
	hs := start(t, setup{})
	push := func(payload map[string]any) slacktest.Envelope {
		js, _ := json.Marshal(payload)
		env := hs.srv.Push(slacktest.Envelope{Type: "events_api", Payload: js})
		if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
			t.Fatal(err)
		}
		return env
	}
	push(map[string]any{"type": "app_rate_limited", "token": "t", "team_id": "T0TEAM", "minute_rate_limited": 1, "api_app_id": "A0APP"})
	push(map[string]any{"type": "event_callback", "token": "t", "team_id": "T0TEAM", "event_id": "Ev1",
		"event": map[string]any{"type": "app_mention", "user": "U1", "text": "x", "channel": "C1", "ts": "1.1", "client_msg_id": 5}})
	// No event_id and no team_id: still answered once, keyed by message.
	msg := map[string]any{"type": "message", "user": "U1", "text": "no ids", "channel": "D1", "channel_type": "im", "ts": "1700000001.000100"}
	push(map[string]any{"type": "event_callback", "token": "t", "event": msg})
	push(map[string]any{"type": "event_callback", "token": "t", "event": msg})
	posts := hs.posts(t, 1)
	hs.quiet(t, 1)
	if task := hs.h.Tasks()[0]; task.User != "slack-T0TEAM-U1" || posts[0].Text != "echo: no ids" {
		t.Errorf("task %+v", task)
	}
}

func TestEmptyFormattedReplyAndIndicatorErrors(t *testing.T) {
	hs := start(t, setup{})
	hs.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: "#"}, nil })
	hs.srv.FailNext("reactions.remove", slacktest.HTTPError(500))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1"})
	posts := hs.posts(t, 1)
	if posts[0].Text != escapeText(mnemo.ApologyText) {
		t.Errorf("post %q", posts[0].Text)
	}
	hs.srv.HandleMethod("assistant.threads.setStatus", func(c slacktest.Call) any {
		if c.Params.Get("status") == "" {
			return map[string]any{"ok": false, "error": "internal_error"}
		}
		return nil
	})
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	hs.srv.WaitPosts(2, wait)
	waitFor(t, "the logs", func() bool {
		l := hs.logs.String()
		return strings.Contains(l, "cannot clear the thread status") && strings.Contains(l, "cannot remove the thinking reaction")
	})
}
