package discord

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
)

func TestDirectMessage(t *testing.T) {
	hs := start(t, setup{})
	m := hs.dm(alice, "hello <@"+hs.srv.Options().BotID+"> there")
	p := hs.posts(t, 1)[0]
	// The mention is dropped, nothing else.
	if p.ChannelID != dmID || p.Body.Content != "echo: hello  there" {
		t.Errorf("post %+v", p.Body)
	}
	if p.Body.Reference == nil || p.Body.Reference.MessageID != m.ID || p.Body.Reference.ChannelID != dmID {
		t.Errorf("not a reply to the message: %+v", p.Body.Reference)
	}
	am := p.Body.AllowedMentions
	if am == nil || am.Parse == nil || len(am.Parse) != 0 || am.RepliedUser {
		t.Errorf("allowed mentions %+v: model text could ping", am)
	}
	tasks := hs.h.Tasks()
	if len(tasks) != 1 {
		t.Fatalf("tasks %+v", tasks)
	}
	task := tasks[0]
	if task.User != "discord-"+aliceID || task.Platform != "discord" || task.Channel ||
		task.ChannelMemory != mnemo.ChannelMemoryFull || task.Speaker != "Alice" ||
		task.Conversation != "discord:dm:"+dmID || len(task.Context) != 0 || task.Time.IsZero() {
		t.Errorf("task %+v", task)
	}
	if want := (mnemo.Origin{Place: "dm", Link: "https://discord.com/channels/@me/" + dmID + "/" + m.ID}); task.Origin != want {
		t.Errorf("origin %+v, want %+v", task.Origin, want)
	}
	// The bot's own post came back as MESSAGE_CREATE and was not answered.
	hs.settle(t)
	if n := len(hs.h.Tasks()); n != 2 {
		t.Errorf("%d tasks; the bot answered itself?", n)
	}
	if ty := hs.srv.Typings(); len(ty) < 1 || ty[0].ChannelID != dmID {
		t.Errorf("typing %+v", ty)
	}
}

func TestIgnored(t *testing.T) {
	hs := start(t, setup{})
	bot := hs.srv.Options().BotID
	botUser := discordgo.User{ID: otherBot, Username: "otherbot", Bot: true}
	for _, m := range []discordgo.Message{
		{ChannelID: dmID, Author: &botUser, Content: "from a bot"},
		{ChannelID: channelID, GuildID: guildID, Author: &alice, Content: "no mention"},
		{ChannelID: channelID, GuildID: guildID, Author: &alice, Content: "a webhook <@" + bot + ">", WebhookID: "500000000000000001",
			Mentions: []*discordgo.User{{ID: bot}}},
		{ChannelID: dmID, Author: &alice, Content: "pinned", Type: discordgo.MessageTypeChannelPinnedMessage},
		{ChannelID: dmID, Author: &discordgo.User{ID: "not-a-snowflake"}, Content: "bad id"},
		{ChannelID: dmID, Author: &discordgo.User{ID: bot, Bot: true}, Content: "myself"},
	} {
		hs.srv.MessageCreate(m)
	}
	hs.settle(t)
	if got := hs.srv.Posts(); len(got) != 1 {
		t.Fatalf("%d posts; want only the settle answer: %+v", len(got), got)
	}
	for _, want := range []string{"from a bot", "neither a mention", "from a webhook", "not a user message", "malformed ids", "from the bot itself"} {
		if !strings.Contains(hs.logs.String(), want) {
			t.Errorf("no %q in the logs", want)
		}
	}
}

