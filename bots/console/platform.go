package console

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Name is the terminal platform's name: Task.Platform, its log lines'
// prefix and its metrics label.
const Name = "console"

// Line, Said and Conversation are the terminal's chat as bots/platform
// says it (the app serves second chats through them).
type (
	Line         = platform.Line
	Said         = platform.Said
	Conversation = platform.Conversation
)

// maxEarly bounds the lines remembered as cancelled before Say took them.
const maxEarly = 1024

// ErrClosed is Say's error once the chat closes.
var ErrClosed = errors.New("console: the chat is closing; this message was not taken")

// Chat is the terminal platform: every terminal chat of this process (its
// own, and those talking through it from other processes) on the one
// pipeline that Slack and Discord are on — the same queue per
// conversation, intake journal, reply path and /memory flow. Its journal
// is kept in memory: a terminal's message cannot be answered after a
// crash (its terminal is gone with the process, or belongs to another
// chat now), so none is kept on disk to be answered into the wrong place.
type Chat struct {
	p        *pipeline.Pipeline[*message]
	flow     *memorycmd.Flow
	withdraw func(taskID string)
	log      *slog.Logger

	mu      sync.RWMutex // Say holds it for reading while it hands a message over; Close for writing
	closed  bool
	started chan struct{} // closed once Run has started the pipeline (or Close came first)
	once    sync.Once
	ready   atomic.Bool
	n       atomic.Int64
	pending sync.Map // user → the token of the forget waiting for ConfirmWord

	runMu   sync.Mutex
	running map[string]*message // line id → the message being answered, for Cancel
	early   map[string]bool     // lines cancelled before Say took them (a Ctrl-C typed ahead)

	keep remembering // /memory remember, /remember and /memory undo (remember.go)
}

// message is a line on its way through the pipeline.
type message struct {
	pipeline.Message
	line   Line
	ctx    context.Context // the task's: Cancel ends it
	cancel context.CancelFunc
	answer pipeline.Answered
	said   chan Said // the answer, once posted (cap 1)
}

// New is the terminal platform with d's handler, memory, logger and
// withdraw (d's access, budget and section are not used: the terminal is
// the operator's own).
func New(d platform.Deps) *Chat {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	withdraw := d.Withdraw
	if withdraw == nil {
		withdraw = func(string) {}
	}
	c := &Chat{log: log, withdraw: withdraw, started: make(chan struct{}), running: map[string]*message{}, early: map[string]bool{}}
	c.ready.Store(true) // nothing to connect to: it takes lines from the start (Say waits for Run)
	c.flow = &memorycmd.Flow{Memory: d.Memory, Confirms: memorycmd.NewConfirms(memorycmd.MaxConfirms, memorycmd.ConfirmTTL),
		Log: log, Typed: true}
	if d.Memory == nil {
		c.flow.Memory = nil // a nil interface, not a typed nil: "not available"
	}
	c.keep.keeper = d.Keeper
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: Name, Logger: log}) // Dir "": in memory (see Chat)
	c.p = pipeline.New[*message](chatPlatform{c}, pipeline.Options{Name: Name, Handler: d.Handler,
		ChannelMemory: mnemo.ChannelMemoryFull, Lifecycle: rt})
	return c
}

// Run takes lines (Say waits for it) until ctx ends, then answers those
// taken and returns nil.
func (c *Chat) Run(ctx context.Context) error {
	stop, err := c.p.Start(ctx)
	if err != nil {
		return err // a second Run: the first one runs on
	}
	c.once.Do(func() { close(c.started) })
	<-ctx.Done()
	c.Close()
	stop()
	return nil
}

// Close stops taking lines (Say answers ErrClosed) and waits until every
// line taken is answered.
func (c *Chat) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.once.Do(func() { close(c.started) })
	c.ready.Store(false)
	c.p.Close()
}

