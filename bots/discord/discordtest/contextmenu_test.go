package discordtest_test

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// A message command carries its target as Discord resolves it: the
// message the server holds (with its author, channel and guild), or the
// one given; and the client decodes it as data.type 3 with target_id.
func TestMessageCommand(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	when := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	stored := srv.AddMessage(discordgo.Message{ChannelID: channelID, GuildID: guildID, Author: &discordgo.User{ID: userID},
		Content: "stored text", Timestamp: when})
	sent := srv.MessageCommand("Remember this", discordgo.Interaction{GuildID: guildID, ChannelID: channelID,
		Member: &discordgo.Member{User: &discordgo.User{ID: userID}}}, discordgo.Message{ID: stored.ID, Content: "ignored"})
	got := c.waitInteractions(1)[0].Interaction
	data := got.ApplicationCommandData()
	if got.ID != sent.ID || data.CommandType != discordgo.MessageApplicationCommand || data.Name != "Remember this" ||
		data.TargetID != stored.ID || data.Resolved == nil {
		t.Fatalf("got %+v", got)
	}
	m := data.Resolved.Messages[stored.ID]
	if m == nil || m.Content != "stored text" || m.Author == nil || m.Author.ID != userID || !m.Timestamp.Equal(when) {
		t.Fatalf("resolved %+v", m)
	}
	srv.MessageCommand("Remember this", discordgo.Interaction{ChannelID: dmID, User: &discordgo.User{ID: userID}},
		discordgo.Message{ID: "900000000000000999", Content: "given"})
	got = c.waitInteractions(2)[1].Interaction
	m = got.ApplicationCommandData().Resolved.Messages["900000000000000999"]
	if m == nil || m.Content != "given" || m.ChannelID != dmID || m.Author == nil {
		t.Fatalf("a message the server does not hold: %+v", m)
	}
}
