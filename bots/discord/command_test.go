package discord

import (
	"errors"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// slash sends /memory <sub> [file:<file>] from u (in a guild channel when
// member, else in a DM).
func (hs *harness) slash(u discordgo.User, member bool, sub, file string) discordgo.Interaction {
	if member {
		return hs.slashIn(u, channelID, sub, file)
	}
	return hs.slashIn(u, "", sub, file)
}

// slashIn sends /memory <sub> [file:<file>] from u in the guild's channel
// (a DM for "").
func (hs *harness) slashIn(u discordgo.User, channel, sub, file string) discordgo.Interaction {
	opt := &discordgo.ApplicationCommandInteractionDataOption{Name: sub, Type: discordgo.ApplicationCommandOptionSubCommand}
	if file != "" {
		opt.Options = []*discordgo.ApplicationCommandInteractionDataOption{{Name: "file", Type: discordgo.ApplicationCommandOptionString, Value: file}}
	}
	i := discordgo.Interaction{
		Type: discordgo.InteractionApplicationCommand, ChannelID: dmID,
		Data: discordgo.ApplicationCommandInteractionData{Name: "memory", CommandType: discordgo.ChatApplicationCommand,
			Options: []*discordgo.ApplicationCommandInteractionDataOption{opt}},
	}
	if channel != "" {
		i.GuildID, i.ChannelID, i.Member = guildID, channel, &discordgo.Member{User: &u}
	} else {
		i.User = &u
	}
	return hs.srv.InteractionCreate(i)
}

// press presses the button with customID, on the message the edit e
// made, as u.
func (hs *harness) press(u discordgo.User, e discordtest.WebhookEdit, customID string) discordgo.Interaction {
	return hs.srv.InteractionCreate(discordgo.Interaction{
		Type: discordgo.InteractionMessageComponent, ChannelID: dmID, User: &u,
		Message: &discordgo.Message{ID: e.MessageID, ChannelID: dmID, Flags: discordgo.MessageFlagsEphemeral},
		Data:    discordgo.MessageComponentInteractionData{CustomID: customID, ComponentType: discordgo.ButtonComponent},
	})
}

// answer waits for the deferred response to i and the edit after it.
func (hs *harness) answer(t *testing.T, i discordgo.Interaction, edits int) (discordtest.InteractionResponse, discordtest.WebhookEdit) {
	t.Helper()
	var resp discordtest.InteractionResponse
	rs, err := hs.srv.WaitInteractionResponses(1, wait)
	for err == nil {
		found := false
		for _, r := range rs {
			if r.InteractionID == i.ID {
				resp, found = r, true
			}
		}
		if found {
			break
		}
		rs, err = hs.srv.WaitInteractionResponses(len(rs)+1, wait)
	}
	if err != nil {
		t.Fatal(err)
	}
	es, err := hs.srv.WaitWebhookEdits(edits, wait)
	if err != nil {
		t.Fatal(err)
	}
	e := es[edits-1]
	if e.Token != i.Token {
		t.Fatalf("edit %+v is not for interaction %s", e, i.ID)
	}
	return resp, e
}

// buttons returns the custom ids of the edit's buttons.
func buttons(e discordtest.WebhookEdit) []string {
	var ids []string
	if e.Edit.Components == nil {
		return nil
	}
	for _, c := range *e.Edit.Components {
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

func TestMemoryShow(t *testing.T) {
	hs := start(t, setup{})
	hs.mem.ShowText = "What I remember about you (1 files):\n\n- facts/user.md (20B): name"
	// The store answers only once the deferral is in: the adapter
	// answers Discord before its work, whatever the work costs.
	gate := make(chan struct{})
	hs.mem.Gate = gate
	i := hs.slash(alice, false, "show", "")
	_, err := hs.srv.WaitInteractionResponses(1, wait)
	close(gate)
	if err != nil {
		t.Fatalf("no deferral while the store was held: %v", err)
	}
	resp, edit := hs.answer(t, i, 1)
	if resp.Response.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource ||
		resp.Response.Data == nil || resp.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("response %+v: not a deferred ephemeral answer", resp.Response)
	}
	if edit.Edit.Content == nil || !strings.Contains(*edit.Edit.Content, "facts/user.md") {
		t.Errorf("edit %+v", edit.Edit)
	}
	if got := hs.mem.Shown(); len(got) != 1 || got[0] != "discord-"+aliceID {
		t.Errorf("shown %v", got)
	}
	// A huge listing is cut to one message.
	hs.mem.ShowText = strings.Repeat("- facts/x.md (1KB): something long\n", 200)
	i = hs.slash(bob, true, "show", "")
	_, edit = hs.answer(t, i, 2)
	if n := len([]rune(*edit.Edit.Content)); n > maxMessageRunes || !strings.Contains(*edit.Edit.Content, "mnemo memory ls") {
		t.Errorf("%d characters: %q", n, *edit.Edit.Content)
	}
	if got := hs.mem.Shown(); got[1] != "discord-"+bobID {
		t.Errorf("shown %v", got)
	}
}

func TestMemoryForgetConfirmed(t *testing.T) {
	hs := start(t, setup{})
	i := hs.slash(alice, true, "forget", "facts/food.md")
	_, edit := hs.answer(t, i, 1)
	ids := buttons(edit)
	if len(ids) != 2 || !strings.HasPrefix(ids[0], buttonConfirm) || !strings.HasPrefix(ids[1], buttonCancel) {
		t.Fatalf("buttons %v in %+v", ids, edit.Edit)
	}
	if len(hs.mem.Forgotten()) != 0 {
		t.Fatal("deleted before the button")
	}
	// Bob presses Alice's button: nothing happens, he is told privately.
	p := hs.press(bob, edit, ids[0])
	_, note := hs.answer(t, p, 2)
	if note.Method != "POST" || note.Edit.Content == nil || !strings.Contains(*note.Edit.Content, "someone else") {
		t.Errorf("note %+v", note)
	}
	if len(hs.mem.Forgotten()) != 0 {
		t.Fatal("someone else's press deleted")
	}
	// Alice presses Delete: done once.
	p = hs.press(alice, edit, ids[0])
	resp, done := hs.answer(t, p, 3)
	if resp.Response.Type != discordgo.InteractionResponseDeferredMessageUpdate {
		t.Errorf("response %+v", resp.Response)
	}
	if done.Method != "PATCH" || done.Edit.Content == nil || !strings.Contains(*done.Edit.Content, "Done") ||
		done.Edit.Components == nil || len(*done.Edit.Components) != 0 {
		t.Errorf("done %+v", done.Edit)
	}
	if got := hs.mem.Forgotten(); len(got) != 1 || got[0] != "discord-"+aliceID+":facts/food.md" {
		t.Errorf("forgotten %v", got)
	}
	// Pressed again: the token is used up.
	p = hs.press(alice, edit, ids[0])
	_, again := hs.answer(t, p, 4)
	if !strings.Contains(*again.Edit.Content, "expired") || len(hs.mem.Forgotten()) != 1 {
		t.Errorf("again %q, forgotten %v", *again.Edit.Content, hs.mem.Forgotten())
	}
}

func TestMemoryForgetAllCancelAndErrors(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.Identities = map[string]string{"discord:" + aliceID: "zhangsan"} }})
	_, edit := hs.answer(t, hs.slash(alice, false, "forget", "all"), 1)
	if !strings.Contains(*edit.Edit.Content, "linked") {
		t.Errorf("no note on linked accounts: %q", *edit.Edit.Content)
	}
	ids := buttons(edit)
	_, c := hs.answer(t, hs.press(alice, edit, ids[1]), 2)
	if !strings.Contains(*c.Edit.Content, "Cancelled") || len(hs.mem.Forgotten()) != 0 {
		t.Errorf("cancel %q", *c.Edit.Content)
	}
	// A bad file name gets the grammar and no buttons.
	_, bad := hs.answer(t, hs.slash(alice, false, "forget", "../../etc/passwd"), 3)
	if len(buttons(bad)) != 0 || !strings.Contains(*bad.Edit.Content, "facts/") {
		t.Errorf("bad path %+v", bad.Edit)
	}
	// A failing forget says so.
	hs.mem.ForgetErr = errors.New("disk on fire")
	_, edit = hs.answer(t, hs.slash(alice, false, "forget", "all"), 4)
	_, f := hs.answer(t, hs.press(alice, edit, buttons(edit)[0]), 5)
	if !strings.Contains(*f.Edit.Content, "disk on fire") {
		t.Errorf("failure %q", *f.Edit.Content)
	}
	_, h := hs.answer(t, hs.slash(alice, false, "help", ""), 6)
	if !strings.Contains(*h.Edit.Content, "forget") {
		t.Errorf("help %q", *h.Edit.Content)
	}
}

