package discord

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// memoryMention sends "@mnemo <text>" from u in channel and waits for the
// n-th post, the bot's note in the channel; it returns the DM post before
// it, if any.
func (hs *harness) memoryMention(t *testing.T, u discordgo.User, channel, text string, n int) (note discordtest.Post, dm *discordtest.Post) {
	t.Helper()
	m := hs.mention(u, channel, text)
	posts := hs.posts(t, n)
	note = posts[n-1]
	if note.ChannelID != channel || note.Body.Reference == nil || note.Body.Reference.MessageID != m.ID {
		t.Fatalf("@mnemo %s: the last post is not a note in the channel: %+v", text, note)
	}
	if n >= 2 && posts[n-2].Message.GuildID == "" {
		dm = &posts[n-2]
	}
	return note, dm
}

// pressDM presses the button customID of the DM post p, as u.
func (hs *harness) pressDM(u discordgo.User, p discordtest.Post, customID string) discordgo.Interaction {
	return hs.srv.InteractionCreate(discordgo.Interaction{
		Type: discordgo.InteractionMessageComponent, ChannelID: p.ChannelID, User: &u,
		Message: &discordgo.Message{ID: p.Message.ID, ChannelID: p.ChannelID, Content: p.Message.Content},
		Data:    discordgo.MessageComponentInteractionData{CustomID: customID, ComponentType: discordgo.ButtonComponent},
	})
}

// postButtons returns the custom ids of a post's buttons.
func postButtons(p discordtest.Post) []string {
	var ids []string
	for _, c := range p.Body.Components {
		if row, ok := c.(*discordgo.ActionsRow); ok {
			for _, b := range row.Components {
				if btn, ok := b.(*discordgo.Button); ok {
					ids = append(ids, btn.CustomID)
				}
			}
		}
	}
	return ids
}

// TestMemoryMention: "@mnemo memory …" in a guild channel or a thread is
// /memory there, answered by DM with a visible note in the channel —
// never journaled, never posted for all, never given to the model.
func TestMemoryMention(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.Identities = map[string]string{"discord:" + aliceID: "zhangsan"} }})
	hs.mem.ShowText = "facts/food.md: ramen"

	tests := []struct {
		channel, text, want string
	}{
		{channelID, "memory", "ramen"},
		{threadID, "Memory   show", "ramen"},
		{channelID, "MEMORY\nls", "ramen"},
		{threadID, "memory help", "/memory forget all"},
		{channelID, "memory bogus <@" + bobID + ">", "I don't know"},
	}
	for i, tt := range tests {
		note, dm := hs.memoryMention(t, alice, tt.channel, tt.text, 2*(i+1))
		if dm == nil {
			t.Fatalf("@mnemo %q: no DM", tt.text)
		}
		dmChannel, _ := hs.srv.DMChannel(aliceID)
		if dm.ChannelID != dmChannel || !strings.Contains(dm.Body.Content, tt.want) ||
			!strings.Contains(dm.Body.Content, "<#"+tt.channel+">") || len(dm.Message.Mentions) != 0 {
			t.Errorf("@mnemo %q: DM %+v", tt.text, dm.Body)
		}
		if note.Body.Content != mentionSentText || strings.Contains(note.Body.Content, "ramen") || len(note.Message.Mentions) != 0 {
			t.Errorf("@mnemo %q: note %+v", tt.text, note.Body)
		}
	}
	// The channel's memory, as /memory there shows (a public thread's is
	// its channel's).
	for _, ch := range hs.mem.ShownChannels() {
		if ch != mnemo.ChannelKey("discord", channelID) {
			t.Errorf("shown with channel %q", ch)
		}
	}
	if got := hs.mem.Shown(); len(got) != 3 || got[0] != "zhangsan" {
		t.Errorf("shown for %v", got)
	}
	if n := len(hs.h.Tasks()); n != 0 {
		t.Fatalf("%d tasks: a memory mention reached the model", n)
	}

	// Other words starting with "memory" are a message like any other, and
	// so is a message that only ends up with "memory" first once the
	// mention is stripped.
	hs.mention(alice, channelID, "memorize this")
	hs.srv.MessageCreate(discordgo.Message{ChannelID: channelID, GuildID: guildID, Author: &alice,
		Content:  "memory <@" + hs.srv.Options().BotID + ">",
		Mentions: []*discordgo.User{{ID: hs.srv.Options().BotID, Bot: true}}})
	if tasks := hs.h.WaitTasks(t, 2, wait); !strings.Contains(tasks[0].Text, "memorize this") || tasks[1].Text != "memory" {
		t.Errorf("tasks %+v", tasks)
	}
}

