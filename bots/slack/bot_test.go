package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
	"github.com/mnemo-agent/mnemo/bots/internal/thread"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

func TestDirectMessage(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.SetUser(slacktest.User{ID: "U1", DisplayName: "Alice", RealName: "Alice A."})
	// The answer waits until the ack is in: the ack does not wait for it
	// (an ack's wall-clock latency, bounded before, is no proof on a
	// loaded machine).
	release := hs.h.Hold()
	env := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "hello &lt;there&gt; <@U0BOT>"})
	ack, err := hs.srv.WaitAck(env.ID, wait)
	release()
	if err != nil {
		t.Fatal(err)
	}
	if len(ack.Payload) != 0 {
		t.Errorf("ack %+v", ack)
	}
	// The ack is queued before the answer starts, but socketmode writes it
	// on its own goroutine: the reply's post may reach the fake first.
	posts := hs.posts(t, 1)
	p := posts[0]
	if p.Channel != "D1" || p.ThreadTS != "" || p.Text != "echo: hello &lt;there&gt;" {
		t.Errorf("post %+v", p)
	}
	if p.Params.Get("unfurl_links") != "false" {
		t.Errorf("link unfurls not disabled: %v", p.Params)
	}
	tasks := hs.h.Tasks()
	if len(tasks) != 1 {
		t.Fatalf("tasks %+v", tasks)
	}
	task := tasks[0]
	if task.User != "slack-T0TEAM-U1" || task.Channel || task.ChannelMemory != mnemo.ChannelMemoryFull || task.Platform != "slack" ||
		task.Speaker != "Alice" || task.Text != "hello <there>" || task.Conversation != "slack:T0TEAM:D1:" ||
		len(task.Context) != 0 || task.Time.IsZero() {
		t.Errorf("task %+v", task)
	}
	// Where it was said, for what is learned from it: the message's
	// permalink from the workspace URL auth.test gave.
	if want := (mnemo.Origin{Place: "dm", Link: "https://mnemo-test.slack.com/archives/D1/p" + strings.Replace(env.TS, ".", "", 1)}); task.Origin != want {
		t.Errorf("origin %+v, want %+v", task.Origin, want)
	}
	// A top-level DM has no thread for a status: a reaction shows the
	// work, and is removed after the reply.
	waitFor(t, "the reaction's removal", func() bool { return len(hs.srv.Reactions()) == 2 })
	rs := hs.srv.Reactions()
	if len(rs) != 2 || rs[0].Method != "reactions.add" || rs[1].Method != "reactions.remove" ||
		rs[0].Name != thinkingReaction || rs[0].Timestamp != env.TS || rs[0].Channel != "D1" ||
		rs[0].Seq > p.Seq || rs[1].Seq < p.Seq {
		t.Errorf("reactions %+v (post seq %d)", rs, p.Seq)
	}
	if st := hs.srv.Statuses(); len(st) != 0 {
		t.Errorf("statuses %+v", st)
	}
	// The name is cached.
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "again"})
	hs.srv.WaitPosts(2, wait)
	if calls := hs.srv.Calls("users.info"); len(calls) != 1 {
		t.Errorf("users.info called %d times", len(calls))
	}
}

func TestDirectMessageInThread(t *testing.T) {
	hs := start(t, setup{})
	root := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "first"})
	hs.srv.WaitPosts(1, wait)
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "in the thread", ThreadTS: root.TS})
	posts := hs.posts(t, 2)
	if posts[1].ThreadTS != root.TS || posts[1].Text != "echo: in the thread" {
		t.Errorf("post %+v", posts[1])
	}
	tasks := hs.h.Tasks()
	if tasks[1].Conversation != "slack:T0TEAM:D1:"+root.TS || len(tasks[1].Context) != 0 || tasks[1].Channel {
		t.Errorf("task %+v", tasks[1])
	}
	// In a thread the assistant status is used, and cleared after.
	waitFor(t, "the status's removal", func() bool { return len(hs.srv.Statuses()) == 2 })
	st := hs.srv.Statuses()
	if len(st) != 2 || st[0].Status != thinkingStatus || st[0].ThreadTS != root.TS || st[0].ChannelID != "D1" || st[1].Status != "" ||
		st[1].Seq < posts[1].Seq {
		t.Errorf("statuses %+v", st)
	}
}

func TestMention(t *testing.T) {
	hs := start(t, setup{})
	env := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> what's new?"})
	posts := hs.posts(t, 1)
	if posts[0].Channel != "C1" || posts[0].ThreadTS != env.TS || posts[0].Text != "echo: what's new?" {
		t.Errorf("post %+v", posts[0])
	}
	task := hs.h.Tasks()[0]
	if !task.Channel || task.ChannelMemory != mnemo.ChannelMemoryRead || task.User != "slack-T0TEAM-U1" ||
		task.Conversation != "slack:T0TEAM:C1:"+env.TS || task.Speaker != "" {
		t.Errorf("task %+v", task)
	}
	waitFor(t, "the status's removal", func() bool { return len(hs.srv.Statuses()) == 2 })
	st := hs.srv.Statuses()
	if len(st) != 2 || st[0].ThreadTS != env.TS || st[0].Status == "" || st[1].Status != "" {
		t.Errorf("statuses %+v", st)
	}
	if rs := hs.srv.Reactions(); len(rs) != 0 {
		t.Errorf("reactions %+v", rs)
	}
}

