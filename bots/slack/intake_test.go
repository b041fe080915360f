package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/intake/intaketest"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// metadata is a post's reply metadata: whom it answers and which part.
func metadata(t *testing.T, p slacktest.Post) (string, int) {
	t.Helper()
	var m struct {
		EventType    string `json:"event_type"`
		EventPayload struct {
			ReplyTo string `json:"reply_to"`
			Part    int    `json:"part"`
		} `json:"event_payload"`
	}
	if err := json.Unmarshal([]byte(p.Params.Get("metadata")), &m); err != nil || m.EventType != replyEventType {
		t.Fatalf("post without reply metadata: %q (%v)", p.Params.Get("metadata"), err)
	}
	return m.EventPayload.ReplyTo, m.EventPayload.Part
}

// A message is acknowledged only once it is in the journal on disk; one
// that cannot be made durable is not acknowledged (nor answered), and is
// answered when Slack delivers it again.
func TestAckAfterJournal(t *testing.T) {
	dir := t.TempDir()
	files := &intaketest.FailingFiles{}
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = dir }, bot: func(b *Bot) { b.rt.Faults = files.Hook }})
	release := hs.h.Hold()
	env := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "hi"})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "slack.jsonl"))
	if err != nil || !strings.Contains(string(b), `"id":"msg:T0TEAM/D1/`+env.TS+`"`) {
		t.Fatalf("acked before it was journaled: %q, %v", b, err)
	}
	release()
	hs.posts(t, 1)

	files.Fail.Store(true)
	env = hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "again"})
	waitFor(t, "the refusal", func() bool { return strings.Contains(hs.logs.String(), "message not acknowledged") })
	logs := hs.logs.String()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "file="+filepath.Join(dir, "slack.jsonl")) ||
		!strings.Contains(logs, "input/output error") {
		t.Errorf("the journal error is not logged with the file and the cause:\n%s", logs)
	}
	for _, a := range hs.srv.Acks() {
		if a.EnvelopeID == env.ID {
			t.Fatal("an envelope was acked though its message is not durable")
		}
	}
	files.Fail.Store(false)
	again := hs.srv.Redeliver(env, 1)
	if _, err := hs.srv.WaitAck(again.ID, wait); err != nil {
		t.Fatal(err)
	}
	posts := hs.posts(t, 2)
	if posts[1].Text != "echo: again" {
		t.Fatalf("posts %+v", posts)
	}
	if n := len(hs.h.Tasks()); n != 2 {
		t.Errorf("%d tasks", n)
	}
}