// TestMemoryMentionForget: the confirmation comes by DM with Delete and
// Cancel; another person's press is refused, the owner's deletes once.
func TestMemoryMentionForget(t *testing.T) {
	hs := start(t, setup{})
	_, dm := hs.memoryMention(t, alice, threadID, "memory forget facts/food.md", 2)
	if dm == nil || !strings.Contains(dm.Body.Content, "facts/food.md") {
		t.Fatalf("DM %+v", dm)
	}
	ids := postButtons(*dm)
	if len(ids) != 2 || !strings.HasPrefix(ids[0], buttonConfirm) || !strings.HasPrefix(ids[1], buttonCancel) {
		t.Fatalf("buttons %v", ids)
	}
	if len(hs.mem.Forgotten()) != 0 {
		t.Fatal("deleted before confirmation")
	}
	hs.pressDM(bob, *dm, ids[0])
	es, err := hs.srv.WaitWebhookEdits(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if es[0].Method != "POST" || !strings.Contains(*es[0].Edit.Content, "someone else") || len(hs.mem.Forgotten()) != 0 {
		t.Fatalf("another's press: %+v; forgotten %v", es[0], hs.mem.Forgotten())
	}
	hs.pressDM(alice, *dm, ids[0])
	es, err = hs.srv.WaitWebhookEdits(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	if got := hs.mem.Forgotten(); len(got) != 1 || got[0] != "discord-"+aliceID+":facts/food.md" ||
		es[1].MessageID != "@original" || es[1].Message.ID != dm.Message.ID || !strings.Contains(*es[1].Edit.Content, "Done") {
		t.Errorf("forgotten %v; edit %+v", got, es[1])
	}
}

// TestMemoryMentionNoDM: a person who takes no DMs is told, in the
// channel, to use /memory there — and nothing of their memory is posted.
func TestMemoryMentionNoDM(t *testing.T) {
	hs := start(t, setup{})
	hs.mem.ShowText = "facts/food.md: ramen"
	hs.srv.RefuseDMs(aliceID)
	note, dm := hs.memoryMention(t, alice, channelID, "memory", 1)
	if dm != nil || note.Body.Content != mentionNoDMText {
		t.Fatalf("note %+v; DM %+v", note.Body, dm)
	}
	for _, c := range hs.srv.Calls("POST /api/v9/channels/") {
		if strings.Contains(string(c.Body), "ramen") && c.Status < 300 {
			t.Fatalf("the memory was posted: %s", c.Body)
		}
	}
	waitFor(t, "the log line", func() bool { return strings.Contains(hs.logs.String(), "cannot DM the answer") })
}

// TestMemoryMentionRefused: someone not let in gets the refusal by DM, at
// most once an hour, and no memory.
func TestMemoryMentionRefused(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) {
		c.Access = access.NewGate(access.GateOptions{Platform: access.Discord, Policy: access.Policy{Mode: access.Allowlist}, Log: c.Logger})
	}})
	hs.mem.ShowText = "facts/food.md: ramen"
	note, dm := hs.memoryMention(t, alice, channelID, "memory", 2)
	if dm == nil || !strings.Contains(dm.Body.Content, "mnemo access allow discord:user:"+aliceID) || note.Body.Content != mentionSentText {
		t.Fatalf("DM %+v; note %+v", dm, note.Body)
	}
	hs.mention(alice, channelID, "memory")
	hs.settle(t) // the settle DM from bob is refused too, once
	for _, p := range hs.srv.Posts() {
		if strings.Contains(p.Body.Content, "ramen") {
			t.Fatalf("memory posted: %+v", p.Body)
		}
	}
	if len(hs.mem.Shown()) != 0 {
		t.Fatalf("shown %v", hs.mem.Shown())
	}
}

// TestMemoryMentionReplayed: a memory mention Discord dispatches twice (a
// RESUME replay) is answered once.
func TestMemoryMentionReplayed(t *testing.T) {
	hs := start(t, setup{})
	bot := hs.srv.Options().BotID
	seq := hs.srv.Dispatch("MESSAGE_CREATE", discordgo.Message{
		ID: "600000000000000001", ChannelID: channelID, GuildID: guildID, Author: &alice, Content: "<@" + bot + "> memory",
		Mentions: []*discordgo.User{{ID: bot, Bot: true}}, Timestamp: time.Now(),
	})
	hs.posts(t, 2)
	hs.srv.Redispatch(seq)
	hs.settle(t)
	if n := len(hs.srv.Posts()); n != 3 {
		t.Errorf("%d posts; want the DM, the note and settle's answer", n)
	}
}

// TestMemoryMentionFailures: a DM channel that cannot be opened gets the
// note to use /memory; a note that cannot be posted is logged.
func TestMemoryMentionFailures(t *testing.T) {
	hs := start(t, setup{})
	hs.mem.ShowText = "facts/food.md: ramen"
	hs.srv.FailNext("POST /api/v9/users/@me/channels", discordtest.HTTPError(500, 0, "500: Internal Server Error"))
	note, dm := hs.memoryMention(t, alice, channelID, "memory", 1)
	if dm != nil || note.Body.Content != mentionNoDMText {
		t.Fatalf("note %+v; DM %+v", note.Body, dm)
	}
	hs.srv.FailNext("POST /api/v9/channels/"+channelID+"/messages", discordtest.HTTPError(403, 50013, "Missing Permissions"))
	hs.mention(alice, channelID, "memory")
	waitFor(t, "the log line", func() bool {
		return strings.Contains(hs.logs.String(), "cannot answer a memory mention in the channel")
	})
	if posts := hs.srv.Posts(); len(posts) != 2 || posts[1].Message.GuildID != "" {
		t.Fatalf("posts %+v", posts)
	}
}

// mentionSeen forgets the oldest past mentionSeenMax.
func TestMentionSeenBounded(t *testing.T) {
	var s mentionSeen
	for i := range mentionSeenMax + 1 {
		if !s.first(strconv.Itoa(i)) {
			t.Fatalf("%d seen before", i)
		}
	}
	if s.first("5") || !s.first("0") || len(s.ids) != mentionSeenMax || len(s.order) != mentionSeenMax {
		t.Fatalf("%d ids, %d in order", len(s.ids), len(s.order))
	}
}