func TestChannelMemoryAndIdentities(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) {
		c.ChannelMemory = mnemo.ChannelMemoryOff
		c.Identities = map[string]string{"slack:T0TEAM/U1": "zhangsan"}
	}})
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "G1", User: "U1"})
	hs.srv.Message(slacktest.MessageEvent{Channel: "D2", User: "U2", Text: "hi"})
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Team: "T0OTHER"})
	tasks := hs.h.WaitTasks(t, 3, wait)
	byUser := map[string]mnemo.Task{}
	for _, tk := range tasks {
		byUser[tk.User] = tk
	}
	if tk := byUser["zhangsan"]; !tk.Channel || tk.ChannelMemory != mnemo.ChannelMemoryOff {
		t.Errorf("linked user's task %+v", tk)
	}
	if tk, ok := byUser["slack-T0TEAM-U2"]; !ok || tk.Channel {
		t.Errorf("tasks %+v", tasks)
	}
	// The author's own team names the user (a shared channel).
	if _, ok := byUser["slack-T0OTHER-U1"]; !ok {
		t.Errorf("tasks %+v", tasks)
	}
}

func TestThreadContext(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.SetUser(slacktest.User{ID: "U1", DisplayName: "Alice"})
	hs.srv.SetUser(slacktest.User{ID: "U2", RealName: "Bob"})
	root := hs.srv.NextTS()
	msgs := []slacktest.Message{
		{User: "U2", Text: "Where do we deploy <@U0BOT>?", TS: root},
		{User: "U1", Text: "I think &lt;staging&gt;", TS: hs.srv.NextTS()},
		{User: "U0BOT", BotID: "B0BOT", Text: "Staging, per the runbook.", TS: hs.srv.NextTS()},
		{BotID: "B9", SubType: "bot_message", Text: "CI passed", TS: hs.srv.NextTS()},
		{User: "U3", SubType: "channel_join", Text: "<@U3> has joined", TS: hs.srv.NextTS()},
		{User: "U3", Text: "   ", TS: hs.srv.NextTS()},
	}
	hs.srv.SetThread("C1", root, msgs)
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root, Text: "<@U0BOT> and prod?"})
	later := hs.srv.NextTS() // a message after the mention is not context
	hs.srv.AddMessage("C1", slacktest.Message{User: "U2", Text: "later", TS: later, ThreadTS: root})
	posts := hs.posts(t, 1)
	if posts[0].ThreadTS != root {
		t.Errorf("post %+v", posts[0])
	}
	task := hs.h.Tasks()[0]
	want := []mnemo.ContextMessage{
		{Author: "Bob", Text: "Where do we deploy @mnemo?"},
		{Author: "Alice", Text: "I think <staging>", FromSpeaker: true},
		{Author: "mnemo (you, the assistant)", Text: "Staging, per the runbook."},
		{Author: "a bot (a bot)", Text: "CI passed"},
	}
	if fmt.Sprint(task.Context) != fmt.Sprint(want) {
		t.Errorf("context\n got %+v\nwant %+v", task.Context, want)
	}
	if task.Speaker != "Alice" || task.Text != "and prod?" || task.Conversation != "slack:T0TEAM:C1:"+root {
		t.Errorf("task %+v", task)
	}
	if o := task.Origin; o.Place != "#C1 thread" || !strings.HasPrefix(o.Link, "https://mnemo-test.slack.com/archives/C1/p") ||
		!strings.HasSuffix(o.Link, "?thread_ts="+root+"&cid=C1") {
		t.Errorf("origin %+v", o)
	}

	// A long thread: the root and the last messages, at most thread.MaxMessages,
	// read over several pages, each cut to thread.MaxText. Only the last
	// ones are long: 300 of 3,000 characters (900 KB through the fake and
	// slack-go) took 12s under -race on a loaded machine, past the wait.
	root2 := hs.srv.NextTS()
	long := []slacktest.Message{{User: "U2", Text: "root", TS: root2}}
	for i := range 300 {
		text := fmt.Sprintf("reply %d", i)
		if i >= 300-thread.MaxMessages {
			text += " " + strings.Repeat("x", 3000)
		}
		long = append(long, slacktest.Message{User: "U4", Text: text, TS: hs.srv.NextTS()})
	}
	hs.srv.SetThread("C1", root2, long)
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root2})
	tasks := hs.h.WaitTasks(t, 2, wait)
	ctx := tasks[1].Context
	if len(ctx) != thread.MaxMessages || ctx[0].Text != "root" || !strings.HasPrefix(ctx[1].Text, "reply 281 ") ||
		!strings.HasPrefix(ctx[thread.MaxMessages-1].Text, "reply 299 ") || ctx[1].Author != "user U4" ||
		utf8.RuneCountInString(ctx[5].Text) > thread.MaxText+4 || !strings.HasSuffix(ctx[5].Text, "[…]") {
		t.Errorf("long context: %d messages, first %.20q, second %.20q, last %.20q", len(ctx), ctx[0].Text, ctx[1].Text, ctx[len(ctx)-1].Text)
	}
	if n := len(hs.srv.Calls("conversations.replies")); n != 3 {
		t.Errorf("%d conversations.replies calls", n)
	}
}

