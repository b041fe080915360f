package discordtest_test

import (
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// TestDMChannel: the bot opens a DM with a user (the same channel every
// time) and posts in it, unless the user refuses DMs (50007, as Discord
// answers); an unknown user is an invalid recipient.
func TestDMChannel(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{})
	c := newClient(t, srv, "")

	const bobID = "1000000000000000777"
	srv.AddUser(discordgo.User{ID: bobID, Username: "bob"})
	if _, found := srv.DMChannel(bobID); found {
		t.Fatal("a DM before any was opened")
	}
	if id, found := srv.DMChannel(userID); !found || id != dmID {
		t.Fatalf("the seeded DM: %s %v", id, found)
	}
	ch, err := c.dg.UserChannelCreate(bobID)
	if err != nil || ch.Type != discordgo.ChannelTypeDM || len(ch.Recipients) != 1 || ch.Recipients[0].ID != bobID || ch.ID == dmID {
		t.Fatalf("channel %+v, %v", ch, err)
	}
	again, err := c.dg.UserChannelCreate(bobID)
	if id, found := srv.DMChannel(bobID); err != nil || again.ID != ch.ID || !found || id != ch.ID {
		t.Fatalf("again %+v, %v; DMChannel %s %v", again, err, id, found)
	}
	if _, err := c.dg.ChannelMessageSend(ch.ID, "hello"); err != nil {
		t.Fatal(err)
	}
	if posts := srv.Posts(); len(posts) != 1 || posts[0].ChannelID != ch.ID || posts[0].Message.GuildID != "" {
		t.Fatalf("posts %+v", posts)
	}

	srv.RefuseDMs(bobID)
	if code, _ := restCode(t, must(c.dg.ChannelMessageSend(ch.ID, "again"))); code != 50007 {
		t.Fatal("a refused DM was posted")
	}
	if _, err := c.dg.ChannelMessageSend(channelID, "in a guild channel"); err != nil {
		t.Fatalf("a guild post after RefuseDMs: %v", err)
	}
	_, err = c.dg.UserChannelCreate("1")
	if code, _ := restCode(t, err); code != 50033 {
		t.Fatalf("unknown recipient: %v", err)
	}
}

// must drops a value, keeping the error.
func must[T any](_ T, err error) error { return err }
