package slack

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// ackSize is the size of the acknowledgement that carries m.
func ackSize(m responseMessage) int {
	js, _ := json.Marshal(socketmode.Response{EnvelopeID: strings.Repeat("0", 36), Payload: m})
	return len(js)
}

// TestFitAckBounds: an acknowledgement is always below maxAckBytes (an
// answer of exactly maxAckBytes is cut too), it is cut near the limit
// rather than far below it, and text that JSON makes heavier (< is
// \u003c) is cut again until it fits.
func TestFitAckBounds(t *testing.T) {
	empty := ackSize(ephemeral(""))
	for _, c := range []struct {
		name string
		text string
		cut  bool
	}{
		{"one byte below", strings.Repeat("a", maxAckBytes-1-empty), false},
		{"exactly the limit", strings.Repeat("a", maxAckBytes-empty), true},
		{"long plain text", strings.Repeat("line of a memory listing\n", 3000), true},
		{"heavy text", strings.Repeat("<", 3000) + strings.Repeat("a", 20000), true},
		// Its first cut comes out at exactly maxAckBytes: cut once more.
		{"first cut at the limit", strings.Repeat("<", 2075) + strings.Repeat("a", 2997), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := ephemeral(c.text)
			got := fitAck(msg)
			n := ackSize(got)
			if n >= maxAckBytes {
				t.Errorf("acknowledgement of %d bytes", n)
			}
			if !c.cut {
				if got.Text != c.text {
					t.Error("cut though it fitted")
				}
				return
			}
			if !strings.Contains(got.Text, "mnemo memory ls") || !strings.HasPrefix(c.text, strings.TrimSuffix(got.Text[:20], "\n")) {
				t.Errorf("not cut with the note: %.60q…", got.Text)
			}
			if n < maxAckBytes/2 {
				t.Errorf("cut to %d bytes: far more than needed", n)
			}
		})
	}
}

// TestCutLines: text of exactly max characters is kept whole; a longer
// one is cut at its last line break (not at one that starts the text),
// and an open code block is closed.
func TestCutLines(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		want string
	}{
		{"ab\ncd", 5, "ab\ncd"},
		{"ab\ncde", 5, "ab"},
		{"\nabcdef", 4, "\nabc"},
		{"```\ncode\nmore", 9, "```\ncode\n```"},
		{"plain", 3, "pla"},
	} {
		if got := cutLines(c.s, c.max); got != c.want {
			t.Errorf("cutLines(%q, %d) = %q; want %q", c.s, c.max, got, c.want)
		}
	}
}