func TestThreadContextUnavailable(t *testing.T) {
	hs := start(t, setup{})
	root := hs.srv.NextTS()
	hs.srv.SetThread("C1", root, []slacktest.Message{{User: "U2", Text: "root", TS: root}})
	hs.srv.FailNext("conversations.replies", slacktest.HTTPError(500))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root})
	hs.srv.WaitPosts(1, wait)
	hs.srv.FailNext("conversations.replies", slacktest.APIError("missing_scope"))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root})
	hs.srv.WaitPosts(2, wait)
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", ThreadTS: root})
	hs.srv.WaitPosts(3, wait)
	// Answered without context while the thread cannot be read; the
	// next mention reads it again.
	for i, tk := range hs.h.Tasks() {
		if (len(tk.Context) != 0) != (i == 2) {
			t.Errorf("task %d context %+v", i, tk.Context)
		}
	}
	if n := len(hs.srv.Calls("conversations.replies")); n != 3 {
		t.Errorf("%d conversations.replies calls", n)
	}
	if !strings.Contains(hs.logs.String(), "answering without its earlier messages") {
		t.Error("not logged")
	}
}

func TestIgnoredEvents(t *testing.T) {
	hs := start(t, setup{opts: slacktest.Options{EchoBotPosts: true}})
	var envs []slacktest.Envelope
	first := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "original"})
	envs = append(envs, first)
	hs.srv.WaitPosts(1, wait) // its reply comes back as a bot message (EchoBotPosts)
	envs = append(envs,
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", BotID: "B0BOT", Text: "own post"}),
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U0BOT", Text: "own user, no bot_id"}),
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U9", BotID: "B9", Text: "another bot"}),
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", BotID: "B9", SubType: "bot_message", Text: "bot_message"}),
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", SubType: "message_changed", TS: first.TS, Text: "edited"}),
		hs.srv.EventsAPI(map[string]any{"type": "message", "subtype": "message_deleted", "channel": "D1", "channel_type": "im",
			"hidden": true, "deleted_ts": first.TS, "ts": hs.srv.NextTS()}),
		// (file_share, a DM with files, is answered: attach_test.go)
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", SubType: "channel_join", Text: "joined"}),
		hs.srv.Message(slacktest.MessageEvent{Channel: "C1", User: "U1", Text: "channel chatter (message.channels)"}),
		hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", BotID: "B9", User: "U9"}),
		hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U0BOT"}),
		hs.srv.EventsAPI(map[string]any{"type": "app_mention", "user": "U1", "text": "<@U0BOT> edited", "channel": "C1",
			"ts": hs.srv.NextTS(), "edited": map[string]any{"user": "U1", "ts": "1.2"}}),
		hs.srv.EventsAPI(map[string]any{"type": "message", "user": "../U1", "text": "bad ids", "channel": "D1",
			"channel_type": "im", "ts": hs.srv.NextTS()}),
		hs.srv.EventsAPI(map[string]any{"type": "message", "user": "U1", "text": "bad ts", "channel": "D1",
			"channel_type": "im", "ts": "12"}),
		hs.srv.EventsAPI(map[string]any{"type": "message", "text": "no user", "channel": "D1",
			"channel_type": "im", "ts": hs.srv.NextTS()}),
		hs.srv.EventsAPI(map[string]any{"type": "reaction_added", "user": "U1", "reaction": "eyes",
			"item": map[string]any{"type": "message", "channel": "D1", "ts": first.TS}, "event_ts": hs.srv.NextTS()}),
		hs.srv.EventsAPI(map[string]any{"type": "message", "user": "U1", "text": 42, "channel": "D1", "channel_type": "im",
			"ts": hs.srv.NextTS()}),
	)
	// Every envelope is acked, also those ignored.
	for _, e := range envs {
		if _, err := hs.srv.WaitAck(e.ID, wait); err != nil {
			t.Error(err)
		}
	}
	last := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "answer me"})
	hs.srv.WaitAck(last.ID, wait)
	posts := hs.posts(t, 2)
	hs.quiet(t, 2)
	if posts[1].Text != "echo: answer me" {
		t.Errorf("posts %+v", posts)
	}
	if tasks := hs.h.Tasks(); len(tasks) != 2 {
		t.Errorf("tasks %+v", tasks)
	}
}