// Ready reports whether it takes lines: from New until Close (a terminal
// has nothing to connect to, so serve's /readyz never waits for it).
func (c *Chat) Ready() bool { return c.ready.Load() }

// Forget drops user's messages waiting for their turn.
func (c *Chat) Forget(user string) int { return c.p.Forget(user) }

// Queued is how many messages wait.
func (c *Chat) Queued() int { return c.p.Queued() }

// Conversation is user's chat (user a memory user name: the --user flag
// or $USER, never from what is typed).
func (c *Chat) Conversation(user string) Conversation { return conversation{c, user} }

type conversation struct {
	c    *Chat
	user string
}

func (v conversation) Say(ctx context.Context, l Line) (Said, error) { return v.c.say(ctx, v.user, l) }
func (v conversation) Cancel(id string)                              { v.c.cancel(id) }

// say answers l of user: a command word, or a message through the
// pipeline.
func (c *Chat) say(ctx context.Context, user string, l Line) (Said, error) {
	if said, ok := c.keep.command(ctx, user, l.Text); ok {
		return said, nil
	}
	if said, ok := c.command(user, l.Text); ok {
		return said, nil
	}
	c.keep.said(user, l.Text)
	c.dropPending(user) // a question not answered with ConfirmWord is cancelled
	select {
	case <-c.started: // lines wait for Run
	case <-ctx.Done():
		return Said{}, ctx.Err()
	}
	n := c.n.Add(1)
	tctx, cancel := context.WithCancel(context.Background())
	m := &message{line: l, ctx: tctx, cancel: cancel, said: make(chan Said, 1)}
	m.Message = pipeline.Message{ID: "line:" + l.ID + ":" + strconv.FormatInt(n, 10), User: user, Conversation: Name + ":" + user,
		DM: true, Speaker: user, Text: l.Text, Log: c.log}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		cancel()
		return Said{}, ErrClosed
	}
	c.runMu.Lock()
	c.running[l.ID] = m
	cancelled := c.early[l.ID]
	delete(c.early, l.ID)
	c.runMu.Unlock()
	if cancelled {
		c.stop(m)
	}
	c.p.Receive(ctx, m)
	c.mu.RUnlock()
	said := <-m.said
	c.runMu.Lock()
	delete(c.running, l.ID)
	c.runMu.Unlock()
	cancel()
	return said, nil
}

// cancel withdraws the answer to line id and cancels its task; a line not
// taken yet is cancelled as Say takes it.
func (c *Chat) cancel(id string) {
	c.runMu.Lock()
	m, ok := c.running[id]
	if !ok {
		if len(c.early) >= maxEarly {
			// A cancel that came after its answer (a Ctrl-C racing the
			// reply's end) leaves its entry behind: few, and bounded.
			clear(c.early)
		}
		c.early[id] = true
	}
	c.runMu.Unlock()
	if ok {
		c.stop(m)
	}
}

// stop withdraws m's turn from the reflector, then cancels its task.
func (c *Chat) stop(m *message) {
	c.withdraw(pipeline.TaskID(m.ID))
	m.cancel()
}

// command answers the command words: /memory … (memorycmd), and the
// terminal's aliases — /forget [TARGET] for /memory forget (everything
// without a target), and ConfirmWord, which confirms the question asked
// last (or, with none, deletes everything at once, as it always did).
// ok is false for a message.
func (c *Chat) command(user, text string) (Said, bool) {
	f := strings.Fields(text)
	if len(f) == 0 || strings.Contains(text, "\n") || f[0] != "/memory" && f[0] != "/forget" {
		return Said{}, false // a message of several lines that begins with a word is a message
	}
	asker := memorycmd.Asker{ID: user, User: user, Own: user}
	rest := strings.Join(f[1:], " ")
	if f[0] == "/forget" || len(f) > 1 && f[1] == "forget" {
		target := rest
		if f[0] == "/memory" {
			target = strings.Join(f[2:], " ")
		}
		switch {
		case target == "yes":
			return c.confirm(user, asker), true
		case target == "" && f[0] == "/forget":
			target = "all"
		}
		rest = "forget " + target
	}
	ans := c.flow.Handle(memorycmd.Parse(rest), asker)
	c.dropPending(user)
	if ans.Confirm != "" {
		c.pending.Store(user, ans.Confirm)
	}
	return Said{Text: ans.Text}, true
}