func TestOtherInteractionsIgnored(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionApplicationCommand, User: &alice,
		Data: discordgo.ApplicationCommandInteractionData{Name: "other"}})
	hs.srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionMessageComponent, User: &alice,
		Data: discordgo.MessageComponentInteractionData{CustomID: "someone_elses_button", ComponentType: discordgo.ButtonComponent}})
	hs.srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionPing})
	hs.settle(t)
	hs.bot.wg.Wait() // the interaction goroutines, had any started
	if rs := hs.srv.InteractionResponses(); len(rs) != 0 {
		t.Errorf("responses %+v", rs)
	}
}

func TestInteractionRESTFailures(t *testing.T) {
	hs := start(t, setup{})
	// The acknowledgement is refused: nothing more is tried.
	hs.srv.FailNext("POST /api/v9/interactions/", discordtest.HTTPError(400, 40060, "Interaction has already been acknowledged."))
	hs.slash(alice, false, "show", "")
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot acknowledge /memory") })
	// The edit is refused.
	hs.srv.FailNext("PATCH /api/v9/webhooks/", discordtest.HTTPError(404, 10015, "Unknown Webhook"))
	hs.slash(alice, false, "forget", "all")
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot answer /memory") })
	// A button whose acknowledgement, then whose edit, is refused.
	_, edit := hs.answer(t, hs.slash(alice, false, "forget", "all"), 1)
	hs.srv.FailNext("POST /api/v9/interactions/", discordtest.HTTPError(400, 40060, "Interaction has already been acknowledged."))
	hs.press(alice, edit, buttons(edit)[1])
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot acknowledge a /memory button") })
	hs.srv.FailNext("PATCH /api/v9/webhooks/", discordtest.HTTPError(404, 10015, "Unknown Webhook"))
	hs.press(alice, edit, buttons(edit)[1])
	waitFor(t, "the log", func() bool { return strings.Contains(hs.logs.String(), "cannot answer a /memory button") })
	if len(hs.mem.Forgotten()) != 0 {
		t.Error("a Cancel deleted")
	}
}

