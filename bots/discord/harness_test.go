package discord

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/memory"
)

const wait = 10 * time.Second

// Ids used throughout.
const (
	guildID   = "300000000000000001"
	channelID = "300000000000000002" // a guild text channel
	threadID  = "300000000000000003" // a public thread in it
	dmID      = "300000000000000004" // a DM channel
	aliceID   = "400000000000000001"
	bobID     = "400000000000000002"
	otherBot  = "400000000000000009"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// harness runs a Bot against a fake Discord until the test ends.
type harness struct {
	srv  *discordtest.Server
	bot  *Bot
	h    *bottest.Handler
	mem  *bottest.Memory
	logs *bottest.LogBuffer
	stop func() error // cancels Run and returns its result
	done chan error
}

type setup struct {
	opts      discordtest.Options
	config    func(*Config)
	before    func(*discordtest.Server) // runs before the bot starts
	bot       func(*Bot)                // runs after New
	noConnect bool                      // do not wait for READY
}

var (
	alice = discordgo.User{ID: aliceID, Username: "alice", GlobalName: "Alice"}
	bob   = discordgo.User{ID: bobID, Username: "bob"}
)

// parallelTests holds the tests start has made parallel.
var parallelTests sync.Map

func start(t *testing.T, s setup) *harness {
	t.Helper()
	// Each test has its own fake Discord and bot; discordgo's Close sleeps
	// a second, so the tests wait side by side (a test may start twice).
	if _, again := parallelTests.LoadOrStore(t, true); !again {
		t.Parallel()
	}
	if s.opts.InteractionWindow == 0 {
		// Discord's 3 s to answer an interaction runs on the fake's wall
		// clock: a loaded machine may pass it however soon the adapter
		// defers. That the adapter defers before its work is proven with
		// a held store (TestMemoryShow); discordtest tests the window.
		s.opts.InteractionWindow = time.Minute
	}
	srv := discordtest.New(t, s.opts)
	srv.AddUser(alice)
	srv.AddUser(bob)
	srv.AddChannel(discordgo.Channel{ID: channelID, GuildID: guildID, Type: discordgo.ChannelTypeGuildText, Name: "general"})
	srv.AddChannel(discordgo.Channel{ID: threadID, GuildID: guildID, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: channelID, Name: "a thread"})
	srv.AddChannel(discordgo.Channel{ID: dmID, Type: discordgo.ChannelTypeDM})
	hs := &harness{srv: srv, h: bottest.NewHandler(), logs: &bottest.LogBuffer{}}
	hs.mem = &bottest.Memory{Check: func(p string) error { _, err := memory.ParsePath(p); return err }}
	cfg := Config{
		Token: srv.Options().Token, APIURL: srv.URL(),
		Handler: hs.h, Memory: hs.mem,
		Logger: newLogger(hs.logs),
	}
	if s.config != nil {
		s.config(&cfg)
	}
	if s.before != nil {
		s.before(srv)
	}
	bot, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bot.retryBase = 10 * time.Millisecond
	bot.typingEvery = time.Hour
	if s.bot != nil {
		s.bot(bot)
	}
	hs.bot = bot
	run := bottest.Start(t, bot.Run, bottest.RunOptions{Ready: bot.Ready, Logs: hs.logs, Secrets: []string{cfg.Token},
		AllowErr: s.noConnect, Timeout: wait})
	hs.stop, hs.done = run.Stop, run.Done
	if !s.noConnect {
		if err := srv.WaitReady(1, wait); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "Ready", bot.Ready)
	}
	return hs
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bottest.WaitFor(t, what, wait, cond)
}

// posts waits for n posts by the bot.
func (hs *harness) posts(t *testing.T, n int) []discordtest.Post {
	t.Helper()
	return bottest.WaitN(t, hs.srv.WaitPosts, n, wait)
}

// dm sends a DM from u.
func (hs *harness) dm(u discordgo.User, text string) discordgo.Message {
	return hs.srv.MessageCreate(discordgo.Message{ChannelID: dmID, Author: &u, Content: text})
}

// mention sends a guild message from u that mentions the bot.
func (hs *harness) mention(u discordgo.User, channel, text string, others ...*discordgo.User) discordgo.Message {
	bot := hs.srv.Options().BotID
	return hs.srv.MessageCreate(discordgo.Message{
		ChannelID: channel, GuildID: guildID, Author: &u,
		Content:  "<@" + bot + "> " + text,
		Mentions: append([]*discordgo.User{{ID: bot, Username: hs.srv.Options().BotName, Bot: true}}, others...),
	})
}

// settle makes sure every event dispatched so far was handled: a DM sent
// after them is answered only after them (events are handled in order),
// so once its answer is posted the earlier events were seen.
func (hs *harness) settle(t *testing.T) {
	t.Helper()
	before := len(hs.srv.Posts())
	m := hs.dm(bob, "settle")
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed := hs.srv.Changed()
		for _, p := range hs.srv.Posts()[before:] {
			if p.Body.Reference != nil && p.Body.Reference.MessageID == m.ID {
				waitFor(t, "the queue to empty", func() bool { return hs.bot.pipe.Queue.Len() == 0 })
				return
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatal("the settle message was not answered")
		}
	}
}
