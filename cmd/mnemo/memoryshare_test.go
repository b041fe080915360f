package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/memory"
)

// putMemory writes a memory file by hand: rel is under the memory folder.
func (w *chatWorld) putMemory(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(w.dir, "data", "memory", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

const (
	foodFact      = "# Food\n\n> Summary: food likes\n\n- Likes ramen\n"
	decisionsFact = "# Decisions\n\n> Summary: team decisions\n\n- We ship on Fridays\n"
)

// Through `mnemo serve` and the fake Slack: /memory share in a DM changes
// the file on disk and answers only the asker (ephemeral); /memory in a
// channel marks the file shared and shows the channel's memory, privately,
// posting nothing in the channel.
func TestServeSlackMemoryShare(t *testing.T) {
	w := newChatWorld(t)
	w.putMemory(t, "slack-T0TEAM-U0ADA/facts/food.md", foodFact)
	w.putMemory(t, "#slack-T0TEAM-C0CHAN/facts/decisions.md", decisionsFact)
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut, done := w.serveRun(ctx)
	if err := slk.WaitConnected(1, 10*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, errOut.String())
	}
	type answer struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
	}
	ack := func(cmd slacktest.SlashCommand) answer {
		t.Helper()
		env := slk.SlashCommand(cmd)
		a, err := slk.WaitAck(env.ID, 10*time.Second)
		if err != nil {
			t.Fatalf("/memory %s: %v\n%s", cmd.Text, err, errOut.String())
		}
		var p answer
		if err := json.Unmarshal(a.Payload, &p); err != nil {
			t.Fatalf("/memory %s: ack %s: %v", cmd.Text, a.Payload, err)
		}
		return p
	}
	p := ack(slacktest.SlashCommand{UserID: "U0ADA", Text: "share facts/food.md"})
	if p.ResponseType != "ephemeral" || p.Text != "`facts/food.md` is now shared with channels: I may use it in any channel you talk to me in." {
		t.Errorf("share: %+v", p)
	}
	if got := w.file(t, "slack-T0TEAM-U0ADA/facts/food.md"); !memory.IsShared(got) {
		t.Errorf("the file on disk is not shared: %q", got)
	}
	p = ack(slacktest.SlashCommand{UserID: "U0ADA", ChannelID: "C0CHAN", ChannelName: "general"})
	if p.ResponseType != "ephemeral" || !strings.Contains(p.Text, "[shared] facts/food.md") || !strings.Contains(p.Text, "What I remember about this channel") ||
		!strings.Contains(p.Text, "We ship on Fridays") {
		t.Errorf("show in a channel: %+v", p)
	}
	p = ack(slacktest.SlashCommand{UserID: "U0BOB", ChannelID: "C0CHAN", ChannelName: "general", Text: "private facts/food.md"})
	if p.ResponseType != "ephemeral" || !strings.Contains(p.Text, "You have no memory file") || !memory.IsShared(w.file(t, "slack-T0TEAM-U0ADA/facts/food.md")) {
		t.Errorf("someone else's private: %+v", p)
	}
	if len(slk.Posts()) != 0 || len(slk.Responses()) != 0 {
		t.Errorf("answered in public or elsewhere: %+v %+v", slk.Posts(), slk.Responses())
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d after SIGTERM:\n%s", code, errOut.String())
	}
}

// Through `mnemo serve` and the fake Discord: /memory private in a thread
// changes the file on disk, and /memory there shows the parent channel's
// memory; both answers are ephemeral.
func TestServeDiscordMemoryShare(t *testing.T) {
	const (
		guild, channel, thread, ada = "300000000000000001", "300000000000000002", "300000000000000003", "80351110224678912"
	)
	w := newChatWorld(t)
	w.putMemory(t, "discord-"+ada+"/facts/food.md", strings.Replace(foodFact, "> Summary: food likes\n", "> Summary: food likes\n> Visibility: shared\n", 1))
	w.putMemory(t, "#discord-"+channel+"/facts/decisions.md", decisionsFact)
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
	slash := func(n int, sub, file string) string {
		t.Helper()
		opt := &discordgo.ApplicationCommandInteractionDataOption{Name: sub, Type: discordgo.ApplicationCommandOptionSubCommand}
		if file != "" {
			opt.Options = []*discordgo.ApplicationCommandInteractionDataOption{{Name: "file", Type: discordgo.ApplicationCommandOptionString, Value: file}}
		}
		i := dsc.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionApplicationCommand, GuildID: guild, ChannelID: thread,
			Member: &discordgo.Member{User: &user},
			Data: discordgo.ApplicationCommandInteractionData{Name: "memory", CommandType: discordgo.ChatApplicationCommand,
				Options: []*discordgo.ApplicationCommandInteractionDataOption{opt}}})
		rs, err := dsc.WaitInteractionResponses(n, 10*time.Second)
		if err != nil {
			t.Fatalf("/memory %s: %v\n%s", sub, err, errOut.String())
		}
		if r := rs[n-1]; r.InteractionID != i.ID || r.Response.Data == nil || r.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
			t.Errorf("/memory %s: not an ephemeral answer: %+v", sub, r)
		}
		es, err := dsc.WaitWebhookEdits(n, 10*time.Second)
		if err != nil || es[n-1].Edit.Content == nil {
			t.Fatalf("/memory %s: %+v, %v\n%s", sub, es, err, errOut.String())
		}
		return *es[n-1].Edit.Content
	}
	if got := slash(1, "private", "facts/food.md"); got != "`facts/food.md` is now private: I use it only when we talk in private, never in a channel." {
		t.Errorf("private: %q", got)
	}
	if got := w.file(t, "discord-"+ada+"/facts/food.md"); memory.IsShared(got) || !strings.Contains(got, "> Visibility: private") {
		t.Errorf("the file on disk is not private: %q", got)
	}
	if got := slash(2, "show", ""); !strings.Contains(got, "[private] facts/food.md") || !strings.Contains(got, "What I remember about this channel") ||
		!strings.Contains(got, "We ship on Fridays") {
		t.Errorf("show in a thread: %q", got)
	}
	if len(dsc.Posts()) != 0 {
		t.Errorf("posted: %+v", dsc.Posts())
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d after SIGTERM:\n%s", code, errOut.String())
	}
}

// serveRun runs `mnemo serve` through run() until ctx ends; done gets its
// exit code, errOut what it wrote to stderr.
func (w *chatWorld) serveRun(ctx context.Context) (*syncWriter, <-chan int) {
	errOut := &syncWriter{}
	done := make(chan int, 1)
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, errOut)
		done <- exitCode(err, errOut)
	}()
	return errOut, done
}