// /memory is registered with share and private beside show, forget and
// help, each of the two naming its file (the fake checks names and
// descriptions as Discord does).
func TestMemoryCommandRegistered(t *testing.T) {
	hs := start(t, setup{})
	sets, err := hs.srv.WaitCommandSets(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, o := range sets[0].Commands[0].Options {
		subs = append(subs, o.Name)
		if o.Name == "why" && (len(o.Options) != 1 || o.Options[0].Name != "text" || !o.Options[0].Required) {
			t.Errorf("/memory why options %+v", o.Options)
		}
		if o.Name != "share" && o.Name != "private" && o.Name != "forget" {
			continue
		}
		if len(o.Options) != 1 || o.Options[0].Name != "file" || !o.Options[0].Required || o.Options[0].Type != discordgo.ApplicationCommandOptionString {
			t.Errorf("/memory %s options %+v", o.Name, o.Options)
		}
	}
	if strings.Join(subs, " ") != "show forget share private why help" {
		t.Errorf("subcommands %v", subs)
	}
}

// /memory share and /memory private flip one of the asker's own files
// (the memory user from the interaction's user, never the text) and
// answer privately what changed; a bad name or a missing file changes
// nothing.
func TestMemoryShare(t *testing.T) {
	hs := start(t, setup{})
	alices, bobs := "discord-"+aliceID+":facts/food.md", "discord-"+bobID+":facts/food.md"
	hs.mem.Files = map[string]bool{alices: false, bobs: false}
	for n, s := range []struct {
		channel, sub, file string
		want               string
		shared             bool
	}{
		{"", "share", "facts/food.md", "`facts/food.md` is now shared with channels: I may use it in any channel you talk to me in.", true},
		{channelID, "share", "facts/food.md", "`facts/food.md` was already shared", true},
		{threadID, "private", " facts/food.md ", "`facts/food.md` is now private: I use it only when we talk in private, never in a channel.", false},
		{"", "share", "../discord-" + bobID + "/facts/food.md", "is not a memory file", false},
		{channelID, "share", "facts/nope.md", "You have no memory file `facts/nope.md`", false},
	} {
		i := hs.slashIn(alice, s.channel, s.sub, s.file)
		resp, edit := hs.answer(t, i, n+1)
		if resp.Response.Data == nil || resp.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
			t.Errorf("step %d: not an ephemeral answer: %+v", n, resp.Response)
		}
		if edit.Edit.Content == nil || !strings.Contains(*edit.Edit.Content, s.want) || len(buttons(edit)) != 0 {
			t.Errorf("step %d, /memory %s %s: %+v; want %q", n, s.sub, s.file, edit.Edit, s.want)
		}
		if hs.mem.IsShared(alices) != s.shared {
			t.Errorf("step %d: shared %v", n, hs.mem.IsShared(alices))
		}
	}
	if got := hs.mem.Sets(); len(got) != 3 || got[2] != alices+":private" {
		t.Errorf("changes %v", got)
	}
	if hs.mem.IsShared(bobs) || len(hs.srv.Posts()) != 0 || len(hs.mem.Forgotten()) != 0 {
		t.Error("someone else's file changed, or something was posted or deleted")
	}
}