func TestRedelivery(t *testing.T) {
	hs := start(t, setup{})
	env := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "once"})
	hs.srv.Redeliver(env, 1)
	hs.srv.Redeliver(env, 2)
	hs.posts(t, 1)
	hs.quiet(t, 1)
	if n := len(hs.h.Tasks()); n != 1 {
		t.Errorf("%d tasks", n)
	}
	if n := len(hs.srv.Acks()); n != 3 {
		t.Errorf("%d acks", n)
	}
	// Each duplicate is logged with Slack's retry attempt.
	waitFor(t, "the duplicates' logs", func() bool {
		var attempts []string
		for _, l := range strings.Split(hs.logs.String(), "\n") {
			if strings.Contains(l, "duplicate message ignored") {
				_, attempt, _ := strings.Cut(l, "retry_attempt=")
				attempt, _, _ = strings.Cut(attempt, " ")
				attempts = append(attempts, attempt)
			}
		}
		slices.Sort(attempts)
		return strings.Join(attempts, " ") == "1 2"
	})
	// Slack's own redelivery of envelopes it thinks were not acked in
	// time (here: after 1 ms, so it races the ack).
	hs.srv.SetRedeliverAfter(time.Millisecond)
	for range 5 {
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "hurry"})
	}
	hs.posts(t, 6)
	hs.quiet(t, 6)
	retried := 0
	for _, e := range hs.srv.Sent() {
		if e.RetryAttempt > 0 {
			retried++
		}
	}
	t.Logf("%d envelopes redelivered", retried)
}

func TestReplayAfterReconnect(t *testing.T) {
	hs := start(t, setup{})
	env := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "before"})
	mention := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	hs.srv.WaitPosts(2, wait)
	if err := hs.srv.Disconnect("refresh_requested"); err != nil {
		t.Fatal(err)
	}
	if err := hs.srv.WaitConnected(2, wait); err != nil {
		t.Fatal(err)
	}
	// The same events again: the same event_id with attempt 0, and the
	// same messages under new event ids (a different envelope).
	var e struct {
		Event json.RawMessage `json:"event"`
	}
	json.Unmarshal(env.Payload, &e)
	replays := []slacktest.Envelope{hs.srv.Redeliver(env, 0), hs.srv.EventsAPI(e.Event)}
	json.Unmarshal(mention.Payload, &e)
	var inner map[string]any
	json.Unmarshal(e.Event, &inner)
	delete(inner, "client_msg_id")
	replays = append(replays, hs.srv.EventsAPI(inner))
	for _, r := range replays {
		if _, err := hs.srv.WaitAck(r.ID, wait); err != nil {
			t.Fatal(err)
		}
	}
	hs.quiet(t, 2)
	// New messages are still answered on the new connection.
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "after"})
	posts := hs.posts(t, 3)
	if posts[2].Text != "echo: after" {
		t.Errorf("posts %+v", posts)
	}
}

func TestDropConnection(t *testing.T) {
	hs := start(t, setup{})
	if err := hs.srv.DropConnection(); err != nil {
		t.Fatal(err)
	}
	// A message sent while the socket is down waits for the new one.
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "during the outage"})
	if err := hs.srv.WaitConnected(2, wait); err != nil {
		t.Fatal(err)
	}
	hs.posts(t, 1)
	waitFor(t, "Ready", hs.bot.Ready)
	hs.srv.Disconnect("warning")
	hs.srv.WaitConnected(3, wait)
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "later"})
	hs.posts(t, 2)
	hs.quiet(t, 2)
}

func TestRateLimitedPost(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("chat.postMessage", slacktest.RateLimited(time.Millisecond)) // Retry-After: 1
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "busy?"})
	hs.posts(t, 1)
	hs.quiet(t, 1)
	calls := hs.srv.Calls("chat.postMessage")
	if len(calls) != 2 || calls[0].Status != 429 || calls[1].Status != 200 {
		t.Fatalf("calls %+v", calls)
	}
	if d := calls[1].Time.Sub(calls[0].Time); d < time.Second {
		t.Errorf("retried after %v, before Retry-After", d)
	}

	// Bounded: after postAttempts 429s the reply is given up, not looped.
	hs.srv.FailNextN("chat.postMessage", postAttempts, slacktest.RateLimited(time.Millisecond))
	hs.bot.maxWaitFor = 10 * time.Millisecond
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "very busy?"})
	waitFor(t, "the attempts", func() bool { return len(hs.srv.Calls("chat.postMessage")) == 2+postAttempts })
	waitFor(t, "the error log", func() bool { return strings.Contains(hs.logs.String(), "cannot post the reply") })
	hs.quiet(t, 1)
	// Other errors are not retried (the message may have been posted).
	hs.srv.FailNext("chat.postMessage", slacktest.HTTPError(503))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "and now?"})
	waitFor(t, "the call", func() bool { return len(hs.srv.Calls("chat.postMessage")) == 3+postAttempts })
	hs.quiet(t, 1)
}

