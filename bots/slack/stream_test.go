package slack

import (
	"strings"
	"testing"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// shows is what each of the bot's messages shows now, by ts, and the ts
// in the order they were posted or started.
func shows(srv *slacktest.Server) (map[string]string, []string) {
	text, order := map[string]string{}, []string(nil)
	for _, p := range srv.Chat("") {
		switch p.Method {
		case "chat.postMessage", "chat.startStream":
			order = append(order, p.TS)
			text[p.TS] = p.Text
		case "chat.update", "chat.appendStream", "chat.stopStream":
			text[p.TS] = p.Text
		}
	}
	return text, order
}

// waitChat waits until method succeeded n times.
func waitChat(t *testing.T, srv *slacktest.Server, method string, n int) []slacktest.Post {
	t.Helper()
	waitFor(t, method, func() bool { return len(srv.Chat(method)) >= n })
	return srv.Chat(method)
}

// stepper is a handler that streams deltas, each after the test said so.
func stepper(next chan struct{}, deltas ...string) func(mnemo.Task) (mnemo.Reply, error) {
	return func(task mnemo.Task) (mnemo.Reply, error) {
		if task.Text == "settle" {
			return mnemo.Reply{Text: "echo: settle"}, nil
		}
		var all strings.Builder
		for _, d := range deltas {
			<-next
			all.WriteString(d)
			task.Stream.Text(d)
		}
		<-next
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	}
}

// In a thread a reply is a Slack stream: chat.startStream with the
// model's first words (to the person who asked), chat.appendStream with
// what follows, the assistant status cleared at the first word; at the
// end chat.stopStream with the part metadata and a chat.update to the
// reply's mrkdwn, the one message showing it once.
func TestStreamNative(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.editEvery = time.Millisecond }})
	next := make(chan struct{})
	hs.h.SetReply(stepper(next, "**Bold** start", " and more"))
	env := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> go"})
	next <- struct{}{}
	start := waitChat(t, hs.srv, "chat.startStream", 1)[0]
	if p := start.Params; p.Get("thread_ts") != env.TS || p.Get("markdown_text") != "**Bold** start" ||
		p.Get("recipient_user_id") != "U1" || p.Get("recipient_team_id") != slacktest.DefaultTeamID {
		t.Errorf("startStream %v", p)
	}
	waitFor(t, "the status's removal", func() bool { return len(hs.srv.Statuses()) == 2 })
	if st := hs.srv.Statuses(); st[1].Status != "" || st[1].Seq < start.Seq {
		t.Errorf("statuses %+v", st)
	}
	next <- struct{}{}
	app := waitChat(t, hs.srv, "chat.appendStream", 1)[0]
	if app.Params.Get("markdown_text") != " and more" || app.Text != "**Bold** start and more" {
		t.Errorf("appendStream %v", app.Params)
	}
	next <- struct{}{}
	upd := waitChat(t, hs.srv, "chat.update", 1)[0]
	stop := hs.srv.Chat("chat.stopStream")
	if len(stop) != 1 || stop[0].Seq > upd.Seq || !strings.Contains(stop[0].Params.Get("metadata"), `"part":0`) {
		t.Errorf("stopStream %+v", stop)
	}
	if want := formatReply("**Bold** start and more")[0]; upd.Text != want || upd.TS != start.TS {
		t.Errorf("final %q; want %q", upd.Text, want)
	}
	if hs.srv.Streaming("C1", start.TS) {
		t.Error("the stream was not stopped")
	}
	if n := len(hs.srv.Posts()); n != 0 {
		t.Errorf("%d posts besides the stream", n)
	}
}

// A reply streamed past one message stops its stream at the split, takes
// the first part's mrkdwn and goes on in posted messages; in the end the
// messages are the reply's parts, once.
func TestStreamNativeLong(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.editEvery = time.Millisecond }})
	word := strings.Repeat("y", 9) + " "
	var all strings.Builder
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		for range 3 * maxPartRunes / len(word) {
			all.WriteString(word)
			task.Stream.Text(word)
		}
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	})
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> long"})
	waitFor(t, "the reply", func() bool { return hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0 && len(hs.h.Tasks()) == 1 })
	want := formatReply(all.String())
	text, order := shows(hs.srv)
	if len(order) != len(want) {
		t.Fatalf("%d messages; want %d", len(order), len(want))
	}
	for i, ts := range order {
		if text[ts] != want[i] {
			t.Errorf("message %d: %d characters; want part %d (%d)", i, len(text[ts]), i, len(want[i]))
		}
	}
}