// /memory in a guild channel shows its memory too, by the key its messages
// use (a thread's is its parent channel's); a DM has none; with
// channelMemory off none is asked for. The answer is the asker's alone.
func TestMemoryShowChannel(t *testing.T) {
	for _, c := range []struct {
		setting, channel, want, note string
	}{
		{"", "", "", ""},
		{"", channelID, "#discord-" + channelID, ""},
		{"read", threadID, "#discord-" + channelID, ""},
		{"full", channelID, "#discord-" + channelID, "channelMemory: full"},
		{"off", threadID, "", "channelMemory: off"},
	} {
		hs := start(t, setup{config: func(cfg *Config) { cfg.ChannelMemory = c.setting }})
		hs.mem.ShowText = "- [shared] facts/food.md (12B): likes ramen"
		resp, edit := hs.answer(t, hs.slashIn(alice, c.channel, "show", ""), 1)
		if resp.Response.Data == nil || resp.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 ||
			!strings.Contains(*edit.Edit.Content, "[shared] facts/food.md") || !strings.Contains(*edit.Edit.Content, c.note) {
			t.Errorf("%s in %q: %+v, %q", c.setting, c.channel, resp.Response, *edit.Edit.Content)
		}
		if got := hs.mem.ShownChannels(); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s in %q: shown with channel %q; want %q", c.setting, c.channel, got, c.want)
		}
		if len(hs.srv.Posts()) != 0 {
			t.Errorf("%s in %q: posted %+v", c.setting, c.channel, hs.srv.Posts())
		}
	}
}
