// Package reference is the in-memory reference platform of the
// conformance suite (bots/internal/conformance) as a platform mnemo runs:
// a chat kept in process memory on the pipeline, registered like Slack and
// Discord (bots/registry) — its intake journal a forget holder, its
// configuration section, its access rules. It runs only when a
// "reference:" section says `enabled: true`, which the configuration has
// none of: it is the proof that a platform plugs in through its own
// package and one registration line.
package reference

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/split"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Name is the platform's name.
const Name = "reference"

// limit is the characters of one post.
const limit = 100

// Platform is the reference platform as it registers.
func Platform() platform.Platform {
	return platform.Platform{
		Name: Name,
		Enabled: func(s platform.Section) bool {
			var c struct{ Enabled bool }
			return s(&c) == nil && c.Enabled
		},
		Access: platform.Access{Modes: map[string]string{"open": "everyone"}},
		ForgetQueued: func(dir, user string) (int, error) {
			return intake.ForgetFile(dir, Name, user)
		},
		New: func(d platform.Deps) (platform.Adapter, error) { return New(d), nil },
	}
}

// Chat is the reference platform's chat: the messages sent to the bot
// (Send) and what it posted (Posts).
type Chat struct {
	p     *pipeline.Pipeline[*message]
	rt    *intake.Lifecycle
	log   *slog.Logger
	ready atomic.Bool
	n     atomic.Int64

	mu    sync.Mutex
	posts []string
}

// message is a message sent to the bot.
type message struct {
	pipeline.Message
	N int
}

// New is the chat with d's handler, memory, access and journal folder.
func New(d platform.Deps) *Chat {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Chat{log: log}
	c.rt = intake.NewLifecycle(intake.LifecycleOptions{Platform: Name, Dir: d.IntakeDir, Logger: log})
	opts := pipeline.Options{Name: Name, Handler: d.Handler, ChannelMemory: mnemo.ChannelMemoryRead, Lifecycle: c.rt,
		FirstVisible: d.FirstVisible, Budget: d.Budget, Refusals: d.Refusals}
	if d.Access != nil {
		opts.Access = d.Access
	}
	c.p = pipeline.New[*message](chatPlatform{c}, opts)
	return c
}

// Run serves until ctx ends, then finishes the messages it took.
func (c *Chat) Run(ctx context.Context) error {
	stop, err := c.p.Start(ctx)
	if err != nil {
		return err
	}
	c.p.Replay(ctx)
	c.ready.Store(true)
	<-ctx.Done()
	c.ready.Store(false)
	c.p.Close()
	stop()
	return nil
}

// Ready reports whether it takes messages.
func (c *Chat) Ready() bool { return c.ready.Load() }

// Forget drops user's messages waiting for their turn.
func (c *Chat) Forget(user string) int { return c.p.Forget(user) }

// Queued is how many messages wait.
func (c *Chat) Queued() int { return c.p.Queued() }

// Send is a direct message from user (a memory user name).
func (c *Chat) Send(ctx context.Context, user, text string) {
	n := int(c.n.Add(1))
	m := &message{N: n, Message: pipeline.Message{ID: "msg:" + strconv.Itoa(n), User: user, Conversation: Name + ":" + user,
		DM: true, Text: text, Log: c.log}}
	m.Who = access.Who{Platform: Name, User: user}
	if c.p.Admit(ctx, m) {
		c.p.Receive(ctx, m)
	}
}

// Posts are the bot's posts so far.
func (c *Chat) Posts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.posts...)
}

// chatPlatform is what the reference chat does for the pipeline.
type chatPlatform struct{ c *Chat }

func (chatPlatform) Encode(m *message) []byte {
	data, _ := json.Marshal(map[string]any{"n": m.N, "user": m.User, "text": m.Text})
	return data
}

func (p chatPlatform) Decode(e intake.Entry, log *slog.Logger) (*message, error) {
	var w struct {
		N          int
		User, Text string
	}
	err := json.Unmarshal(e.Data, &w)
	return &message{N: w.N, Message: pipeline.Message{ID: e.ID, User: w.User, Conversation: Name + ":" + w.User, DM: true, Text: w.Text, Log: log}}, err
}

func (chatPlatform) Ack(context.Context, *message)                  {}
func (chatPlatform) Typing(context.Context, *message) (stop func()) { return func() {} }
func (chatPlatform) Prepare(context.Context, *message, *mnemo.Task) {}
func (chatPlatform) Parts(_ *message, text string) []string         { return split.Text(text, limit) }
func (chatPlatform) Posted(context.Context, *message, []string) int { return 0 }

func (p chatPlatform) PostPart(_ context.Context, _ *message, _ int, part string) error {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.posts = append(p.c.posts, part)
	return nil
}