// A workspace that refuses streams (here not_allowed_token_type) is
// answered by posting and updating, and remembered: its next reply does
// not try to stream. A 429 on an update is waited out (Retry-After).
func TestStreamRefused(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.editEvery, b.maxWaitFor = time.Millisecond, 10*time.Millisecond }})
	hs.srv.RefuseStreams("not_allowed_token_type")
	next := make(chan struct{})
	hs.h.SetReply(stepper(next, "first", " second"))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> one"})
	next <- struct{}{}
	post := hs.posts(t, 1)[0]
	if post.Text != "first" || !strings.Contains(post.Params.Get("metadata"), `"part":0`) {
		t.Errorf("post %+v", post)
	}
	hs.srv.FailNext("chat.update", slacktest.RateLimited(time.Second))
	next <- struct{}{}
	upd := waitChat(t, hs.srv, "chat.update", 1)[0]
	if upd.Text != "first second" || upd.TS != post.TS {
		t.Errorf("update %+v", upd)
	}
	if calls := hs.srv.Calls("chat.update"); len(calls) < 2 || calls[0].Status != 429 {
		t.Errorf("chat.update calls %+v", calls)
	}
	next <- struct{}{}
	waitFor(t, "the reply done", func() bool { return hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0 })

	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> two"})
	next <- struct{}{}
	hs.posts(t, 2)
	next <- struct{}{}
	next <- struct{}{}
	waitFor(t, "the reply done", func() bool { return hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0 })
	if n := len(hs.srv.Calls("chat.startStream")); n != 1 {
		t.Errorf("chat.startStream tried %d times; want once", n)
	}
	logs := hs.logs.String()
	if strings.Count(logs, "does not let the app stream") != 1 || !strings.Contains(logs, "rate limited on chat.update") {
		t.Errorf("logs:\n%s", logs)
	}
}

// A stream Slack will not append to is stopped and updated to the reply
// so far; a start that fails for a passing reason (a 5xx) posts the
// reply instead, and is tried again for the next reply.
func TestStreamFailures(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.editEvery = time.Millisecond }})
	next := make(chan struct{})
	hs.h.SetReply(stepper(next, "one", " two", " three"))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> a"})
	next <- struct{}{}
	st := waitChat(t, hs.srv, "chat.startStream", 1)[0]
	hs.srv.FailNext("chat.appendStream", slacktest.APIError("message_not_in_streaming_state"))
	next <- struct{}{}
	upd := waitChat(t, hs.srv, "chat.update", 1)[0]
	if upd.TS != st.TS || upd.Text != "one two" {
		t.Errorf("update %+v", upd)
	}
	next <- struct{}{}
	next <- struct{}{}
	waitFor(t, "the last update", func() bool { return len(hs.srv.Chat("chat.update")) == 2 })
	if u := hs.srv.Chat("chat.update")[1]; u.Text != "one two three" {
		t.Errorf("final %+v", u)
	}
	waitFor(t, "the reply done", func() bool { return hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0 })

	hs.srv.FailNext("chat.startStream", slacktest.HTTPError(500))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> b"})
	next <- struct{}{}
	if p := hs.posts(t, 1)[0]; p.Text != "one" {
		t.Errorf("post %+v", p)
	}
	for range 3 {
		next <- struct{}{}
	}
	waitFor(t, "the reply done", func() bool { return hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0 })
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> c"})
	next <- struct{}{}
	waitChat(t, hs.srv, "chat.startStream", 2)
	for range 3 {
		next <- struct{}{}
	}
}

// Only a refusal of the feature is remembered for the workspace, not
// one of a message (its thread, its channel).
func TestStreamsRefused(t *testing.T) {
	for code, want := range map[string]bool{"not_allowed_token_type": true, "missing_scope": true, "team_not_allowed": true,
		"invalid_thread_ts": false, "channel_not_found": false, "ratelimited": false} {
		if got := streamsRefused(slackgo.SlackErrorResponse{Err: code}); got != want {
			t.Errorf("%s: %v", code, got)
		}
	}
}

// Before the first words, what the agent does (a tool's status) replaces
// "is thinking…" in the thread's assistant status (cut to a short line);
// "" brings "is thinking…" back; after the first words the status is
// cleared and stays so. A top-level DM has no thread status to set.
func TestStreamStatus(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.editEvery = time.Millisecond }})
	next := make(chan struct{})
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		if task.Text == "settle" {
			return mnemo.Reply{Text: "echo: settle"}, nil
		}
		task.Stream.Status("reading facts/food.md…")
		task.Stream.Status(strings.Repeat("x", 200))
		task.Stream.Status("")
		<-next
		task.Stream.Text("Ramen.")
		task.Stream.Status("ignored now")
		<-next
		return mnemo.Reply{Text: "Ramen.", Streamed: true}, nil
	})
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> food?"})
	waitFor(t, "the statuses", func() bool { return len(hs.srv.Statuses()) == 4 })
	next <- struct{}{}
	waitChat(t, hs.srv, "chat.startStream", 1)
	next <- struct{}{}
	waitChat(t, hs.srv, "chat.update", 1)
	var got []string
	for _, s := range hs.srv.Statuses() {
		got = append(got, s.Status)
	}
	if len(got) != 5 || got[0] != thinkingStatus || got[1] != "is reading facts/food.md…" ||
		len([]rune(got[2])) != maxStatusRunes || got[3] != thinkingStatus || got[4] != "" {
		t.Errorf("statuses %q", got)
	}
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "top level"})
	next <- struct{}{}
	next <- struct{}{}
	waitFor(t, "the DM reply", func() bool {
		return len(hs.srv.Posts()) == 1 && hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0
	})
	if n := len(hs.srv.Statuses()); n != 5 {
		t.Errorf("%d statuses after a top-level DM", n)
	}
}
