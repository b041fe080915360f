package discord

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// TestConformance runs the table every platform passes
// (bots/internal/conformance) against the Discord adapter and discordtest.
func TestConformance(t *testing.T) { conformance.Run(t, discordDriver{}) }

type discordDriver struct{}

// discordBot is a harness as the table drives it.
type discordBot struct {
	t  *testing.T
	hs *harness

	mu   sync.Mutex
	refs map[string]*discordgo.Message // by message id
}

func (discordDriver) Start(t *testing.T, s conformance.Setup) conformance.Bot {
	b := &discordBot{t: t, refs: map[string]*discordgo.Message{}}
	b.hs = start(t, setup{
		// Streamed replies update at once, within a short edit window.
		opts: discordtest.Options{EditLimit: 5, EditWindow: 50 * time.Millisecond},
		bot:  func(bot *Bot) { bot.editEvery = time.Millisecond },
		config: func(c *Config) {
			c.IntakeDir, c.ChannelMemory, c.Keeper = s.IntakeDir, s.ChannelMemory, s.Keeper
			c.AttachmentMaxBytes = s.AttachmentMaxBytes
			if s.Access != nil {
				c.Access = s.Access("discord", c.Logger)
			}
		},
		before: func(srv *discordtest.Server) {
			if s.Interrupted != nil {
				interrupt(t, srv, s.IntakeDir, *s.Interrupted)
			}
		},
	})
	return b
}

// interrupt journals a DM whose reply was being posted, with the first
// parts of it in the channel already.
func interrupt(t *testing.T, srv *discordtest.Server, dir string, in conformance.Interrupted) {
	m := srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &alice, Content: in.Text})
	botUser := &discordgo.User{ID: srv.Options().BotID, Username: srv.Options().BotName, Bot: true}
	var drafts []string
	if in.Streamed != "" {
		d := srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: botUser, Content: in.Streamed,
			MessageReference: &discordgo.MessageReference{MessageID: m.ID}})
		drafts = append(drafts, d.ID)
		in.Posted = 0
	}
	for i, p := range replyParts(in.Reply)[:in.Posted] {
		post := discordgo.Message{ChannelID: dmID, Author: botUser, Content: p}
		if i == 0 {
			post.MessageReference = &discordgo.MessageReference{MessageID: m.ID}
		}
		srv.AddMessage(post)
	}
	j, err := intake.Open(intake.Options{Dir: dir, Name: "discord"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	msg := &incoming{msg: &m, Message: pipeline.Message{DM: true, User: "discord-" + aliceID, Text: in.Text,
		Conversation: "discord:dm:" + dmID}}
	data, _ := json.Marshal(msg.wire())
	if err := j.Add(intake.Entry{ID: "msg:" + m.ID, User: msg.User, Data: data})[0]; err != nil {
		t.Fatal(err)
	}
	if drafts != nil {
		if in.Unjournaled {
			return
		}
		if err := j.Drafted("msg:"+m.ID, drafts); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := j.Posting("msg:"+m.ID, in.Reply); err != nil {
		t.Fatal(err)
	}
}

func (b *discordBot) Handler() *bottest.Handler { return b.hs.h }
func (b *discordBot) Memory() *bottest.Memory   { return b.hs.mem }

func (b *discordBot) keep(m discordgo.Message) conformance.Ref {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs[m.ID] = &m
	return &m
}

func (b *discordBot) DM(text string) conformance.Ref { return b.keep(b.hs.dm(alice, text)) }

func (b *discordBot) Mention(text string) conformance.Ref {
	return b.keep(b.hs.mention(alice, channelID, text))
}

// Redeliver dispatches the same message again (as a resumed session
// replays its last events).
func (b *discordBot) Redeliver(m conformance.Ref) {
	msg := *m.(*discordgo.Message)
	b.hs.srv.MessageCreate(msg)
}

// posts are what ps show now (as last edited).
func (b *discordBot) posts(ps []discordtest.Post) []conformance.Post {
	out := make([]conformance.Post, len(ps))
	now := map[string]string{}
	for _, ch := range []string{dmID, channelID, threadID} {
		for _, m := range b.hs.srv.Messages(ch) {
			now[m.ID] = m.Content
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range ps {
		out[i].Text = p.Body.Content
		if c, ok := now[p.Message.ID]; ok {
			out[i].Text = c
		}
		if ref := p.Body.Reference; ref != nil {
			if m, ok := b.refs[ref.MessageID]; ok {
				out[i].To = m
			}
		}
	}
	return out
}

func (b *discordBot) Posts(n int) []conformance.Post { return b.posts(b.hs.posts(b.t, n)[:n]) }

func (b *discordBot) Settle() []conformance.Post {
	b.hs.settle(b.t)
	return b.posts(b.hs.srv.Posts())
}

// Draft is what the bot's message the test added before the start shows.
func (b *discordBot) Draft() string {
	posted := map[string]bool{}
	for _, p := range b.hs.srv.Posts() {
		posted[p.Message.ID] = true
	}
	for _, m := range b.hs.srv.Messages(dmID) {
		if m.Author != nil && m.Author.ID == b.hs.srv.Options().BotID && !posted[m.ID] {
			return m.Content
		}
	}
	return ""
}

func (b *discordBot) Shown(ok func([]conformance.Post) bool) []conformance.Post {
	b.t.Helper()
	return conformance.WaitShown(b.t, wait, b.hs.srv.Changed, func() []conformance.Post { return b.posts(b.hs.srv.Posts()) }, ok)
}

func (b *discordBot) Parts(text string) []string { return replyParts(text) }
func (b *discordBot) MaxRunes() int              { return maxMessageRunes }

func (b *discordBot) ShowMemory() string {
	_, edit := b.hs.answer(b.t, b.hs.slash(alice, false, "show", ""), 1)
	if edit.Edit.Content == nil {
		return ""
	}
	return *edit.Edit.Content
}

func (b *discordBot) MemoryUser() string { return "discord-" + aliceID }
func (b *discordBot) Ready() bool        { return b.hs.bot.Ready() }
func (b *discordBot) Stop() error        { return b.hs.stop() }

var _ conformance.Bot = (*discordBot)(nil)
