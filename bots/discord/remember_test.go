package discord

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/remember/remembertest"
)

// rememberIn uses "Remember this" as u on target, in channel of the
// guild (a DM for "").
func (hs *harness) rememberIn(u discordgo.User, channel string, target discordgo.Message) discordgo.Interaction {
	i := discordgo.Interaction{ChannelID: dmID, User: &u}
	if channel != "" {
		i = discordgo.Interaction{GuildID: guildID, ChannelID: channel, Member: &discordgo.Member{User: &u}}
	}
	return hs.srv.MessageCommand(rememberName, i, target)
}

// followups waits for n webhook calls and returns the POSTed (followup) ones.
func followups(t *testing.T, hs *harness, n int) []discordtest.WebhookEdit {
	t.Helper()
	es, err := hs.srv.WaitWebhookEdits(n, wait)
	if err != nil {
		t.Fatal(err)
	}
	var out []discordtest.WebhookEdit
	for _, e := range es {
		if e.Method == "POST" {
			out = append(out, e)
		}
	}
	return out
}

// Someone else's message in a guild channel: the interaction is deferred
// ephemerally at once, the message kept in the chooser's private memory
// as its author's words with its place and link, and the deferred answer
// edited to a confirmation naming the file, with an Undo only the
// chooser may use.
func TestRememberThisSomeoneElses(t *testing.T) {
	k := &remembertest.Keeper{}
	hs := start(t, setup{config: func(c *Config) { c.Keeper = k }})
	when := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	target := hs.srv.MessageCreate(discordgo.Message{ID: "500000000000000001", ChannelID: channelID, GuildID: guildID,
		Author: &bob, Content: "The release moves to **Friday**", Timestamp: when})
	i := hs.rememberIn(alice, channelID, target)
	resp, edit := hs.answer(t, i, 1)
	if resp.Response.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource ||
		resp.Response.Data == nil || resp.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("the interaction was answered %+v; want a deferred ephemeral response", resp.Response)
	}
	if edit.Edit.Content == nil || !strings.Contains(*edit.Edit.Content, "Kept in your private memory: `episodes/2026-11.md`") {
		t.Errorf("confirmation %+v", edit.Edit)
	}
	ids := buttons(edit)
	if len(ids) != 1 || !strings.HasPrefix(ids[0], buttonUndo) {
		t.Fatalf("buttons %v", ids)
	}
	kept := k.Kept()
	if len(kept) != 1 {
		t.Fatalf("kept %+v", kept)
	}
	m := kept[0]
	if m.User != "discord-"+aliceID || m.Own || m.Author != "bob" || m.Speaker != "Alice" || m.Platform != "discord" ||
		m.Text != "The release moves to **Friday**" || !m.Time.Equal(when) {
		t.Errorf("kept %+v", m)
	}
	if m.Origin.Place != "#"+channelID || m.Origin.Link != "https://discord.com/channels/"+guildID+"/"+channelID+"/500000000000000001" {
		t.Errorf("origin %+v", m.Origin)
	}
	// bob's press is refused with a private note; the confirmation stays.
	hs.press(bob, edit, ids[0])
	if f := followups(t, hs, 2); len(f) != 1 || !strings.Contains(f[0].Message.Content, "Only the person who kept this message can undo it") ||
		f[0].Message.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("bob's Undo: %+v", f)
	}
	hs.press(alice, edit, ids[0])
	es, err := hs.srv.WaitWebhookEdits(3, wait)
	if err != nil {
		t.Fatal(err)
	}
	last := es[2]
	if last.Method != "PATCH" || last.Edit.Content == nil || !strings.Contains(*last.Edit.Content, "Undone: episodes/2026-11.md") || len(buttons(last)) != 0 {
		t.Errorf("Undo: %+v", last)
	}
	if len(k.Undone()) != 1 {
		t.Errorf("undone %v", k.Undone())
	}
	if len(hs.srv.Posts()) != 0 {
		t.Errorf("something was posted in the channel: %+v", hs.srv.Posts())
	}
}

// The person's own DM message is kept as theirs; an Undo after a later
// keeping refuses; a command of another name is not taken.
func TestRememberThisOwnAndStale(t *testing.T) {
	k := &remembertest.Keeper{}
	hs := start(t, setup{config: func(c *Config) { c.Keeper = k }})
	own := discordgo.Message{ID: "500000000000000002", Author: &alice, Content: "my badge is 42"}
	_, first := hs.answer(t, hs.rememberIn(alice, "", own), 1)
	hs.answer(t, hs.rememberIn(alice, "", discordgo.Message{ID: "500000000000000003", Author: &alice, Content: "lunch at noon"}), 2)
	kept := k.Kept()
	if len(kept) != 2 || !kept[0].Own || kept[0].Author != "" || kept[0].Origin.Place != "dm" ||
		!strings.HasPrefix(kept[0].Origin.Link, "https://discord.com/channels/@me/"+dmID+"/") {
		t.Errorf("kept %+v", kept)
	}
	hs.press(alice, first, buttons(first)[0])
	if f := followups(t, hs, 3); len(f) != 1 || !strings.Contains(f[0].Message.Content, "Nothing was undone") {
		t.Errorf("a stale Undo: %+v", f)
	}
	hs.srv.MessageCommand("Translate", discordgo.Interaction{ChannelID: dmID, User: &alice}, own)
	hs.settle(t)
	if len(k.Kept()) != 2 {
		t.Error("another app's message command was taken for Remember this")
	}
}