func TestGuildMentionAndReplyToBot(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.ChannelMemory = mnemo.ChannelMemoryOff }})
	m := hs.mention(alice, channelID, "what is <@!"+bobID+"> doing in <#"+channelID+"> <:party:123>? <@&77> <@999> <t:1700000000:R>", &bob)
	p := hs.posts(t, 1)[0]
	if p.ChannelID != channelID || p.Body.Reference == nil || p.Body.Reference.MessageID != m.ID || p.Body.Reference.GuildID != guildID {
		t.Errorf("post %+v", p.Body)
	}
	task := hs.h.Tasks()[0]
	if !task.Channel || task.ChannelMemory != mnemo.ChannelMemoryOff || task.Conversation != "discord:"+guildID+":"+channelID+":"+aliceID ||
		task.Text != "what is @bob doing in #channel :party:? @role @user <t:1700000000:R>" {
		t.Errorf("task %+v", task)
	}
	// Bob replies to the bot's message without mentioning it.
	bobMsg := hs.srv.MessageCreate(discordgo.Message{
		ChannelID: channelID, GuildID: guildID, Author: &bob, Content: "and me?", Type: discordgo.MessageTypeReply,
		MessageReference:  &discordgo.MessageReference{MessageID: p.Message.ID, ChannelID: channelID, GuildID: guildID},
		ReferencedMessage: &p.Message,
	})
	p2 := hs.posts(t, 2)[1]
	if p2.Body.Reference == nil || p2.Body.Reference.MessageID != bobMsg.ID {
		t.Errorf("second post %+v", p2.Body)
	}
	task2 := hs.h.Tasks()[1]
	if task2.User != "discord-"+bobID || task2.Speaker != "bob" {
		t.Errorf("task %+v", task2)
	}
	// The reply chain: Alice's mention, then the bot's answer.
	ctx := task2.Context
	if len(ctx) != 2 || !strings.Contains(ctx[0].Text, "what is") || ctx[0].Author != "Alice" || ctx[0].FromSpeaker ||
		ctx[1].Text != p.Body.Content || !strings.Contains(ctx[1].Author, "(you, the assistant)") {
		t.Errorf("context %+v", ctx)
	}
	// The chain came from the cache: no message was fetched.
	if calls := hs.srv.Calls("GET /api/v9/channels/" + channelID + "/messages"); len(calls) != 0 {
		t.Errorf("REST fetched messages: %+v", calls)
	}
}

func TestReplyChainThroughREST(t *testing.T) {
	hs := start(t, setup{})
	// An old exchange the bot has not seen in this process.
	first := hs.srv.AddMessage(discordgo.Message{ChannelID: channelID, GuildID: guildID, Author: &alice, Content: "my cat is Tom"})
	botUser := discordgo.User{ID: hs.srv.Options().BotID, Username: "mnemo", Bot: true}
	second := hs.srv.AddMessage(discordgo.Message{ChannelID: channelID, GuildID: guildID, Author: &botUser, Content: "Nice name!",
		MessageReference: &discordgo.MessageReference{MessageID: first.ID, ChannelID: channelID}})
	hs.srv.MessageCreate(discordgo.Message{
		ChannelID: channelID, GuildID: guildID, Author: &alice, Content: "what is his name?", Type: discordgo.MessageTypeReply,
		MessageReference:  &discordgo.MessageReference{MessageID: second.ID, ChannelID: channelID},
		ReferencedMessage: &second,
	})
	hs.posts(t, 1)
	ctx := hs.h.Tasks()[0].Context
	if len(ctx) != 2 || ctx[0].Text != "my cat is Tom" || !ctx[0].FromSpeaker || ctx[1].Text != "Nice name!" {
		t.Errorf("context %+v", ctx)
	}
	if calls := hs.srv.Calls("GET /api/v9/channels/" + channelID + "/messages/" + first.ID); len(calls) != 1 {
		t.Errorf("the first message was fetched %d times", len(calls))
	}
}