func TestLongReplySplit(t *testing.T) {
	hs := start(t, setup{})
	var md strings.Builder
	md.WriteString("# Report\n\n")
	// Long enough for several parts, short enough for the 5-part cap.
	for i := range 6 {
		fmt.Fprintf(&md, "Paragraph %d: %s\n\n", i, strings.Repeat("words and **more** words ", 40))
	}
	md.WriteString("```go\n")
	for i := range 150 {
		fmt.Fprintf(&md, "fmt.Println(%d, \"<x>\") // a line of code\n", i)
	}
	md.WriteString("```\n\nThe end.")
	hs.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: md.String()}, nil })
	env := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	want := formatReply(md.String())
	if len(want) < 3 || len(want) > maxParts {
		t.Fatalf("%d parts", len(want))
	}
	posts := hs.posts(t, len(want))
	hs.quiet(t, len(want))
	var texts []string
	for i, p := range posts {
		if p.ThreadTS != env.TS || p.Text != want[i] {
			t.Errorf("post %d in %q: %.60q; want %.60q", i, p.ThreadTS, p.Text, want[i])
		}
		texts = append(texts, p.Text)
	}
	checkParts(t, texts, maxPartRunes)
	if !strings.HasPrefix(texts[0], "*Report*") || !strings.HasSuffix(texts[len(texts)-1], "The end.") {
		t.Errorf("order: %.30q … %.30q", texts[0], texts[len(texts)-1])
	}
}

func TestRepliesCannotPing(t *testing.T) {
	hs := start(t, setup{})
	hs.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) {
		return mnemo.Reply{Text: "Hey @here and @channel, <!everyone> <!subteam^S1|@devs> <@U1> [x](<!here>)"}, nil
	})
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	posts := hs.posts(t, 1)
	checkNoPing(t, posts[0].Text, true)
	if !strings.Contains(posts[0].Text, "@\u200bhere") || !strings.Contains(posts[0].Text, "&lt;!everyone&gt;") {
		t.Errorf("post %q", posts[0].Text)
	}
}

func TestFailedAndBrokenReplies(t *testing.T) {
	hs := start(t, setup{})
	hs.h.SetReply(func(t mnemo.Task) (mnemo.Reply, error) {
		switch t.Text {
		case "failed":
			return mnemo.Reply{Text: mnemo.ApologyText, Failed: true}, nil
		case "empty":
			return mnemo.Reply{}, nil
		case "error":
			return mnemo.Reply{Failed: true}, context.Canceled
		}
		panic("boom")
	})
	for i, c := range []struct{ text, want string }{
		{"failed", mnemo.ApologyText},
		{"empty", mnemo.ApologyText},
		{"error", pipeline.ErrorReplyText},
		{"panic", pipeline.ErrorReplyText},
	} {
		env := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> " + c.text})
		posts := hs.posts(t, i+1)
		if p := posts[i]; p.ThreadTS != env.TS || p.Text != escapeText(c.want) {
			t.Errorf("%s: post %+v", c.text, p)
		}
	}
	// A reply Slack refuses for good is logged, not retried.
	hs.h.SetReply(nil)
	hs.srv.FailNext("chat.postMessage", slacktest.APIError("channel_not_found"))
	hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	waitFor(t, "the error log", func() bool { return strings.Contains(hs.logs.String(), "channel_not_found") })
	hs.quiet(t, 4)
}

func TestStatusFallsBackToReaction(t *testing.T) {
	hs := start(t, setup{})
	// A passing failure: a reaction this time, the status next time.
	hs.srv.FailNext("assistant.threads.setStatus", slacktest.HTTPError(500))
	e1 := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	hs.srv.WaitPosts(1, wait)
	hs.srv.FailNext("assistant.threads.setStatus", slacktest.APIError("missing_scope"))
	e2 := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	hs.srv.WaitPosts(2, wait)
	e3 := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
	hs.srv.WaitPosts(3, wait)
	waitFor(t, "reactions", func() bool { return len(hs.srv.Reactions()) == 6 })
	if n := len(hs.srv.Calls("assistant.threads.setStatus")); n != 2 {
		t.Errorf("setStatus called %d times after missing_scope", n)
	}
	seen := map[string]string{}
	for _, r := range hs.srv.Reactions() {
		seen[r.Timestamp] += r.Method + " "
	}
	for _, e := range []slacktest.Envelope{e1, e2, e3} {
		if seen[e.TS] != "reactions.add reactions.remove " {
			t.Errorf("reactions on %s: %q", e.TS, seen[e.TS])
		}
	}
	if !strings.Contains(hs.logs.String(), "showing a reaction while thinking instead") {
		t.Error("fallback not logged")
	}
	// Reactions refused for good: no indicator at all, still a reply.
	hs.srv.FailNext("reactions.add", slacktest.APIError("missing_scope"))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1"})
	hs.srv.WaitPosts(4, wait)
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1"})
	hs.srv.WaitPosts(5, wait)
	if n := len(hs.srv.Calls("reactions.add")); n != 4 {
		t.Errorf("reactions.add called %d times", n)
	}
	// A passing reaction failure is only that.
	hs.bot.noReactions.Store(false)
	hs.srv.FailNext("reactions.add", slacktest.HTTPError(502))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1"})
	hs.srv.WaitPosts(6, wait)
	if hs.bot.noReactions.Load() {
		t.Error("a 502 disabled reactions")
	}
}