// TestRespondStatusLogged: an answer the response_url refuses is logged;
// one it takes is not.
func TestRespondStatusLogged(t *testing.T) {
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer srv.Close()
	logs := &bottest.LogBuffer{}
	b, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: srv.URL + "/api/", Handler: bottest.NewHandler(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.http.CloseIdleConnections()
	for _, s := range []int{http.StatusOK, http.StatusNoContent} {
		status.Store(int32(s))
		b.respond(t.Context(), srv.URL+"/commands/x", ephemeral("x"))
	}
	if strings.Contains(logs.String(), "refused") {
		t.Errorf("a 2xx logged as refused:\n%s", logs)
	}
	status.Store(http.StatusInternalServerError)
	b.respond(t.Context(), srv.URL+"/commands/x", ephemeral("x"))
	if !strings.Contains(logs.String(), "the response_url refused the answer") || !strings.Contains(logs.String(), "status=500") {
		t.Errorf("a 500 not logged:\n%s", logs)
	}
}

// TestDedupeKeys: events without an event_id, or without a
// client_msg_id, are told apart by their message; two deliveries of one
// client message (same client_msg_id, new event and ts) are answered
// once.
func TestDedupeKeys(t *testing.T) {
	hs := start(t, setup{})
	push := func(eventID, clientID, ts, text string) {
		ev := map[string]any{"type": "message", "user": "U1", "text": text, "channel": "D1", "channel_type": "im", "ts": ts}
		if clientID != "" {
			ev["client_msg_id"] = clientID
		}
		payload := map[string]any{"type": "event_callback", "token": "t", "team_id": "T0TEAM", "event": ev}
		if eventID != "" {
			payload["event_id"] = eventID
		}
		js, _ := json.Marshal(payload)
		hs.srv.Push(slacktest.Envelope{Type: "events_api", Payload: js})
	}
	push("", "", "1700000001.000100", "a")
	push("", "", "1700000002.000100", "b")
	push("Ev3", "", "1700000003.000100", "c")
	push("Ev4", "", "1700000004.000100", "d")
	push("Ev5", "client-x", "1700000005.000100", "e")
	push("Ev6", "client-x", "1700000006.000100", "e again")
	push("Ev7", "client-y", "1700000007.000100", "last")
	// One DM conversation: answered in order, so once "last" is answered
	// everything before it was.
	posts := hs.posts(t, 6)
	var got []string
	for _, p := range posts {
		got = append(got, strings.TrimPrefix(p.Text, "echo: "))
	}
	if strings.Join(got, ",") != "a,b,c,d,e,last" {
		t.Errorf("answered %q", got)
	}
}

// TestBusyReplyLogged: the busy reply is logged as such, and not as a
// failure when it was posted.
func TestBusyReplyLogged(t *testing.T) {
	hs := start(t, setup{})
	release := hs.h.Hold()
	for i := range queue.PerConversation + 1 {
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: fmt.Sprint("m", i)})
	}
	posts := hs.posts(t, 1)
	if posts[0].Text != escapeText(pipeline.BusyReplyText) {
		t.Errorf("first post %q", posts[0].Text)
	}
	release()
	hs.posts(t, queue.PerConversation+1)
	if err := hs.stop(); err != nil { // every task and busy reply is done
		t.Fatal(err)
	}
	logs := hs.logs.String()
	if !strings.Contains(logs, "answering that the bot is busy") || strings.Contains(logs, "cannot post the busy reply") {
		t.Errorf("logs:\n%s", logs)
	}
}

// TestTimestampLength: a timestamp is at most 32 characters.
func TestTimestampLength(t *testing.T) {
	ts := "1700000000." + strings.Repeat("1", 21) // 32
	if !validTS(ts) || validTS(ts+"1") {
		t.Errorf("validTS: %d characters accepted or one more refused", len(ts))
	}
}

// TestFailedPostLogged: a reply that cannot be posted is logged with the
// part that failed, counted from 1.
func TestFailedPostLogged(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("chat.postMessage", slacktest.APIError("channel_not_found"))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "hi"})
	waitFor(t, "the error log", func() bool {
		for _, l := range strings.Split(hs.logs.String(), "\n") {
			if strings.Contains(l, "cannot post the reply") && strings.Contains(l, "part 1 of 1") && strings.Contains(l, "parts_posted=0") {
				return true
			}
		}
		return false
	})
}

// TestThreadContextLimits: at most repliesPages pages of a thread are
// read, and a message the bot posted without a user (only its bot_id) is
// the bot's own.
func TestThreadContextLimits(t *testing.T) {
	hs := start(t, setup{})
	root := hs.srv.NextTS()
	msgs := []slacktest.Message{
		{User: "U2", Text: "root", TS: root},
		{BotID: "B0BOT", SubType: "bot_message", Text: "said by the bot", TS: hs.srv.NextTS()},
	}
	hs.srv.SetThread("C1", root, msgs)
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root})
	ctx := hs.h.WaitTasks(t, 1, wait)[0].Context
	if len(ctx) != 2 || ctx[1].Author != "mnemo (you, the assistant)" {
		t.Errorf("context %+v", ctx)
	}

	root2 := hs.srv.NextTS()
	long := []slacktest.Message{{User: "U2", Text: "root", TS: root2}}
	for i := range 1300 { // 7 pages of 200
		long = append(long, slacktest.Message{User: "U4", Text: fmt.Sprint("reply ", i), TS: hs.srv.NextTS()})
	}
	hs.srv.SetThread("C1", root2, long)
	before := len(hs.srv.Calls("conversations.replies"))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root2})
	hs.h.WaitTasks(t, 2, wait)
	if n := len(hs.srv.Calls("conversations.replies")) - before; n != repliesPages {
		t.Errorf("%d pages read; want %d", n, repliesPages)
	}
}