func TestThread(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.AddMessage(discordgo.Message{ChannelID: threadID, GuildID: guildID, Author: &bob, Content: "the deploy failed"})
	hs.srv.AddMessage(discordgo.Message{ChannelID: threadID, GuildID: guildID, Author: &alice, Content: "which step?"})
	hs.mention(alice, threadID, "can you help?")
	p := hs.posts(t, 1)[0]
	if p.ChannelID != threadID {
		t.Errorf("post %+v", p)
	}
	task := hs.h.Tasks()[0]
	if task.Conversation != "discord:"+guildID+":"+threadID || len(task.Context) != 2 ||
		task.Context[0].Text != "the deploy failed" || task.Context[0].Author != "bob" ||
		task.Context[1].Text != "which step?" || !task.Context[1].FromSpeaker {
		t.Errorf("task %+v", task)
	}
	// A thread belongs to its channel's memory: the place names the
	// channel, the link the message in the thread.
	if o := task.Origin; o.Place != "#"+channelID+" thread" || !strings.HasPrefix(o.Link, "https://discord.com/channels/"+guildID+"/"+threadID+"/") {
		t.Errorf("origin %+v", o)
	}
	// The channel's kind is asked for once.
	hs.mention(bob, threadID, "me too")
	hs.posts(t, 2)
	if calls := hs.srv.Calls("GET /api/v9/channels/" + threadID); countExact(calls, "/api/v9/channels/"+threadID) != 1 {
		t.Errorf("channel looked up %d times", countExact(calls, "/api/v9/channels/"+threadID))
	}
}

func countExact(calls []discordtest.Call, path string) int {
	n := 0
	for _, c := range calls {
		if c.Path == path {
			n++
		}
	}
	return n
}

func TestIdentities(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) {
		c.Identities = map[string]string{"discord:" + aliceID: "zhangsan", "slack:T1/U1": "zhangsan"}
	}})
	hs.dm(alice, "hi")
	hs.dm(bob, "hi")
	hs.posts(t, 2)
	users := map[string]bool{}
	for _, task := range hs.h.Tasks() {
		users[task.User] = true
	}
	if !users["zhangsan"] || !users["discord-"+bobID] {
		t.Errorf("users %v", users)
	}
}

func TestLongReplySplit(t *testing.T) {
	hs := start(t, setup{})
	var b strings.Builder
	for i := 0; b.Len() < 6000; i++ {
		fmt.Fprintf(&b, "Paragraph %d has some words in it to fill the line.\n\n", i)
	}
	long := b.String()
	hs.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: long}, nil })
	m := hs.dm(alice, "tell me everything")
	posts := hs.posts(t, 4)
	hs.settle(t)
	posts = hs.srv.Posts()
	var got []string
	for _, p := range posts {
		if p.Body.Reference != nil && p.Body.Reference.MessageID != m.ID {
			break // the settle answer
		}
		got = append(got, p.Body.Content)
		if n := utf8.RuneCountInString(p.Body.Content); n > maxMessageRunes {
			t.Errorf("a part of %d characters", n)
		}
		if p.Body.AllowedMentions == nil || len(p.Body.AllowedMentions.Parse) != 0 {
			t.Errorf("part without allowed mentions: %+v", p.Body.AllowedMentions)
		}
	}
	if len(got) < 3 || len(got) > maxParts {
		t.Fatalf("%d parts", len(got))
	}
	if posts[0].Body.Reference == nil || posts[1].Body.Reference != nil {
		t.Errorf("only the first part is a reply: %+v %+v", posts[0].Body.Reference, posts[1].Body.Reference)
	}
	if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.Join(strings.Fields(long), " ") {
		t.Error("the parts do not add up to the reply")
	}
}

func TestReplyParts(t *testing.T) {
	huge := strings.Repeat("word ", 5000) // 25,000 characters
	parts := replyParts(huge)
	if len(parts) != maxParts || !strings.HasSuffix(parts[maxParts-1], cutNote) {
		t.Fatalf("%d parts, last ends %q", len(parts), parts[len(parts)-1][max(0, len(parts[len(parts)-1])-80):])
	}
	for _, p := range parts {
		if utf8.RuneCountInString(p) > maxMessageRunes {
			t.Errorf("part of %d", utf8.RuneCountInString(p))
		}
	}
	code := "```\n" + strings.Repeat("x = 1\n", 3000) + "```"
	parts = replyParts(code)
	if last := parts[len(parts)-1]; strings.Count(last, "```")%2 != 0 {
		t.Errorf("unbalanced fence in the cut part: %q", last[len(last)-100:])
	}
	if got := replyParts(" \u200b "); len(got) != 1 || got[0] != mnemo.ApologyText {
		t.Errorf("empty reply → %q", got)
	}
	if got := clean.Text("a\x1b[31mred\u202e\u200bb\r\nc\td\U000E0041"); got != "a[31mredb\nc\td" {
		t.Errorf("cleanText %q", got)
	}
}