func TestUserNames(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("users.info", slacktest.HTTPError(500))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1"})
	hs.srv.WaitPosts(1, wait)
	hs.srv.SetUser(slacktest.User{ID: "U1", Name: "alice.a", RealName: strings.Repeat("Long Name ", 20)})
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1"})
	hs.srv.WaitPosts(2, wait)
	hs.srv.FailNext("users.info", slacktest.APIError("missing_scope"))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U2"})
	hs.srv.WaitPosts(3, wait)
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U3"})
	hs.srv.WaitPosts(4, wait)
	tasks := hs.h.Tasks()
	if tasks[0].Speaker != "" || utf8.RuneCountInString(tasks[1].Speaker) != 80 || !strings.HasPrefix(tasks[1].Speaker, "Long Name Long") ||
		tasks[2].Speaker != "" || tasks[3].Speaker != "" {
		t.Errorf("speakers %q %q %q %q", tasks[0].Speaker, tasks[1].Speaker, tasks[2].Speaker, tasks[3].Speaker)
	}
	if n := len(hs.srv.Calls("users.info")); n != 3 {
		t.Errorf("users.info called %d times", n)
	}
}

func TestShutdownFinishesTasks(t *testing.T) {
	hs := start(t, setup{})
	release := hs.h.Hold()
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "slow"})
	hs.h.WaitTasks(t, 1, wait)
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Run returned before the task finished: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if posts := hs.srv.Posts(); len(posts) != 1 || posts[0].Text != "echo: slow" {
		t.Errorf("posts after shutdown %+v", posts)
	}
	if hs.bot.Ready() {
		t.Error("still ready")
	}
	if err := hs.bot.Run(context.Background()); err == nil {
		t.Error("a second Run did not fail")
	}
}

func TestBoundedConcurrency(t *testing.T) {
	hs, release := busyBot(t)
	if n := len(hs.h.Tasks()); n != 1 {
		t.Errorf("%d tasks running with one slot", n)
	}
	release()
	posts := hs.posts(t, 2)
	if posts[0].Text != "echo: one" || posts[1].Text != "echo: two" {
		t.Errorf("posts %+v", posts)
	}
}

func TestShutdownWhileBusy(t *testing.T) {
	hs, release := busyBot(t)
	// A slash command waiting for a slot when shutdown starts: nothing
	// breaks.
	hs.bot.pipe.Slots <- struct{}{}
	hs.srv.SlashCommand(slacktest.SlashCommand{})
	waitFor(t, "the busy log", func() bool { return strings.Contains(hs.logs.String(), "too many commands in progress") })
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	// The bot is no longer ready once its loop has seen the stop.
	waitFor(t, "the stop to begin", func() bool { return !hs.bot.Ready() })
	release()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	<-hs.bot.pipe.Slots
	// The message waiting for a slot was acked: it is answered before Run
	// returns.
	if n := len(hs.h.Tasks()); n != 2 {
		t.Errorf("%d tasks; the one waiting for a slot at shutdown should run", n)
	}
	if posts := hs.srv.Posts(); len(posts) != 2 || posts[1].Text != "echo: two" {
		t.Errorf("posts %+v", posts)
	}
	if rs := hs.srv.Responses(); len(rs) != 0 {
		t.Errorf("the command waiting at shutdown was answered: %+v", rs)
	}
}

// TestBusyConversation: a conversation holds at most queue.PerConversation
// messages; one more is answered at once that the bot is busy, and the
// others in order.
func TestBusyConversation(t *testing.T) {
	hs := start(t, setup{})
	release := hs.h.Hold()
	var envs []slacktest.Envelope
	for i := range queue.PerConversation + 1 {
		envs = append(envs, hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: fmt.Sprint("m", i)}))
	}
	// The last one is refused while the first waits for its answer.
	posts := hs.posts(t, 1)
	if posts[0].Text != escapeText(pipeline.BusyReplyText) || posts[0].Channel != "D1" || posts[0].ThreadTS != "" {
		t.Errorf("busy post %+v", posts[0])
	}
	// The first is being answered; no other of its conversation starts.
	if n := len(hs.h.WaitTasks(t, 1, wait)); n != 1 {
		t.Errorf("%d tasks started in one conversation", n)
	}
	if !strings.Contains(hs.logs.String(), "answering that the bot is busy") {
		t.Error("the busy reply was not logged")
	}
	release()
	posts = hs.posts(t, queue.PerConversation+1)
	hs.quiet(t, queue.PerConversation+1)
	for i, p := range posts[1:] {
		if want := fmt.Sprint("echo: m", i); p.Text != want || p.Channel != "D1" {
			t.Errorf("post %d: %q; want %q", i+1, p.Text, want)
		}
	}
	tasks := hs.h.Tasks()
	if len(tasks) != queue.PerConversation {
		t.Fatalf("%d tasks", len(tasks))
	}
	for i, tk := range tasks {
		if tk.Text != fmt.Sprint("m", i) {
			t.Errorf("task %d: %q", i, tk.Text)
		}
	}
	for _, e := range envs {
		if _, err := hs.srv.WaitAck(e.ID, wait); err != nil {
			t.Error(err)
		}
	}

	// A busy reply that cannot be posted is logged.
	release = hs.h.Hold()
	for i := range queue.PerConversation {
		hs.srv.Message(slacktest.MessageEvent{Channel: "D2", User: "U1", Text: fmt.Sprint("n", i)})
	}
	hs.h.WaitTasks(t, queue.PerConversation+1, wait)
	waitFor(t, "the queue", func() bool { return hs.bot.pipe.Queue.Len() == queue.PerConversation })
	hs.srv.FailNext("chat.postMessage", slacktest.APIError("channel_not_found"))
	hs.srv.Message(slacktest.MessageEvent{Channel: "D2", User: "U1", Text: "one too many"})
	waitFor(t, "the error log", func() bool { return strings.Contains(hs.logs.String(), "cannot post the busy reply") })
	release()
	hs.posts(t, 2*queue.PerConversation+1)
}

