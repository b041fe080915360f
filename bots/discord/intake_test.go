package discord

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/intake/intaketest"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// A message is in the journal once received, before it is answered.
func TestJournaledOnReceipt(t *testing.T) {
	dir := t.TempDir()
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = dir }})
	release := hs.h.Hold()
	m := hs.dm(alice, "hi")
	hs.h.WaitTasks(t, 1, wait)
	b, err := os.ReadFile(filepath.Join(dir, "discord.jsonl"))
	if err != nil || !strings.Contains(string(b), `"id":"msg:`+m.ID+`"`) {
		t.Fatalf("journal %q, %v", b, err)
	}
	release()
	hs.posts(t, 1)
	waitFor(t, "the journal to empty", func() bool { return hs.bot.pipe.Journal().Len() == 0 })
}

// After a restart the journal's messages are answered: one not answered
// yet through the handler; a reply the crash interrupted without the parts
// the channel has already; an unreadable entry is dropped with an error; a
// redelivery of a replayed message is not answered again.
func TestReplayAfterRestart(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("alpha ", 300) + "\n\n" + strings.Repeat("beta ", 300)
	parts := replyParts(long)
	if len(parts) != 2 {
		t.Fatalf("the long reply has %d parts; the test wants 2", len(parts))
	}
	var a, b, c discordgo.Message
	hs := start(t, setup{
		config: func(cfg *Config) { cfg.IntakeDir = dir },
		before: func(srv *discordtest.Server) {
			botUser := &discordgo.User{ID: srv.Options().BotID, Username: srv.Options().BotName, Bot: true}
			a = srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "question A"})
			b = srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &bob, Content: "question B"})
			c = srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "question C"})
			// The first part of b's reply made it. c's reply text answering
			// another message, or not from the bot, is not c's reply.
			srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: botUser, Content: parts[0],
				MessageReference: &discordgo.MessageReference{MessageID: b.ID}})
			z := srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "answered long ago"})
			srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: botUser, Content: "reply C",
				MessageReference: &discordgo.MessageReference{MessageID: z.ID}})
			srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &bob, Content: "reply C",
				MessageReference: &discordgo.MessageReference{MessageID: c.ID}})
			j, err := intake.Open(intake.Options{Dir: dir, Name: "discord"})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			for _, m := range []discordgo.Message{a, b, c} {
				in := &incoming{msg: &m, Message: pipeline.Message{DM: true, User: "discord-" + m.Author.ID, Text: m.Content, Conversation: "discord:dm:" + dmID}}
				data, _ := json.Marshal(in.wire())
				if err := j.Add(intake.Entry{ID: "msg:" + m.ID, User: in.User, Data: data})[0]; err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Add(intake.Entry{ID: "msg:1", Data: json.RawMessage(`{"msg":{"id":"x"}}`)})[0]; err != nil {
				t.Fatal(err)
			}
			j.Posting("msg:"+b.ID, long)
			j.Posting("msg:"+c.ID, "reply C")
		},
	})
	posts := hs.posts(t, 3)
	waitFor(t, "the journal to empty", func() bool { return hs.bot.pipe.Journal().Len() == 0 })
	if posts = hs.srv.Posts(); len(posts) != 3 {
		t.Fatalf("%d posts after the replay; want 3: %+v", len(posts), posts)
	}
	byText := map[string]discordtest.Post{}
	for _, p := range posts {
		byText[p.Body.Content] = p
	}
	if p, ok := byText["echo: question A"]; !ok || p.Body.Reference == nil || p.Body.Reference.MessageID != a.ID {
		t.Errorf("a: %+v", p)
	}
	if p, ok := byText[parts[1]]; !ok || p.Body.Reference != nil {
		t.Errorf("b's second part: %+v", p)
	}
	if p, ok := byText["reply C"]; !ok || p.Body.Reference == nil || p.Body.Reference.MessageID != c.ID {
		t.Errorf("c: %+v", p)
	}
	if tasks := hs.h.Tasks(); len(tasks) != 1 || tasks[0].Text != "question A" || tasks[0].User != "discord-"+aliceID {
		t.Errorf("tasks %+v", tasks)
	}
	if !strings.Contains(hs.logs.String(), "cannot be answered; dropping it") {
		t.Error("the unreadable entry was not reported")
	}
	// Discord delivers a again (a resumed session): not answered twice.
	hs.srv.MessageCreate(discordgo.Message{ID: a.ID, ChannelID: dmID, Author: &alice, Content: "question A"})
	hs.settle(t)
	if n := len(hs.srv.Posts()); n != 4 {
		t.Errorf("%d posts; want 4 (with the settle message's)", n)
	}
	if !strings.Contains(hs.logs.String(), "duplicate message ignored") {
		t.Error("the redelivery was not recognised")
	}
}