func TestBusyConversation(t *testing.T) {
	hs := start(t, setup{})
	release := hs.h.Hold()
	var sent []discordgo.Message
	for i := range queue.PerConversation + 1 {
		sent = append(sent, hs.dm(alice, fmt.Sprint("message ", i)))
	}
	// The last one is refused at once, before any answer.
	p := hs.posts(t, 1)[0]
	if p.Body.Content != pipeline.BusyReplyText || p.Body.Reference.MessageID != sent[queue.PerConversation].ID {
		t.Errorf("busy post %+v", p.Body)
	}
	release()
	posts := hs.posts(t, queue.PerConversation+1)
	for i, p := range posts[1:] {
		if want := fmt.Sprint("echo: message ", i); p.Body.Content != want || p.Body.Reference.MessageID != sent[i].ID {
			t.Errorf("post %d: %q, want %q in order", i, p.Body.Content, want)
		}
	}
}

func TestTypingRefreshed(t *testing.T) {
	hs := start(t, setup{})
	hs.bot.typingEvery = 5 * 1e6 // 5ms
	release := hs.h.Hold()
	hs.dm(alice, "think hard")
	if _, err := hs.srv.WaitTypings(3, wait); err != nil {
		t.Fatal(err)
	}
	release()
	p := hs.posts(t, 1)[0]
	// No typing in the DM after the reply, while a message in another
	// channel (with typings of its own) is answered.
	hs.mention(bob, channelID, "settle")
	hs.posts(t, 2)
	for _, ty := range hs.srv.Typings() {
		if ty.ChannelID == p.ChannelID && ty.Seq > p.Seq {
			t.Errorf("typing %+v after the post %d", ty, p.Seq)
		}
	}
}

func TestHandlerFailures(t *testing.T) {
	hs := start(t, setup{})
	hs.h.SetReply(func(t mnemo.Task) (mnemo.Reply, error) {
		switch t.Text {
		case "error":
			return mnemo.Reply{}, errors.New("no slot")
		case "panic":
			panic("boom")
		case "empty":
			return mnemo.Reply{Text: "  "}, nil
		}
		return mnemo.Reply{Text: mnemo.ApologyText, Failed: true}, nil
	})
	want := map[string]string{"error": pipeline.ErrorReplyText, "panic": pipeline.ErrorReplyText, "empty": mnemo.ApologyText, "failed": mnemo.ApologyText}
	ids := map[string]string{}
	for _, text := range []string{"error", "panic", "empty", "failed"} {
		ids[hs.dm(alice, text).ID] = text
	}
	for _, p := range hs.posts(t, 4) {
		text := ids[p.Body.Reference.MessageID]
		if p.Body.Content != want[text] {
			t.Errorf("%s → %q", text, p.Body.Content)
		}
	}
	if !strings.Contains(hs.logs.String(), "boom") {
		t.Error("the panic was not logged")
	}
}