func TestBadFrames(t *testing.T) {
	hs := start(t, setup{})
	// An events_api envelope slack-go cannot parse is still acked.
	hs.srv.SendRaw([]byte(`{"envelope_id":"bad-1","type":"events_api","payload":{"type":"event_callback","event":{"type":"no_such_event"}},"accepts_response_payload":false}`))
	if _, err := hs.srv.WaitAck("bad-1", wait); err != nil {
		t.Fatal(err)
	}
	hs.srv.SendRaw([]byte(`{"type":"no_such_type"}`))
	hs.srv.SendRaw([]byte(`not json`))
	// Other envelope types are acked and ignored.
	env := hs.srv.Push(slacktest.Envelope{Type: "interactive", Payload: json.RawMessage(`{"type":"view_submission","user":{"id":"U1"}}`)})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	env = hs.srv.Push(slacktest.Envelope{Type: "interactive", Payload: json.RawMessage(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"other","block_id":"b","value":"v"}]}`)})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	env = hs.srv.EventsAPI(map[string]any{"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages"})
	hs.srv.WaitAck(env.ID, wait)
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "still fine"})
	hs.posts(t, 1)
}

func TestTokenShapes(t *testing.T) {
	h := bottest.NewHandler()
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{AppToken: "xapp-1", Handler: h}, []string{"SLACK_BOT_TOKEN is not set", "OAuth & Permissions"}},
		{Config{BotToken: "xapp-1-A", AppToken: "xapp-1", Handler: h}, []string{"SLACK_BOT_TOKEN must start with xoxb-", "app-level token", "xoxb-"}},
		{Config{BotToken: "xoxp-1", AppToken: "xapp-1", Handler: h}, []string{"SLACK_BOT_TOKEN", "user token"}},
		{Config{BotToken: "xoxb-1", Handler: h}, []string{"SLACK_APP_TOKEN is not set", "connections:write", "Basic Information"}},
		{Config{BotToken: "xoxb-1", AppToken: "xoxb-2", Handler: h}, []string{"SLACK_APP_TOKEN must start with xapp-", "bot token", "connections:write"}},
		{Config{BotToken: "xoxb-1", AppToken: "nonsense", Handler: h}, []string{"SLACK_APP_TOKEN must start with xapp-"}},
		{Config{BotToken: "xoxb-1 2", AppToken: "xapp-1", Handler: h}, []string{"SLACK_BOT_TOKEN contains spaces"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h, APIURL: "ftp://x"}, []string{"SLACK_API_URL"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h, APIURL: "::"}, []string{"SLACK_API_URL"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h, ChannelMemory: "all"}, []string{"slack.channelMemory", "full, read or off"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h, Identities: map[string]string{"slack:T1": "x"}}, []string{"slack:TEAM_ID/USER_ID"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h, Identities: map[string]string{"slack:T1/U1": "../x"}}, []string{"not a valid memory user name"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h, Identities: map[string]string{"slack:T1/U1": ".x"}}, []string{"not a valid memory user name"}},
		{Config{BotToken: "xoxb-1", AppToken: "xapp-1"}, []string{"Handler"}},
	} {
		_, err := New(c.cfg)
		if err == nil {
			t.Errorf("New(%+v) succeeded", c.cfg)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		for _, tok := range []string{c.cfg.BotToken, c.cfg.AppToken} {
			if len(tok) > 4 && strings.Contains(err.Error(), tok) {
				t.Errorf("error %q shows a token", err)
			}
		}
	}
	b, err := New(Config{BotToken: " xoxb-1\n", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api", Handler: h,
		// The config's identities hold every platform's accounts: Slack uses its own.
		Identities: map[string]string{"slack:T1/U1": "zhangsan", "discord:80351110224678912": "zhangsan"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.cfg.BotToken != "xoxb-1" || b.cfg.APIURL != "http://127.0.0.1:1/api/" || b.cfg.ChannelMemory != "read" || b.Ready() {
		t.Errorf("config %+v", b.cfg)
	}
	b, _ = New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", Handler: h})
	if b.cfg.APIURL != DefaultAPIURL {
		t.Errorf("default API URL %q", b.cfg.APIURL)
	}
}

func TestRefusedTokens(t *testing.T) {
	// The bot token is refused by auth.test.
	srv := slacktest.New(t, slacktest.Options{})
	b, _ := New(Config{BotToken: "xoxb-wrong", AppToken: srv.Options().AppToken, APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	err := b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN was refused by Slack (invalid_auth)") ||
		!strings.Contains(err.Error(), "OAuth & Permissions") || strings.Contains(err.Error(), "xoxb-wrong") {
		t.Errorf("Run = %v", err)
	}
	// The app token is refused by apps.connections.open.
	b, _ = New(Config{BotToken: srv.Options().BotToken, AppToken: "xapp-wrong", APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SLACK_APP_TOKEN was refused by Slack (invalid_auth)") ||
		!strings.Contains(err.Error(), "connections:write") {
		t.Errorf("Run = %v", err)
	}
	// An app token without the scope: socketmode would retry forever;
	// the adapter stops with the fix.
	srv.FailNext("apps.connections.open", slacktest.APIError("missing_scope"))
	b, _ = New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SLACK_APP_TOKEN was refused by Slack (missing_scope)") {
		t.Errorf("Run = %v", err)
	}
	// A wrong SLACK_API_URL (404 from apps.connections.open).
	srv.FailNext("apps.connections.open", slacktest.HTTPError(404))
	b, _ = New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 404; check SLACK_API_URL") {
		t.Errorf("Run = %v", err)
	}
	// A wrong SLACK_API_URL (404 from auth.test) is not retried.
	srv.FailNext("auth.test", slacktest.HTTPError(404))
	b, _ = New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SLACK_API_URL") || len(srv.Calls("auth.test")) != 5 {
		t.Errorf("Run = %v; %d auth.test calls", err, len(srv.Calls("auth.test")))
	}
}

func TestAuthTestRetries(t *testing.T) {
	// Passing failures of auth.test are retried.
	srv := slacktest.New(t, slacktest.Options{})
	srv.FailNext("auth.test", slacktest.HTTPError(500))
	srv.FailNext("auth.test", slacktest.RateLimited(time.Millisecond))
	b, _ := New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	b.retryBase, b.maxWaitFor = time.Millisecond, 5*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	if err := srv.WaitConnected(1, wait); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Calls("auth.test")); n != 3 {
		t.Errorf("%d auth.test calls", n)
	}

	// Nobody answers: the error names the variable and the URL.
	b, _ = New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api/", Handler: bottest.NewHandler()})
	b.retryBase = time.Millisecond
	err := b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SLACK_API_URL") || !strings.Contains(err.Error(), "http://127.0.0.1:1/api/") {
		t.Errorf("Run = %v", err)
	}
	// Cancelled while checking the token: nil.
	logs := &bottest.LogBuffer{}
	b, _ = New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api/", Handler: bottest.NewHandler(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	b.retryBase = time.Hour
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	waitFor(t, "the first auth.test to fail", func() bool { return strings.Contains(logs.String(), "auth.test failed; retrying") })
	cancel() // during the hour's wait before the next auth.test
	if err := <-done; err != nil {
		t.Errorf("Run cancelled during auth.test = %v", err)
	}
}

func TestConnectRetries(t *testing.T) {
	// A passing apps.connections.open failure is retried by socketmode.
	srv := slacktest.New(t, slacktest.Options{})
	srv.FailNext("apps.connections.open", slacktest.HTTPError(500))
	b, _ := New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(), Handler: bottest.NewHandler()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	if err := srv.WaitConnected(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Ready() {
		t.Error("ready after Run")
	}
	if errors.Is(ctx.Err(), context.Canceled) && len(srv.Calls("apps.connections.open")) != 2 {
		t.Errorf("%d apps.connections.open calls", len(srv.Calls("apps.connections.open")))
	}
}

// busyBot starts a Bot with one task slot (and one command slot), held by
// a first message whose handler is held until release is called, and a second message (of
// another conversation) waiting for the slot.
func busyBot(t *testing.T) (*harness, func()) {
	t.Helper()
	hs := start(t, setup{bot: func(b *Bot) {
		b.pipe.Queue = queue.New(1, queue.PerConversation)
		b.pipe.Slots = make(chan struct{}, 1)
	}})
	release := hs.h.Hold()
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "one"})
	hs.h.WaitTasks(t, 1, wait)
	env := hs.srv.Message(slacktest.MessageEvent{Channel: "D2", User: "U2", Text: "two"})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second message", func() bool { return hs.bot.pipe.Queue.Len() == 2 })
	return hs, release
}

// Credentials written into SLACK_API_URL never reach a log or an error.
func TestAPIURLCredentialsNotShown(t *testing.T) {
	logs := &bottest.LogBuffer{}
	b, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://user:secret@127.0.0.1:1/api/",
		Handler: bottest.NewHandler(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	b.retryBase = time.Millisecond
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SLACK_API_URL") {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(err.Error()+logs.String(), "secret") {
		t.Errorf("the password was shown:\n%v\n%s", err, logs)
	}
	if _, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "ftp://user:secret@host/", Handler: bottest.NewHandler()}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("New: %v", err)
	}
}