// journaled writes what a previous run left in dir: each message, and for
// those with a reply, that it was being posted.
func journaled(t *testing.T, dir string, msgs []*incoming, replies map[string]string, extra ...intake.Entry) {
	t.Helper()
	j, err := intake.Open(intake.Options{Dir: dir, Name: "slack"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var es []intake.Entry
	for _, m := range msgs {
		data, _ := json.Marshal(m.wire())
		es = append(es, intake.Entry{ID: m.ID, Keys: m.Keys, User: "slack-" + m.team + "-" + m.author, Data: data})
	}
	for i, err := range j.Add(append(es, extra...)...) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	for _, m := range msgs {
		if r, ok := replies[m.ID]; ok {
			if err := j.Posting(m.ID, r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func dmIncoming(channel, user, ts, text string) *incoming {
	return &incoming{Message: pipeline.Message{ID: "msg:T0TEAM/" + channel + "/" + ts, Keys: []string{"event:Ev" + ts},
		DM: true, Text: text, Conversation: "slack:T0TEAM:" + channel + ":"},
		workspace: "T0TEAM", team: "T0TEAM", author: user, channel: channel, ts: ts}
}

// After a restart the journal's messages are answered in order: a message
// not answered yet runs through the handler; a reply the crash interrupted
// is finished without the parts Slack has already (read from their
// metadata, in a DM's history or a thread); an unreadable entry is dropped
// with an error; a redelivery of a replayed message is not answered again.
func TestReplayAfterRestart(t *testing.T) {
	dir := t.TempDir()
	a := dmIncoming("D1", "U1", "1700000001.000100", "question A")
	b := dmIncoming("D2", "U2", "1700000001.000200", "question B")
	c := &incoming{Message: pipeline.Message{ID: "msg:T0TEAM/C1/1700000001.000400", Text: "question C",
		Conversation: "slack:T0TEAM:C1:1700000001.000050"}, workspace: "T0TEAM", team: "T0TEAM", author: "U3", channel: "C1",
		ts: "1700000001.000400", threadTS: "1700000001.000050", replyTS: "1700000001.000050"}
	long := strings.Repeat("alpha ", 500) + "\n\n" + strings.Repeat("beta ", 500)
	parts := formatReply(long)
	if len(parts) != 2 {
		t.Fatalf("the long reply has %d parts; the test wants 2", len(parts))
	}
	meta := func(to string, part int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"event_type":"mnemo_reply","event_payload":{"reply_to":%q,"part":%d}}`, to, part))
	}
	journaled(t, dir, []*incoming{a, b, c}, map[string]string{b.ID: long, c.ID: "reply C"},
		intake.Entry{ID: "msg:T0TEAM/D9/1", User: "x", Data: json.RawMessage(`{"workspace":"../x"}`)})
	hs := start(t, setup{
		config: func(cfg *Config) { cfg.IntakeDir = dir },
		prepare: func(srv *slacktest.Server) {
			srv.AddMessage("D2", slacktest.Message{User: "U2", Text: "question B", TS: b.ts})
			srv.AddMessage("D2", slacktest.Message{User: "U0BOT", BotID: "B0BOT", Text: parts[0], TS: "1700000001.000300",
				Metadata: meta(b.ID, 0)})
			// Not parts of b's reply: another reply's, a person's, and one from before b.
			srv.AddMessage("D2", slacktest.Message{User: "U0BOT", BotID: "B0BOT", Text: "x", TS: "1700000001.000301",
				Metadata: meta("msg:T0TEAM/D2/1", 1)})
			srv.AddMessage("D2", slacktest.Message{User: "U2", Text: "x", TS: "1700000001.000302", Metadata: meta(b.ID, 1)})
			srv.AddMessage("D2", slacktest.Message{User: "U0BOT", BotID: "B0BOT", Text: "x", TS: "1700000001.000199",
				Metadata: meta(b.ID, 1)})
			srv.AddMessage("C1", slacktest.Message{User: "U3", Text: "root", TS: c.threadTS})
		},
	})
	posts := hs.posts(t, 3)
	waitFor(t, "the journal to empty", func() bool { return hs.bot.pipe.Journal().Len() == 0 })
	if posts = hs.srv.Posts(); len(posts) != 3 {
		t.Fatalf("%d posts after the replay; want 3: %+v", len(posts), posts)
	}
	got := map[string]slacktest.Post{}
	for _, p := range posts {
		to, part := metadata(t, p)
		got[fmt.Sprint(to, "#", part)] = p
	}
	if p := got[a.ID+"#0"]; p.Channel != "D1" || p.Text != "echo: question A" || p.ThreadTS != "" {
		t.Errorf("a: %+v", p)
	}
	if p := got[b.ID+"#1"]; p.Channel != "D2" || p.Text != parts[1] {
		t.Errorf("b: %+v", p)
	}
	if p := got[c.ID+"#0"]; p.Channel != "C1" || p.Text != "reply C" || p.ThreadTS != c.threadTS {
		t.Errorf("c: %+v", p)
	}
	if tasks := hs.h.Tasks(); len(tasks) != 1 || tasks[0].Text != "question A" || tasks[0].User != "slack-T0TEAM-U1" {
		t.Errorf("tasks %+v", tasks)
	}
	if !strings.Contains(hs.logs.String(), "cannot be answered; dropping it") {
		t.Error("the unreadable entry was not reported")
	}
	// Slack delivers a again (its ack was lost in the crash): not answered twice.
	env := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", TS: a.ts, Text: "question A"})
	if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
		t.Fatal(err)
	}
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "next"})
	posts = hs.posts(t, 4)
	if posts[3].Text != "echo: next" {
		t.Fatalf("posts %+v", posts)
	}
	if !strings.Contains(hs.logs.String(), "duplicate message ignored") {
		t.Error("the redelivery was not recognised")
	}
}

// When the conversation cannot be read, an interrupted reply is posted
// whole: twice is better than never.
func TestResumeUnreadable(t *testing.T) {
	dir := t.TempDir()
	a := dmIncoming("D1", "U1", "1700000001.000100", "question A")
	journaled(t, dir, []*incoming{a}, map[string]string{a.ID: "reply A"})
	hs := start(t, setup{
		config: func(cfg *Config) { cfg.IntakeDir = dir },
		prepare: func(srv *slacktest.Server) {
			srv.FailNext("conversations.history", slacktest.APIError("missing_scope"))
		},
	})
	intaketest.CheckResumeUnreadable(t, hs.intakeRun(t))
}

// Forget drops the user's queued messages: they are never answered, and
// their busy reply neither.
func TestForgetQueued(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = t.TempDir() }})
	release := hs.h.Hold()
	for i := range 3 {
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: fmt.Sprint("m", i)})
	}
	hs.srv.Message(slacktest.MessageEvent{Channel: "D2", User: "U2", Text: "other"})
	hs.h.WaitTasks(t, 2, wait)
	waitFor(t, "the queue", func() bool { return hs.bot.pipe.Queue.Len() == 4 })
	if n := hs.bot.Forget("slack-T0TEAM-U9"); n != 0 {
		t.Errorf("Forget of nobody = %d", n)
	}
	if n := hs.bot.Forget("slack-T0TEAM-U1"); n != 2 {
		t.Fatalf("Forget = %d; want the 2 waiting", n)
	}
	release()
	waitFor(t, "the queue to empty", func() bool { return hs.bot.pipe.Queue.Len() == 0 && hs.bot.pipe.Journal().Len() == 0 })
	posts := hs.srv.Posts()
	if len(posts) != 2 || len(hs.h.Tasks()) != 2 {
		t.Fatalf("posts %+v", posts)
	}
	if n := strings.Count(hs.logs.String(), "its user's memory was forgotten since it came"); n != 2 {
		t.Errorf("%d forgotten messages logged", n)
	}
}

// A busy reply is journaled like an answer: posted once, out of the journal.
func TestBusyJournaled(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = t.TempDir() }})
	release := hs.h.Hold()
	defer release()
	for i := range queue.PerConversation + 1 {
		hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: fmt.Sprint("m", i)})
	}
	posts := hs.posts(t, 1)
	if posts[0].Text != pipeline.BusyReplyText {
		t.Fatalf("posts %+v", posts)
	}
	if to, _ := metadata(t, posts[0]); !strings.HasPrefix(to, "msg:T0TEAM/D1/") {
		t.Errorf("busy reply to %q", to)
	}
	waitFor(t, "the busy message out of the journal", func() bool { return hs.bot.pipe.Journal().Len() == queue.PerConversation })
}

// A journal that cannot be opened stops Run with an error naming it.
func TestJournalOpenError(t *testing.T) {
	intaketest.CheckOpenError(t, "slack", func(dir string) error {
		b, _ := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api/", Handler: bottest.NewHandler(),
			IntakeDir: dir})
		return b.Run(context.Background())
	})
}

// A reply that cannot be journaled is posted anyway, and logged.
func TestReplyJournalError(t *testing.T) {
	intaketest.CheckReplyJournalError(t, func(faults durable.Hook) intaketest.Run {
		return start(t, setup{config: func(c *Config) { c.IntakeDir = t.TempDir() }, bot: func(b *Bot) { b.rt.Faults = faults }}).intakeRun(t)
	})
}

// intakeRun drives hs in the checks intaketest shares: the test's user is
// U1, writing in D1; a message is taken once it is acknowledged.
func (hs *harness) intakeRun(t *testing.T) intaketest.Run {
	return intaketest.Run{Handler: hs.h, Logs: hs.logs,
		Send: func(text string) {
			env := hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: text})
			if _, err := hs.srv.WaitAck(env.ID, wait); err != nil {
				t.Fatal(err)
			}
		},
		Posts: func(n int) []string {
			var texts []string
			for _, p := range hs.posts(t, n) {
				texts = append(texts, p.Text)
			}
			return texts
		}}
}
