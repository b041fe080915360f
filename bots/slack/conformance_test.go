package slack

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// TestConformance runs the table every platform passes
// (bots/internal/conformance) against the Slack adapter and slacktest.
func TestConformance(t *testing.T) { conformance.Run(t, slackDriver{}) }

type slackDriver struct{}

// slackBot is a harness as the table drives it.
type slackBot struct {
	t  *testing.T
	hs *harness

	mu   sync.Mutex
	refs map[string]*slackRef // by journal id ("msg:TEAM/CHANNEL/TS")
}

// slackRef is a message sent: its envelope, to deliver it again.
type slackRef struct {
	env slacktest.Envelope
	id  string
}

func (slackDriver) Start(t *testing.T, s conformance.Setup) conformance.Bot {
	b := &slackBot{t: t, refs: map[string]*slackRef{}}
	b.hs = start(t, setup{
		bot: func(bot *Bot) { bot.editEvery = time.Millisecond }, // streamed replies update at once
		config: func(c *Config) {
			c.IntakeDir, c.ChannelMemory, c.Keeper = s.IntakeDir, s.ChannelMemory, s.Keeper
			c.AttachmentMaxBytes = s.AttachmentMaxBytes
			if s.Access != nil {
				c.Access = s.Access("slack", c.Logger)
			}
		},
		prepare: func(srv *slacktest.Server) {
			if s.Interrupted != nil {
				interrupt(t, srv, s.IntakeDir, *s.Interrupted)
			}
		},
	})
	return b
}

// interrupt journals a DM whose reply was being posted, with the first
// parts of it in the conversation already.
func interrupt(t *testing.T, srv *slacktest.Server, dir string, in conformance.Interrupted) {
	const ts = "1700000001.000100"
	m := dmIncoming("D1", slacktest.DefaultUserID, ts, in.Text)
	srv.AddMessage("D1", slacktest.Message{User: slacktest.DefaultUserID, Text: in.Text, TS: ts})
	if in.Streamed != "" {
		journaled(t, dir, []*incoming{m}, nil)
		srv.AddMessage("D1", slacktest.Message{User: "U0BOT", BotID: "B0BOT", Text: in.Streamed, TS: draftTS,
			Metadata: json.RawMessage(fmt.Sprintf(`{"event_type":"mnemo_reply","event_payload":{"reply_to":%q,"part":0}}`, m.ID))})
		if in.Unjournaled {
			return
		}
		j, err := intake.Open(intake.Options{Dir: dir, Name: "slack"})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if err := j.Drafted(m.ID, []string{draftTS}); err != nil {
			t.Fatal(err)
		}
		return
	}
	journaled(t, dir, []*incoming{m}, map[string]string{m.ID: in.Reply})
	for i, p := range formatReply(in.Reply)[:in.Posted] {
		srv.AddMessage("D1", slacktest.Message{User: "U0BOT", BotID: "B0BOT", Text: p, TS: fmt.Sprintf("1700000001.%06d", 200+i),
			Metadata: json.RawMessage(fmt.Sprintf(`{"event_type":"mnemo_reply","event_payload":{"reply_to":%q,"part":%d}}`, m.ID, i))})
	}
}

func (b *slackBot) Handler() *bottest.Handler { return b.hs.h }
func (b *slackBot) Memory() *bottest.Memory   { return b.hs.mem }

func (b *slackBot) send(channel string, env slacktest.Envelope) conformance.Ref {
	r := &slackRef{env: env, id: "msg:" + slacktest.DefaultTeamID + "/" + channel + "/" + env.TS}
	b.mu.Lock()
	b.refs[r.id] = r
	b.mu.Unlock()
	return r
}

func (b *slackBot) DM(text string) conformance.Ref {
	return b.send("D1", b.hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: slacktest.DefaultUserID, Text: text}))
}

func (b *slackBot) Mention(text string) conformance.Ref {
	return b.send("C1", b.hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: slacktest.DefaultUserID,
		Text: "<@" + slacktest.DefaultBotUserID + "> " + text}))
}

func (b *slackBot) Redeliver(m conformance.Ref) {
	r := m.(*slackRef)
	b.hs.srv.Redeliver(r.env, 1)
}

// posts are what ps show now (as last updated).
func (b *slackBot) posts(ps []slacktest.Post) []conformance.Post {
	now := map[string]string{}
	for _, u := range b.hs.srv.Chat("chat.update") {
		now[u.Channel+"/"+u.TS] = u.Text
	}
	out := make([]conformance.Post, len(ps))
	for i, p := range ps {
		out[i].Text = p.Text
		if t, ok := now[p.Channel+"/"+p.TS]; ok {
			out[i].Text = t
		}
		if to, part := metadata(b.t, p); part == 0 {
			b.mu.Lock()
			if r, ok := b.refs[to]; ok {
				out[i].To = r
			}
			b.mu.Unlock()
		}
	}
	return out
}

func (b *slackBot) Posts(n int) []conformance.Post { return b.posts(b.hs.posts(b.t, n)[:n]) }

func (b *slackBot) Settle() []conformance.Post {
	// Counted before the message is sent: its reply may come at once.
	n := len(b.hs.srv.Posts()) + 1
	b.hs.srv.Message(slacktest.MessageEvent{Channel: "D9", User: slacktest.DefaultUserID, Text: "settle"})
	b.hs.posts(b.t, n)
	waitFor(b.t, "nothing left to answer", func() bool { return b.hs.bot.pipe.Journal().Len() == 0 && b.hs.bot.Queued() == 0 })
	return b.posts(b.hs.srv.Posts())
}

// draftTS is the message a streamed reply had posted before the start.
const draftTS = "1700000001.000150"

func (b *slackBot) Draft() string {
	for _, m := range b.hs.srv.ChannelMessages("D1") {
		if m.TS == draftTS {
			return m.Text
		}
	}
	return ""
}

func (b *slackBot) Shown(ok func([]conformance.Post) bool) []conformance.Post {
	b.t.Helper()
	return conformance.WaitShown(b.t, wait, b.hs.srv.Changed, func() []conformance.Post { return b.posts(b.hs.srv.Posts()) }, ok)
}

func (b *slackBot) Parts(text string) []string { return b.hs.bot.replyParts("D1", text) }
func (b *slackBot) MaxRunes() int              { return maxPartRunes }

func (b *slackBot) ShowMemory() string {
	return b.hs.ackPayload(b.t, b.hs.srv.SlashCommand(slacktest.SlashCommand{})).Text
}

func (b *slackBot) MemoryUser() string {
	return "slack-" + slacktest.DefaultTeamID + "-" + slacktest.DefaultUserID
}

func (b *slackBot) Ready() bool { return b.hs.bot.Ready() }
func (b *slackBot) Stop() error { return b.hs.stop() }

var _ conformance.Bot = (*slackBot)(nil)