// confirm carries out the forget user was asked about, or, with none
// asked, forgets everything about them at once.
func (c *Chat) confirm(user string, asker memorycmd.Asker) Said {
	token, ok := c.pending.LoadAndDelete(user)
	if !ok {
		if c.flow.Memory == nil {
			return Said{Text: memorycmd.NoMemoryText}
		}
		token = c.flow.Handle(memorycmd.Command{Kind: memorycmd.Forget, Target: "all"}, asker).Confirm
	}
	text, forgot := c.flow.Confirm(token.(string), asker.ID)
	return Said{Text: text, Forgot: forgot != nil && forgot.Path == ""}
}

// dropPending cancels the forget user was asked to confirm, if any.
func (c *Chat) dropPending(user string) {
	if token, ok := c.pending.LoadAndDelete(user); ok {
		c.flow.Button(token.(string), user, false)
	}
}

// chatPlatform is what the terminal does for the pipeline.
type chatPlatform struct{ c *Chat }

var (
	_ pipeline.Streamer[*message]  = chatPlatform{}
	_ pipeline.Canceller[*message] = chatPlatform{}
	_ pipeline.Dropper[*message]   = chatPlatform{}
	_ platform.Chats               = (*Chat)(nil)
)

func (chatPlatform) Encode(m *message) []byte {
	data, _ := json.Marshal(map[string]string{"user": m.User, "text": m.Text})
	return data
}

// Decode is never needed (the journal is in memory: nothing is replayed),
// but a journal entry reads back as the message it was, shown nowhere.
func (p chatPlatform) Decode(e intake.Entry, log *slog.Logger) (*message, error) {
	var w struct{ User, Text string }
	err := json.Unmarshal(e.Data, &w)
	m := &message{ctx: context.Background(), cancel: func() {}, said: make(chan Said, 1)}
	m.Message = pipeline.Message{ID: e.ID, User: w.User, Conversation: Name + ":" + w.User, DM: true, Speaker: w.User, Text: w.Text, Log: log}
	return m, err
}

func (chatPlatform) Ack(context.Context, *message)                  {}
func (chatPlatform) Typing(context.Context, *message) (stop func()) { return func() {} } // the front's spinner shows it
func (chatPlatform) Prepare(context.Context, *message, *mnemo.Task) {}
func (chatPlatform) Parts(_ *message, text string) []string         { return []string{text} } // a terminal has no limit
func (chatPlatform) Posted(context.Context, *message, []string) int { return 0 }

func (chatPlatform) Stream(m *message) mnemo.Stream { return m.line.Show }

func (chatPlatform) Answered(m *message, a pipeline.Answered) { m.answer = a }

func (chatPlatform) TaskContext(_ context.Context, m *message) context.Context { return m.ctx }

// DroppedText answers a line a forget dropped while it waited for its turn.
const DroppedText = "I did not answer that: what I remembered about you was forgotten before I got to it."

// Dropped answers the line's Say, which waits for it.
func (chatPlatform) Dropped(m *message) { m.said <- Said{Text: DroppedText} }

// PostPart hands the reply to the line's Say.
func (chatPlatform) PostPart(_ context.Context, m *message, _ int, part string) error {
	a := m.answer
	select {
	case m.said <- Said{Text: part, Streamed: a.Streamed, Cut: a.Cut, Failed: a.Failed && !a.Cancelled && m.ctx.Err() == nil}:
	default: // a busy reply after the answer: Say has what it waits for
	}
	return nil
}
