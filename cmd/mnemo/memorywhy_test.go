package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// whyHome is a person's shared file whose lines came from a DM, from the
// channel the question is asked in, from a private channel elsewhere, and
// from a hand edit; and the channel's memory with a line said by Bob.
func whyHome(dmLink, hereLink, herePlace, elsewhere, elsewhereLink string) string {
	return "# Home\n\n> Summary: home\n> Visibility: shared\n\n" +
		"- Lives in: Berlin <!-- src: x · dm · 2026-11-20 · " + dmLink + " -->\n" +
		"- Office: Berlin Mitte <!-- src: x · " + herePlace + " · 2026-11-21 · " + hereLink + " -->\n" +
		"- Team: Berlin infra <!-- src: x · " + elsewhere + " · 2026-11-22 · " + elsewhereLink + " -->\n" +
		"- Bike: Berlin-made\n"
}

// Through `mnemo serve` and the fake Slack: /memory why in a channel
// names a source in that channel in full, a DM's and another channel's
// without their place or link; in the DM every source is shown.
func TestServeSlackMemoryWhy(t *testing.T) {
	const (
		dmLink   = "https://mnemo-test.slack.com/archives/D0ADA/p1700000000000100"
		hereLink = "https://mnemo-test.slack.com/archives/C0CHAN/p1700000000000200"
		secret   = "https://mnemo-test.slack.com/archives/C0SECRET/p1700000000000300"
	)
	w := newChatWorld(t)
	w.putMemory(t, "slack-T0TEAM-U0ADA/facts/home.md", whyHome(dmLink, hereLink, "#C0CHAN", "#C0SECRET", secret))
	w.putMemory(t, "#slack-T0TEAM-C0CHAN/facts/decisions.md",
		"# Decisions\n\n> Summary: team decisions\n\n- Berlin offsite in May <!-- src: slack · #C0CHAN · 2026-11-23 · by Bob · "+hereLink+" -->\n")
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut, done := w.serveRun(ctx)
	if err := slk.WaitConnected(1, 10*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, errOut.String())
	}
	ask := func(cmd slacktest.SlashCommand) string {
		t.Helper()
		env := slk.SlashCommand(cmd)
		a, err := slk.WaitAck(env.ID, 10*time.Second)
		if err != nil {
			t.Fatalf("/memory %s: %v\n%s", cmd.Text, err, errOut.String())
		}
		var p struct {
			ResponseType string `json:"response_type"`
			Text         string `json:"text"`
		}
		if err := json.Unmarshal(a.Payload, &p); err != nil || p.ResponseType != "ephemeral" {
			t.Fatalf("/memory %s: ack %s: %v", cmd.Text, a.Payload, err)
		}
		return p.Text
	}
	inChannel := ask(slacktest.SlashCommand{UserID: "U0ADA", ChannelID: "C0CHAN", ChannelName: "general", Text: "why Berlin"})
	for _, want := range []string{"Lives in: Berlin", "a private conversation, 2026-11-20", "Office: Berlin Mitte", hereLink,
		"another channel, 2026-11-22", "added by hand", "Berlin offsite in May", "said by Bob"} {
		if !strings.Contains(inChannel, want) {
			t.Errorf("/memory why in a channel lacks %q:\n%s", want, inChannel)
		}
	}
	for _, leak := range []string{"D0ADA", "C0SECRET", " dm,"} {
		if strings.Contains(inChannel, leak) {
			t.Errorf("/memory why in a channel shows %q:\n%s", leak, inChannel)
		}
	}
	inDM := ask(slacktest.SlashCommand{UserID: "U0ADA", Text: "why Berlin"})
	for _, want := range []string{dmLink, hereLink, secret, "#C0SECRET"} {
		if !strings.Contains(inDM, want) {
			t.Errorf("/memory why in the DM lacks %q:\n%s", want, inDM)
		}
	}
	if strings.Contains(inDM, "offsite") {
		t.Errorf("/memory why in a DM shows a channel's memory:\n%s", inDM)
	}
	if len(slk.Posts()) != 0 {
		t.Errorf("posted: %+v", slk.Posts())
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d after SIGTERM:\n%s", code, errOut.String())
	}
}

// Through `mnemo serve` and the fake Discord: /memory why in a thread
// shows the sources of its channel, and no DM's link.
func TestServeDiscordMemoryWhy(t *testing.T) {
	const (
		guild, channel, thread, ada = "300000000000000001", "300000000000000002", "300000000000000003", "80351110224678912"
		dmLink                      = "https://discord.com/channels/@me/390000000000000001/390000000000000002"
		hereLink                    = "https://discord.com/channels/" + guild + "/" + thread + "/390000000000000003"
		secret                      = "https://discord.com/channels/" + guild + "/390000000000000009/390000000000000004"
	)
	w := newChatWorld(t)
	w.putMemory(t, "discord-"+ada+"/facts/home.md", whyHome(dmLink, hereLink, "#"+channel+" thread", "#390000000000000009", secret))
	dsc := w.fakeDiscord(t, discordtest.Options{})
	dsc.AddChannel(discordgo.Channel{ID: channel, GuildID: guild, Type: discordgo.ChannelTypeGuildText, Name: "general"})
	dsc.AddChannel(discordgo.Channel{ID: thread, GuildID: guild, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: channel, Name: "a thread"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut, done := w.serveRun(ctx)
	if err := dsc.WaitReady(1, 10*time.Second); err != nil {
		t.Fatalf("no Discord session: %v\n%s", err, errOut.String())
	}
	user := discordgo.User{ID: ada, Username: "ada"}
	dsc.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionApplicationCommand, GuildID: guild, ChannelID: thread,
		Member: &discordgo.Member{User: &user},
		Data: discordgo.ApplicationCommandInteractionData{Name: "memory", CommandType: discordgo.ChatApplicationCommand,
			Options: []*discordgo.ApplicationCommandInteractionDataOption{{Name: "why", Type: discordgo.ApplicationCommandOptionSubCommand,
				Options: []*discordgo.ApplicationCommandInteractionDataOption{{Name: "text", Type: discordgo.ApplicationCommandOptionString, Value: "Berlin"}}}}}})
	es, err := dsc.WaitWebhookEdits(1, 10*time.Second)
	if err != nil || es[0].Edit.Content == nil {
		t.Fatalf("/memory why: %+v, %v\n%s", es, err, errOut.String())
	}
	got := *es[0].Edit.Content
	for _, want := range []string{"Lives in: Berlin", "a private conversation", hereLink, "another channel"} {
		if !strings.Contains(got, want) {
			t.Errorf("/memory why in a thread lacks %q:\n%s", want, got)
		}
	}
	for _, leak := range []string{"@me", "390000000000000009"} {
		if strings.Contains(got, leak) {
			t.Errorf("/memory why in a thread shows %q:\n%s", leak, got)
		}
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d after SIGTERM:\n%s", code, errOut.String())
	}
}