// TestAuthTestBackoff: auth.test failures that may pass are retried after
// retryBase, then twice that; a 4xx (400 included) is not retried.
func TestAuthTestBackoff(t *testing.T) {
	srv := slacktest.New(t, slacktest.Options{})
	newBot := func(logs *bottest.LogBuffer) *Bot {
		b, err := New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(),
			Handler: bottest.NewHandler(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		b.retryBase = time.Millisecond
		t.Cleanup(b.http.CloseIdleConnections)
		return b
	}
	srv.FailNext("auth.test", slacktest.HTTPError(500))
	srv.FailNext("auth.test", slacktest.HTTPError(502))
	logs := &bottest.LogBuffer{}
	b := newBot(logs)
	if err := b.authTest(t.Context()); err != nil {
		t.Fatalf("authTest after two passing failures: %v", err)
	}
	for _, want := range []string{"attempt=1 wait=1ms", "attempt=2 wait=2ms"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the logs:\n%s", want, logs)
		}
	}
	before := len(srv.Calls("auth.test"))
	srv.FailNext("auth.test", slacktest.HTTPError(400))
	b = newBot(&bottest.LogBuffer{})
	if err := b.authTest(t.Context()); err == nil || !strings.Contains(err.Error(), "SLACK_API_URL") {
		t.Errorf("authTest after a 400: %v", err)
	}
	if n := len(srv.Calls("auth.test")) - before; n != 1 {
		t.Errorf("a 400 was tried %d times", n)
	}
}

// TestDispatchConnectionEvents: connections are logged counted from 1; a
// connection error is logged, with its cause, while running but not
// while shutting down.
func TestDispatchConnectionEvents(t *testing.T) {
	logs := &bottest.LogBuffer{}
	b, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: bottest.NewHandler(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	b.dispatch(ctx, ctx, socketmode.Event{Type: socketmode.EventTypeConnected, Data: &socketmode.ConnectedEvent{ConnectionCount: 0}})
	if !b.Ready() || !strings.Contains(logs.String(), "connection=1") {
		t.Errorf("ready %v, logs:\n%s", b.Ready(), logs)
	}
	connErr := socketmode.Event{Type: socketmode.EventTypeConnectionError,
		Data: &slackgo.ConnectionErrorEvent{ErrorObj: errors.New("dial https://u:secret@wss.example/: refused")}}
	b.dispatch(ctx, ctx, connErr)
	if l := logs.String(); !strings.Contains(l, "cannot connect to Socket Mode; retrying") || !strings.Contains(l, "refused") ||
		strings.Contains(l, "secret") || b.Ready() {
		t.Errorf("connection error: ready %v, logs:\n%s", b.Ready(), l)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	n := strings.Count(logs.String(), "retrying")
	b.dispatch(stopped, stopped, connErr)
	if strings.Count(logs.String(), "retrying") != n {
		t.Errorf("a connection error while stopping was logged:\n%s", logs)
	}
	if redactErr(nil) != "" {
		t.Error("redactErr(nil)")
	}
}

// TestAlnum: ASCII letters and digits, the ends of each range included
// and their neighbours excluded.
func TestAlnum(t *testing.T) {
	for _, s := range []string{"AZaz09", "Z", "z", "a", "A", "0", "9"} {
		if !alnum(s, 24) {
			t.Errorf("alnum(%q) = false", s)
		}
	}
	for _, s := range []string{"@", "[", "`", "{", "/", ":", "é", "A-B", ""} {
		if alnum(s, 24) {
			t.Errorf("alnum(%q) = true", s)
		}
	}
}
