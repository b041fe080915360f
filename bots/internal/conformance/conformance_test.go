package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/settings"
	"github.com/mnemo-agent/mnemo/bots/internal/split"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReference runs the table against the smallest platform there is: a
// chat kept in memory on the pipeline. It is what a new platform's driver
// looks like, and proves the table itself.
func TestReference(t *testing.T) { Run(t, refDriver{}) }

// refLimit is the reference platform's characters per message.
const refLimit = 100

// refMsg is a message of the reference platform.
type refMsg struct {
	pipeline.Message
	N     int           // its number in the chat
	files []attach.File // attached (not journaled: no row restarts with files)
}

// refPost is a post of the bot.
type refPost struct {
	text string
	to   int // the message it answers, part 0 only; else -1
}

// refChat is the reference platform: the pipeline's Platform and the
// chat's state.
type refChat struct {
	mu      sync.Mutex
	posts   []refPost
	changed chan struct{}
	earlier map[int]int // parts already posted before the start, by message
	draft   string      // the message a streamed reply posted before the start (id "pre")
	files   *refFiles   // the chat's file server
}

var _ Platform = (*refChat)(nil)

// Platform is the pipeline's Platform of the reference chat.
type Platform = pipeline.Platform[*refMsg]

func (c *refChat) Encode(m *refMsg) []byte {
	data, _ := json.Marshal(map[string]any{"n": m.N, "text": m.Text, "dm": m.DM})
	return data
}

func (c *refChat) Decode(e intake.Entry, log *slog.Logger) (*refMsg, error) {
	var w struct {
		N    int
		Text string
		DM   bool
	}
	err := json.Unmarshal(e.Data, &w)
	return refMessage(w.N, w.Text, w.DM, log), err
}

func refMessage(n int, text string, dm bool, log *slog.Logger) *refMsg {
	conv := "ref:dm"
	if !dm {
		conv = "ref:channel"
	}
	return &refMsg{N: n, Message: pipeline.Message{ID: "msg:" + string(rune('A'+n)), User: "ref-user", Conversation: conv,
		DM: dm, Text: text, Log: log}}
}

func (c *refChat) Ack(context.Context, *refMsg)                  {}
func (c *refChat) Typing(context.Context, *refMsg) (stop func()) { return func() {} }

func (c *refChat) Prepare(_ context.Context, m *refMsg, t *mnemo.Task) {
	if !m.DM {
		t.ChannelKey = mnemo.ChannelKey("ref", "channel")
	}
}

func (c *refChat) Parts(_ *refMsg, text string) []string { return split.Text(text, refLimit) }

func (c *refChat) PostPart(ctx context.Context, m *refMsg, i int, part string) error {
	_, err := c.StartDraft(ctx, m, pipeline.DraftEdit{Part: i, Text: part})
	return err
}

// The reference chat shows replies as they are written: a post's id is
// its place among the posts, and an edit changes its text.
var _ pipeline.Drafter[*refMsg] = (*refChat)(nil)

func (c *refChat) DraftInterval() time.Duration { return 0 }

func (c *refChat) StartDraft(_ context.Context, m *refMsg, e pipeline.DraftEdit) (string, error) {
	i, part := e.Part, e.Text
	to := -1
	if i == 0 {
		to = m.N
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts = append(c.posts, refPost{text: part, to: to})
	c.changedLocked()
	return strconv.Itoa(len(c.posts) - 1), nil
}

// FindDraft finds the message a streamed reply posted before the start.
func (c *refChat) FindDraft(context.Context, *refMsg) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draft != "" {
		return "pre"
	}
	return ""
}

func (c *refChat) EditDraft(_ context.Context, _ *refMsg, e pipeline.DraftEdit) error {
	i, err := strconv.Atoi(e.ID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.ID == "pre" {
		c.draft = e.Text
		return nil
	}
	if err != nil || i < 0 || i >= len(c.posts) {
		return fmt.Errorf("no message %q", e.ID)
	}
	c.posts[i].text = e.Text
	c.changedLocked()
	return nil
}

func (c *refChat) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *refChat) Posted(_ context.Context, m *refMsg, _ []string) int { return c.earlier[m.N] }

type refDriver struct{}

// refBot runs the pipeline of a refChat for one test.
type refBot struct {
	t       *testing.T
	chat    *refChat
	p       *pipeline.Pipeline[*refMsg]
	h       *bottest.Handler
	mem     *bottest.Memory
	flow    *memorycmd.Flow
	log     *slog.Logger
	n       int
	stopped atomic.Bool
	once    sync.Once
	stop    func()
	gate    *access.Gate // nil: everyone is let in
	keeper  platform.Keeper
}