func TestContextFetchFailures(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("GET /api/v9/channels/"+threadID+"/messages", discordtest.HTTPError(403, 50001, "Missing Access"))
	hs.mention(alice, threadID, "in a thread I cannot read")
	hs.posts(t, 1)
	if task := hs.h.Tasks()[0]; len(task.Context) != 0 {
		t.Errorf("context %+v", task.Context)
	}
	// A reply to a message that cannot be fetched.
	hs.srv.MessageCreate(discordgo.Message{
		ChannelID: channelID, GuildID: guildID, Author: &alice, Content: "<@" + hs.srv.Options().BotID + "> about that",
		Mentions:         []*discordgo.User{{ID: hs.srv.Options().BotID}},
		Type:             discordgo.MessageTypeReply,
		MessageReference: &discordgo.MessageReference{MessageID: "999999999999999999", ChannelID: channelID},
	})
	hs.posts(t, 2)
	if task := hs.h.Tasks()[1]; len(task.Context) != 0 {
		t.Errorf("context %+v", task.Context)
	}
	for _, want := range []string{"cannot read the thread", "cannot read an earlier message"} {
		if !strings.Contains(hs.logs.String(), want) {
			t.Errorf("no %q in the logs", want)
		}
	}
}

// TestReplyPartsRendered: what Discord would show as raw Markdown is
// rendered before the split (markdown.Discord), and a ~~~ block is split
// like a ``` one.
func TestReplyPartsRendered(t *testing.T) {
	got := replyParts("| a | b |\n|---|--:|\n| x | 10 |\n\n#### Four\n\n__bold__")
	if want := "```\na |  b\n--+---\nx | 10\n```\n\n**Four**\n\n**bold**"; len(got) != 1 || got[0] != want {
		t.Errorf("parts %q\nwant %q", got, want)
	}
	parts := replyParts("~~~py\n" + strings.Repeat("print('x')\n", 400) + "~~~")
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if !strings.HasPrefix(p, "```py\n") || !strings.HasSuffix(p, "\n```") {
			t.Errorf("part %d is not a whole code block: %.30q…%q", i, p, p[len(p)-10:])
		}
	}
}

// A private thread (type 12) has a memory of its own: what is remembered
// there is not recalled in its parent channel, nor what is remembered in
// the parent there. A public thread (type 11) shares its parent's memory,
// as everyone in the channel can read it. The handler remembers and
// recalls by the task's ChannelKey, as the memory does. Before the fix a
// private thread's key was its parent's (#discord-<parent>).
func TestPrivateThreadHasItsOwnMemory(t *testing.T) {
	const private = "300000000000000009"
	hs := start(t, setup{before: func(srv *discordtest.Server) {
		srv.AddChannel(discordgo.Channel{ID: private, GuildID: guildID, Type: discordgo.ChannelTypeGuildPrivateThread,
			ParentID: channelID, Name: "a private thread"})
	}})
	var mu sync.Mutex
	remembered := map[string][]string{} // ChannelKey → what was said there
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		if fact, ok := strings.CutPrefix(task.Text, "remember "); ok {
			remembered[task.ChannelKey] = append(remembered[task.ChannelKey], fact)
			return mnemo.Reply{Text: "noted"}, nil
		}
		return mnemo.Reply{Text: "recalled: " + strings.Join(remembered[task.ChannelKey], ", ") + "."}, nil
	})
	say := func(where, text string, n int) string {
		t.Helper()
		hs.mention(alice, where, text)
		return hs.posts(t, n)[n-1].Message.Content
	}
	say(private, "remember the layoffs list", 1)
	say(channelID, "remember the sprint goal", 2)
	if got := say(channelID, "what do you know?", 3); got != "recalled: the sprint goal." {
		t.Errorf("in the parent channel: %q", got)
	}
	if got := say(threadID, "what do you know?", 4); got != "recalled: the sprint goal." {
		t.Errorf("in a public thread of it: %q", got)
	}
	if got := say(private, "what do you know?", 5); got != "recalled: the layoffs list." {
		t.Errorf("in the private thread: %q", got)
	}
	keys := map[string]string{}
	for _, task := range hs.h.Tasks() {
		keys[task.Text] = task.ChannelKey
	}
	if k := keys["remember the layoffs list"]; k != mnemo.ChannelKey("discord", private) {
		t.Errorf("the private thread's memory is %q", k)
	}
}