// When the channel cannot be read, an interrupted reply is posted whole;
// a busy conversation still gets it.
func TestResumeUnreadable(t *testing.T) {
	dir := t.TempDir()
	hs := start(t, setup{
		config: func(cfg *Config) { cfg.IntakeDir = dir },
		before: func(srv *discordtest.Server) {
			a := srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "question A"})
			j, err := intake.Open(intake.Options{Dir: dir, Name: "discord"})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			in := &incoming{msg: &a, Message: pipeline.Message{DM: true, User: "discord-" + aliceID, Text: a.Content, Conversation: "discord:dm:" + dmID}}
			data, _ := json.Marshal(in.wire())
			j.Add(intake.Entry{ID: "msg:" + a.ID, User: in.User, Data: data})
			j.Posting("msg:"+a.ID, "reply A")
			srv.FailNext("GET /api/v9/channels/"+dmID+"/messages", discordtest.HTTPError(403, 50001, "Missing Access"))
		},
	})
	intaketest.CheckResumeUnreadable(t, hs.intakeRun(t))
}

// Forget drops the user's queued messages: they are never answered.
func TestForgetQueued(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = t.TempDir() }})
	release := hs.h.Hold()
	for _, text := range []string{"m0", "m1", "m2"} {
		hs.dm(alice, text)
	}
	hs.h.WaitTasks(t, 1, wait)
	waitFor(t, "the queue", func() bool { return hs.bot.pipe.Queue.Len() == 3 })
	if n := hs.bot.Forget("discord-" + bobID); n != 0 {
		t.Errorf("Forget of bob = %d", n)
	}
	if n := hs.bot.Forget("discord-" + aliceID); n != 2 {
		t.Fatalf("Forget = %d; want the 2 waiting", n)
	}
	release()
	hs.settle(t)
	if posts := hs.srv.Posts(); len(posts) != 2 || posts[0].Body.Content != "echo: m0" {
		t.Fatalf("posts %+v", posts)
	}
	if n := strings.Count(hs.logs.String(), "its user's memory was forgotten since it came"); n != 2 {
		t.Errorf("%d forgotten messages logged", n)
	}
}

// A message that cannot be journaled is answered all the same (Discord
// will not deliver it again), with an error logged naming the file.
func TestJournalErrorAnswered(t *testing.T) {
	dir := t.TempDir()
	files := &intaketest.FailingFiles{}
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = dir }, bot: func(b *Bot) { b.rt.Faults = files.Hook }})
	files.Fail.Store(true)
	hs.dm(alice, "hi")
	if p := hs.posts(t, 1); p[0].Body.Content != "echo: hi" {
		t.Fatalf("posts %+v", p)
	}
	logs := hs.logs.String()
	if !strings.Contains(logs, "could not be journaled; answering it anyway") || !strings.Contains(logs, "file="+filepath.Join(dir, "discord.jsonl")) {
		t.Errorf("logs:\n%s", logs)
	}
	files.Fail.Store(false)
}

// A journal that cannot be opened stops Run with an error naming it.
func TestJournalOpenError(t *testing.T) {
	intaketest.CheckOpenError(t, "discord", func(dir string) error {
		b, _ := New(Config{Token: "t", APIURL: "http://127.0.0.1:1/", Handler: bottest.NewHandler(), IntakeDir: dir})
		return b.Run(context.Background())
	})
}

// A message that comes while the bot shuts down is journaled, not
// answered, and answered after the next start.
func TestReceivedWhileStopping(t *testing.T) {
	dir := t.TempDir()
	hs := start(t, setup{config: func(c *Config) { c.IntakeDir = dir }})
	hs.bot.pipe.Stop()
	m := hs.dm(alice, "late")
	waitFor(t, "the message", func() bool { return strings.Contains(hs.logs.String(), "answered after the next start") })
	if err := hs.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(hs.srv.Posts()); n != 0 {
		t.Fatalf("%d posts while stopping", n)
	}
	next := start(t, setup{config: func(c *Config) { c.IntakeDir = dir }})
	p := next.posts(t, 1)
	if p[0].Body.Content != "echo: late" || p[0].Body.Reference == nil || p[0].Body.Reference.MessageID != m.ID {
		t.Fatalf("posts %+v", p)
	}
}

// A reply that cannot be journaled is posted anyway, and logged.
func TestReplyJournalError(t *testing.T) {
	intaketest.CheckReplyJournalError(t, func(faults durable.Hook) intaketest.Run {
		return start(t, setup{config: func(c *Config) { c.IntakeDir = t.TempDir() }, bot: func(b *Bot) { b.rt.Faults = faults }}).intakeRun(t)
	})
}

// intakeRun drives hs in the checks intaketest shares; the test's user is alice.
func (hs *harness) intakeRun(t *testing.T) intaketest.Run {
	return intaketest.Run{Handler: hs.h, Logs: hs.logs,
		Send: func(text string) { hs.dm(alice, text) },
		Posts: func(n int) []string {
			var texts []string
			for _, p := range hs.posts(t, n) {
				texts = append(texts, p.Body.Content)
			}
			return texts
		}}
}
