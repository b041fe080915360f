package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// A streamed reply is posted at its first words, ending the typing
// indicator, then edited: every post and edit carries an empty, non-nil
// AllowedMentions (model text pings nobody), and Discord's edit limit
// per channel holds whatever the stream's pace, by the bot's own pacing:
// the fake answers 429 past it, and no edit is refused. The final text is
// the reply, once.
func TestStreamEdits(t *testing.T) {
	const limit, window = 5, 300 * time.Millisecond
	hs := start(t, setup{opts: discordtest.Options{EditLimit: limit, EditWindow: window},
		bot: func(b *Bot) {
			b.editEvery, b.typingEvery = time.Millisecond, time.Millisecond
			b.pace = newEditPacer(clock.Real{}, limit, window)
		}})
	const deltas = 16
	var all strings.Builder
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		if task.Text != "talk" {
			return mnemo.Reply{Text: "echo: " + task.Text}, nil
		}
		for i := range deltas {
			d := fmt.Sprintf("w%d @everyone ", i)
			all.WriteString(d)
			task.Stream.Text(d)
			// Each word its own post or edit: the stream outpaces the
			// limit.
			_, err := hs.srv.WaitPosts(1, wait)
			if i > 0 {
				_, err = hs.srv.WaitMessageEdits(i, wait)
			}
			if err != nil {
				return mnemo.Reply{}, err
			}
		}
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	})
	hs.dm(alice, "talk")
	posts := hs.posts(t, 1)
	// Edit by edit, as the reply goes: wait bounds one edit's round trip,
	// not the whole stream (15 of them took 19s on a loaded machine).
	var edits []discordtest.MessageEdit
	for n := 1; n < deltas; n++ {
		var err error
		if edits, err = hs.srv.WaitMessageEdits(n, wait); err != nil {
			t.Fatal(err)
		}
	}
	typings := hs.srv.Typings()
	hs.settle(t)
	if n := len(hs.srv.Posts()); n != 2 { // the reply and settle's
		t.Errorf("%d posts", n)
	}
	final := hs.srv.Messages(dmID)
	var reply discordgo.Message
	for _, m := range final {
		if m.ID == posts[0].Message.ID {
			reply = m
		}
	}
	if want := replyParts(all.String())[0]; reply.Content != want || reply.MentionEveryone {
		t.Errorf("final %q (mentions everyone %v); want %q", reply.Content, reply.MentionEveryone, want)
	}
	if !strings.Contains(string(posts[0].RawBody), `"allowed_mentions":{"parse":[]`) {
		t.Errorf("post body %s", posts[0].RawBody)
	}
	for i, e := range edits {
		if !strings.Contains(string(e.RawBody), `"allowed_mentions":{"parse":[]`) {
			t.Errorf("edit %d body %s", i, e.RawBody)
		}
		if i >= limit {
			if gap := e.At.Sub(edits[i-limit].At); gap < window {
				t.Errorf("edits %d and %d are %v apart: more than %d in %v", i-limit, i, gap, limit, window)
			}
		}
	}
	for _, c := range hs.srv.Calls("PATCH ") {
		if c.Status == 429 {
			t.Errorf("an edit was refused (429) at %v: the pacer let it through", c.At)
		}
	}
	// Typing ended at the first words: none after the first edit.
	first := edits[0].Seq
	for _, ty := range typings {
		if ty.Seq > first {
			t.Errorf("typing shown after the first words (seq %d > %d)", ty.Seq, first)
		}
	}
}

// Past 2,000 characters a streamed reply continues in a new message,
// each within the limit and the whole shown once.
func TestStreamLong(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.editEvery = time.Millisecond }})
	word := strings.Repeat("x", 9) + " "
	var all strings.Builder
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		if task.Text != "long" {
			return mnemo.Reply{Text: "echo: " + task.Text}, nil
		}
		for range 3 * maxMessageRunes / len(word) {
			all.WriteString(word)
			task.Stream.Text(word)
		}
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	})
	hs.dm(alice, "long")
	hs.settle(t)
	want := replyParts(all.String())
	if len(want) < 2 {
		t.Fatalf("%d parts", len(want))
	}
	posts := hs.srv.Posts()
	if len(posts) != len(want)+1 {
		t.Fatalf("%d posts; want %d and settle's", len(posts), len(want))
	}
	byID := map[string]string{}
	for _, m := range hs.srv.Messages(dmID) {
		byID[m.ID] = m.Content
	}
	for i, w := range want {
		if got := byID[posts[i].Message.ID]; got != w {
			t.Errorf("message %d: %d characters; want part %d (%d)", i, len([]rune(got)), i, len([]rune(w)))
		}
	}
}
