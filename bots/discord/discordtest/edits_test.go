package discordtest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// The bot's messages can be edited: the edit is recorded with its body
// and time, the message changes (mentions parsed as allowed), and the
// gateway sends MESSAGE_UPDATE. Another's message, an unknown one and
// content over 2,000 characters are refused.
func TestEditMessage(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{})
	sent, err := c.dg.ChannelMessageSend(channelID, "first")
	if err != nil {
		t.Fatal(err)
	}
	content := "first words, @everyone"
	got, err := c.dg.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: sent.ID, Channel: channelID, Content: &content,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}})
	if err != nil || got.Content != content || got.EditedTimestamp == nil || got.MentionEveryone {
		t.Fatalf("edit %+v, %v", got, err)
	}
	edits, err := srv.WaitMessageEdits(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	e := edits[0]
	if e.MessageID != sent.ID || e.ChannelID != channelID || e.Body.Content == nil || *e.Body.Content != content ||
		e.Body.AllowedMentions == nil || e.Body.AllowedMentions.Parse == nil || e.At.IsZero() || len(e.RawBody) == 0 {
		t.Fatalf("recorded %+v", e)
	}
	m, err := srv.WaitMessage(channelID, sent.ID, wait, func(m discordgo.Message) bool { return m.Content == content })
	if err != nil || m.ID != sent.ID {
		t.Fatalf("message %+v, %v", m, err)
	}
	if _, err := srv.WaitMessage(channelID, "1", 10*time.Millisecond, func(discordgo.Message) bool { return true }); !errors.Is(err, discordtest.ErrTimeout) {
		t.Fatalf("an unknown message was found: %v", err)
	}

	other := srv.AddMessage(msg(channelID, "someone else's"))
	_, err = c.dg.ChannelMessageEdit(channelID, other.ID, "mine now")
	if code, _ := restCode(t, err); code != 50005 {
		t.Fatalf("edit of another's message: %v", err)
	}
	_, err = c.dg.ChannelMessageEdit(channelID, "1234567890123", "x")
	if code, _ := restCode(t, err); code != 10008 {
		t.Fatalf("edit of an unknown message: %v", err)
	}
	if _, err := c.dg.ChannelMessageEdit("999", sent.ID, "x"); err == nil {
		t.Fatal("edit in an unknown channel")
	}
	long := string(make([]rune, discordtest.MaxContentLength+1))
	if _, err := c.dg.ChannelMessageEdit(channelID, sent.ID, long); err == nil {
		t.Fatal("an edit over 2,000 characters was taken")
	}
}

// Past EditLimit edits in EditWindow in one channel an edit is answered
// 429 with the bucket's state; discordgo's rate limiter waits for the
// window instead of sending more, so every edit goes through in the end
// and no more than the limit lands in any window.
func TestEditLimit(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{EditLimit: 2, EditWindow: 200 * time.Millisecond})
	sent, err := c.dg.ChannelMessageSend(channelID, "0")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := c.dg.ChannelMessageEdit(channelID, sent.ID, string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	edits := srv.MessageEdits()
	if len(edits) != 6 || *edits[5].Body.Content != "f" {
		t.Fatalf("%d edits", len(edits))
	}
	for i := 2; i < len(edits); i++ {
		if gap := edits[i].At.Sub(edits[i-2].At); gap < 200*time.Millisecond {
			t.Errorf("edits %d and %d within %v", i-2, i, gap)
		}
	}
	// A client whose limiter does not know the bucket yet is refused.
	srv2, c2 := unopened(t, discordtest.Options{EditLimit: 1, EditWindow: time.Hour})
	sent2, _ := c2.dg.ChannelMessageSend(channelID, "0")
	c2.dg.ChannelMessageEdit(channelID, sent2.ID, "1")
	c3 := newClient(t, srv2, "")
	_, err = c3.dg.ChannelMessageEdit(channelID, sent2.ID, "2", discordgo.WithRetryOnRatelimit(false))
	var rle *discordgo.RateLimitError
	if !errors.As(err, &rle) || len(srv2.MessageEdits()) != 1 {
		t.Fatalf("over the limit: %v", err)
	}
}
