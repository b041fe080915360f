package slack

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/memory"
)

const wait = 10 * time.Second

// TestMain fails the run if any goroutine (the adapter's, socketmode's,
// an HTTP connection's) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness runs a Bot against a fake Slack until the test ends.
type harness struct {
	srv  *slacktest.Server
	bot  *Bot
	h    *bottest.Handler
	mem  *bottest.Memory
	logs *bottest.LogBuffer
	stop func() error // cancels Run and returns its result
}

type setup struct {
	opts      slacktest.Options
	config    func(*Config)
	bot       func(*Bot)
	prepare   func(*slacktest.Server) // before the bot starts
	noConnect bool                    // do not wait for the Socket Mode connection
}

func start(t *testing.T, s setup) *harness {
	t.Helper()
	srv := slacktest.New(t, s.opts)
	if s.prepare != nil {
		s.prepare(srv)
	}
	hs := &harness{srv: srv, h: bottest.NewHandler(), logs: &bottest.LogBuffer{},
		// The real grammar: the adapter must not keep its own copy.
		mem: &bottest.Memory{Check: func(p string) error { _, err := memory.ParsePath(p); return err }}}
	cfg := Config{
		BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(),
		Handler: hs.h, Memory: hs.mem,
		Logger: slog.New(slog.NewTextHandler(hs.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if s.config != nil {
		s.config(&cfg)
	}
	bot, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bot.retryBase = 10 * time.Millisecond
	// A /memory answer is acked with its text: no deadline a loaded machine
	// could outrun (TestMemorySlowAnswer sets its own).
	bot.ackBudget = time.Hour
	if s.bot != nil {
		s.bot(bot)
	}
	hs.bot = bot
	hs.stop = bottest.Start(t, bot.Run, bottest.RunOptions{Ready: bot.Ready, Logs: hs.logs,
		Secrets: []string{cfg.BotToken, cfg.AppToken}, Timeout: wait}).Stop
	if !s.noConnect {
		if err := srv.WaitConnected(1, wait); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "Ready", bot.Ready)
	}
	return hs
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bottest.WaitFor(t, what, wait, cond)
}

// quiet waits until the bot has nothing left to do (every envelope sent
// is acknowledged, and every message it took is answered: none pending in
// the intake journal nor in the queue), then checks that exactly posts
// were posted: a reply that was still to come would have kept a message
// pending.
func (hs *harness) quiet(t *testing.T, posts int) {
	t.Helper()
	waitFor(t, "every envelope acknowledged and answered", func() bool {
		acked := map[string]bool{}
		for _, a := range hs.srv.Acks() {
			acked[a.EnvelopeID] = true
		}
		for _, e := range hs.srv.Sent() {
			if !acked[e.ID] {
				return false
			}
		}
		return hs.srv.Pending() == 0 && hs.bot.pipe.Journal().Len() == 0 && hs.bot.Queued() == 0
	})
	if got := hs.srv.Posts(); len(got) != posts {
		t.Fatalf("%d posts; want %d: %+v", len(got), posts, got)
	}
}

// posts waits for n posts by the bot.
func (hs *harness) posts(t *testing.T, n int) []slacktest.Post {
	t.Helper()
	return bottest.WaitN(t, hs.srv.WaitPosts, n, wait)
}

// ackPayload waits for the ack of env and decodes its payload.
func (hs *harness) ackPayload(t *testing.T, env slacktest.Envelope) responsePayload {
	t.Helper()
	ack, err := hs.srv.WaitAck(env.ID, wait)
	if err != nil {
		t.Fatal(err)
	}
	var p responsePayload
	if len(ack.Payload) > 0 {
		if err := json.Unmarshal(ack.Payload, &p); err != nil {
			t.Fatalf("ack payload %s: %v", ack.Payload, err)
		}
	}
	p.raw = ack.Raw
	return p
}

type responsePayload struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
	Blocks       []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Style    string `json:"style"`
		} `json:"elements"`
	} `json:"blocks"`
	raw []byte
}

// button returns the value of the button with actionID.
func (p responsePayload) button(actionID string) string {
	for _, b := range p.Blocks {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}
