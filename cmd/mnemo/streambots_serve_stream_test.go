package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// Through run(): in Slack (a mention: a stream in its thread) and in
// Discord (a DM: a post, then edits) the model's first words are shown
// while the model still writes; the reply ends up complete, once; the
// reflector gets it once.
func TestServeStreamsTheFirstWords(t *testing.T) {
	const reply = "Hello Ada, these words come one by one."
	t.Run("slack", func(t *testing.T) {
		w := newChatWorld(t)
		scriptThinker(w, func(string, int) openaitest.Reply { return openaitest.Text(reply).WithPauseAfter(3) })
		slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errOut, done := w.serveRun(ctx)
		if err := slk.WaitConnected(1, streamWait); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		env := slk.AppMention(slacktest.AppMentionEvent{Channel: "C0GEN", User: "U0ADA", Text: "<@U0BOT> hi"})
		w.srv.WaitPaused(1, streamWait)
		deadline := time.Now().Add(streamWait)
		for len(slk.Chat("chat.startStream")) == 0 && time.Now().Before(deadline) {
			<-slk.Changed()
		}
		st := slk.Chat("chat.startStream")
		if len(st) != 1 || st[0].ThreadTS != env.TS || !strings.HasPrefix(reply, st[0].Text) || strings.Contains(st[0].Text, "words") {
			t.Fatalf("first words %+v\n%s", st, errOut.String())
		}
		w.srv.Resume()
		for time.Now().Before(deadline) {
			ups := slk.Chat("chat.update")
			if len(ups) == 1 && ups[0].Text == reply {
				break
			}
			<-slk.Changed()
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut.String())
		}
		if ups := slk.Chat("chat.update"); len(ups) != 1 || ups[0].Text != reply || ups[0].TS != st[0].TS {
			t.Errorf("final %+v", ups)
		}
		if n := len(slk.Posts()); n != 0 {
			t.Errorf("%d posts besides the stream", n)
		}
		if tr := w.reflected(); strings.Count(tr, reply) != 1 {
			t.Errorf("reflected:\n%s", tr)
		}
	})
	t.Run("discord", func(t *testing.T) {
		w := newChatWorld(t)
		scriptThinker(w, func(string, int) openaitest.Reply { return openaitest.Text(reply).WithPauseAfter(3) })
		dsc := w.fakeDiscord(t, discordtest.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errOut, done := w.serveRun(ctx)
		if err := dsc.WaitReady(1, streamWait); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		dsc.MessageCreate(discordgo.Message{ChannelID: "300000000000000004", Author: &discordgo.User{ID: "80351110224678912", Username: "ada"}, Content: "hi"})
		w.srv.WaitPaused(1, streamWait)
		posts, err := dsc.WaitPosts(1, streamWait)
		if err != nil || !strings.HasPrefix(reply, posts[0].Body.Content) || strings.Contains(posts[0].Body.Content, "words") {
			t.Fatalf("first words %+v %v\n%s", posts, err, errOut.String())
		}
		w.srv.Resume()
		if _, err := dsc.WaitMessage(posts[0].ChannelID, posts[0].Message.ID, streamWait, func(m discordgo.Message) bool { return m.Content == reply }); err != nil {
			t.Fatalf("final: %v\n%s", err, errOut.String())
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut.String())
		}
		if n := len(dsc.Posts()); n != 1 {
			t.Errorf("%d posts", n)
		}
		if tr := w.reflected(); strings.Count(tr, reply) != 1 {
			t.Errorf("reflected:\n%s", tr)
		}
	})
}