func (refDriver) Start(t *testing.T, s Setup) Bot {
	logs := &bottest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	room := &refChat{changed: make(chan struct{}), earlier: map[int]int{}, files: newRefFiles(t, s.AttachmentMaxBytes)}
	b := &refBot{t: t, chat: room, h: bottest.NewHandler(), mem: &bottest.Memory{}, log: log, n: 1, keeper: s.Keeper}
	setting, err := settings.ChannelMemory("ref.channelMemory", s.ChannelMemory)
	if err != nil {
		t.Fatal(err)
	}
	b.flow = &memorycmd.Flow{Memory: b.mem, Confirms: memorycmd.NewConfirms(1, 0)}
	if in := s.Interrupted; in != nil { // message 0, journaled by a run before
		j, err := intake.Open(intake.Options{Dir: s.IntakeDir, Name: "ref"})
		if err != nil {
			t.Fatal(err)
		}
		m := refMessage(0, in.Text, true, log)
		j.Add(intake.Entry{ID: m.ID, User: m.User, Data: room.Encode(m)})
		if in.Streamed != "" {
			if !in.Unjournaled {
				j.Drafted(m.ID, []string{"pre"})
			}
			room.draft = in.Streamed
		} else {
			j.Posting(m.ID, in.Reply)
		}
		j.Close()
		room.earlier[0] = in.Posted // posted before the restart: not in this run's posts
	}
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "ref", Dir: s.IntakeDir, Logger: log})
	opts := pipeline.Options{Name: "ref", Handler: b.h, ChannelMemory: setting, Lifecycle: rt}
	if s.Access != nil {
		b.gate = s.Access("ref", log)
		opts.Access = b.gate
	}
	b.p = pipeline.New[*refMsg](room, opts)
	b.stop, err = b.p.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.p.Replay(context.Background())
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("logs:\n%s", logs)
		}
	})
	return b
}

func (b *refBot) Handler() *bottest.Handler { return b.h }
func (b *refBot) Memory() *bottest.Memory   { return b.mem }

func (b *refBot) send(text string, dm bool, files ...attach.File) Ref {
	m := refMessage(b.n, text, dm, b.log)
	m.files = files
	b.n++
	m.Who = access.Who{Platform: "ref", User: "u"}
	if b.p.Admit(context.Background(), m) {
		b.p.Receive(context.Background(), m)
	}
	return m.N
}

func (b *refBot) DM(text string) Ref      { return b.send(text, true) }
func (b *refBot) Mention(text string) Ref { return b.send(text, false) }

func (b *refBot) Redeliver(r Ref) {
	n := r.(int)
	b.p.Receive(context.Background(), refMessage(n, "again", true, b.log))
}

func (b *refBot) Posts(n int) []Post {
	var ps []Post
	bottest.WaitFor(b.t, "the posts", Wait, func() bool {
		b.chat.mu.Lock()
		defer b.chat.mu.Unlock()
		if len(b.chat.posts) < n {
			return false
		}
		ps = nil
		for _, p := range b.chat.posts {
			var to Ref
			if p.to >= 0 {
				to = p.to
			}
			ps = append(ps, Post{Text: p.text, To: to})
		}
		return true
	})
	return ps[:n]
}

func (b *refBot) Draft() string {
	b.chat.mu.Lock()
	defer b.chat.mu.Unlock()
	return b.chat.draft
}

func (b *refBot) Shown(ok func([]Post) bool) []Post {
	var ps []Post
	bottest.WaitFor(b.t, "the messages to show it", Wait, func() bool {
		b.chat.mu.Lock()
		n := len(b.chat.posts)
		b.chat.mu.Unlock()
		ps = b.Posts(n)
		return ok(ps)
	})
	return ps
}

func (b *refBot) Settle() []Post {
	b.DM("settle")
	bottest.WaitFor(b.t, "nothing left to answer", Wait, func() bool { return b.p.Queued() == 0 && b.p.Journal().Len() == 0 })
	b.chat.mu.Lock()
	n := len(b.chat.posts)
	b.chat.mu.Unlock()
	return b.Posts(n)
}

func (b *refBot) Parts(text string) []string { return b.chat.Parts(nil, text) }
func (b *refBot) MaxRunes() int              { return refLimit }

func (b *refBot) ShowMemory() string {
	if b.gate != nil {
		if ok, reply := b.gate.CheckCommand(context.Background(), access.Who{Platform: "ref", User: "u"}); !ok {
			return reply
		}
	}
	return b.flow.Handle(memorycmd.Parse("show"), memorycmd.Asker{ID: "u", User: b.MemoryUser(), Own: b.MemoryUser()}).Text
}

func (b *refBot) MemoryUser() string { return "ref-user" }
func (b *refBot) Ready() bool        { return !b.stopped.Load() }

func (b *refBot) Stop() error {
	b.once.Do(func() {
		b.stopped.Store(true)
		b.p.Close()
		b.stop()
	})
	return nil
}

// The table has every row the issue names, once.
func TestTableRows(t *testing.T) {
	var names []string
	for _, r := range Table {
		names = append(names, r.Name)
	}
	want := []string{"redelivery", "resume", "busy", "split", "privacy policy", "/memory", "shutdown",
		"stream", "stream split", "stream cut", "stream resume", "access refused", "remember this", "attachments"}
	if !slices.Equal(names, want) {
		t.Errorf("rows %q; want %q", names, want)
	}
}

// A row a platform cannot show is skipped with every reason that applies,
// and none is skipped for a platform that lacks nothing; every feature a
// row may need has its reason.
func TestSkipReason(t *testing.T) {
	for f := Redelivery; f <= Attachments; f <<= 1 {
		if why[f] == "" {
			t.Errorf("feature %d has no reason", f)
		}
	}
	if got := skipReason(0); got != "" {
		t.Errorf("nothing missing: %q", got)
	}
	if got, want := skipReason(Durable|Limit), why[Durable]+"; "+why[Limit]; got != want {
		t.Errorf("skipReason = %q; want %q", got, want)
	}
}