// A person not let in gets the access answer and nothing is kept; without
// a Keeper, or without the resolved message, the command says so.
func TestRememberThisRefused(t *testing.T) {
	k := &remembertest.Keeper{}
	policy := access.Policy{Mode: access.Allowlist, Allow: []access.Entry{{Kind: access.User, ID: aliceID}}}
	hs := start(t, setup{config: func(c *Config) {
		c.Keeper = k
		c.Access = access.NewGate(access.GateOptions{Platform: access.Discord, Policy: policy, Log: c.Logger})
	}})
	_, edit := hs.answer(t, hs.rememberIn(bob, channelID, discordgo.Message{ID: "500000000000000004", Author: &bob, Content: "keep me"}), 1)
	if edit.Edit.Content == nil || !strings.Contains(*edit.Edit.Content, "mnemo access allow discord:user:"+bobID) || len(buttons(edit)) != 0 {
		t.Errorf("refusal %+v", edit.Edit)
	}
	if len(k.Kept()) != 0 {
		t.Errorf("a refused person's message was kept: %+v", k.Kept())
	}
	i := hs.srv.InteractionCreate(discordgo.Interaction{ChannelID: dmID, User: &alice,
		Data: discordgo.ApplicationCommandInteractionData{Name: rememberName, CommandType: discordgo.MessageApplicationCommand, TargetID: "500000000000000005"}})
	if _, edit := hs.answer(t, i, 2); edit.Edit.Content == nil || !strings.Contains(*edit.Edit.Content, "did not send me that message") {
		t.Errorf("no resolved message: %+v", edit.Edit)
	}

	bare := start(t, setup{})
	_, edit = bare.answer(t, bare.rememberIn(alice, "", discordgo.Message{ID: "500000000000000006", Author: &alice, Content: "x"}), 1)
	if edit.Edit.Content == nil || !strings.Contains(*edit.Edit.Content, "not available") {
		t.Errorf("without a Keeper: %+v", edit.Edit)
	}
}

// Refused REST calls are logged and nothing more is tried; an interaction
// without a user is ignored; a message in a thread is placed in its
// channel's thread; an Undo without a Keeper says so.
func TestRememberThisRESTFailures(t *testing.T) {
	k := &remembertest.Keeper{}
	hs := start(t, setup{config: func(c *Config) { c.Keeper = k }})
	target := discordgo.Message{ID: "500000000000000010", Author: &bob, Content: "in the thread"}
	hs.srv.FailNext("POST /api/v9/interactions/", discordtest.HTTPError(400, 40060, "Interaction has already been acknowledged."))
	hs.rememberIn(alice, threadID, target)
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot acknowledge Remember this") })
	hs.srv.FailNext("PATCH /api/v9/webhooks/", discordtest.HTTPError(404, 10015, "Unknown Webhook"))
	hs.rememberIn(alice, threadID, target)
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot answer Remember this") })
	if kept := k.Kept(); len(kept) != 1 || kept[0].Origin.Place != "#"+channelID+" thread" {
		t.Errorf("kept %+v; want the message of the thread, placed in its channel's thread", kept)
	}
	_, edit := hs.answer(t, hs.rememberIn(alice, "", discordgo.Message{ID: "500000000000000011", Author: &alice, Content: "x"}), 1)
	hs.srv.FailNext("POST /api/v9/interactions/", discordtest.HTTPError(400, 40060, "Interaction has already been acknowledged."))
	hs.press(alice, edit, buttons(edit)[0])
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot acknowledge an Undo") })
	hs.srv.FailNext("PATCH /api/v9/webhooks/", discordtest.HTTPError(404, 10015, "Unknown Webhook"))
	hs.press(alice, edit, buttons(edit)[0])
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot answer an Undo") })
	hs.srv.MessageCommand(rememberName, discordgo.Interaction{ChannelID: dmID, User: &discordgo.User{ID: "not-a-snowflake", Username: "x"}}, target)
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "interaction without a user; ignored") })
	hs.bot.wg.Wait()
	if len(k.Undone()) != 1 { // the second press undid; only its answer was refused
		t.Errorf("undone %v", k.Undone())
	}

	bare := start(t, setup{})
	bare.press(alice, edit, buttons(edit)[0])
	if f := followups(t, bare, 1); len(f) != 1 || !strings.Contains(f[0].Message.Content, "not available") {
		t.Errorf("an Undo without a Keeper: %+v", f)
	}
}
