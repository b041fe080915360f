package console

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// TestConformance runs the conformance table against the terminal
// platform, as far as its rows apply to one person at a terminal (the rows
// it cannot show are skipped, each with the suite's reason): /memory,
// shutdown, a streamed reply and a cut one, and Remember this (the
// terminal's /memory remember: the person's own words, no one else to
// press Undo).
func TestConformance(t *testing.T) { conformance.Run(t, termDriver{}) }

// termDriver starts the terminal platform; a "post" is a reply as a
// terminal shows it.
type termDriver struct{}

func (termDriver) Lacks() conformance.Feature {
	return conformance.Redelivery | conformance.Durable | conformance.QueueAhead | conformance.Limit | conformance.Channels | conformance.Access |
		conformance.Attachments
}

func (termDriver) Start(t *testing.T, s conformance.Setup) conformance.Bot {
	b := &termBot{t: t, h: bottest.NewHandler(), mem: &bottest.Memory{}, changed: make(chan struct{}), done: make(chan error, 1)}
	b.c = New(platform.Deps{Handler: b.h, Memory: b.mem, Keeper: s.Keeper})
	b.conv = b.c.Conversation(termUser)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.done <- b.c.Run(ctx) }()
	t.Cleanup(func() {
		b.Stop()
		b.wg.Wait()
	})
	return b
}

// termUser is the person at the terminal.
const termUser = "ann"

// termBot is the terminal platform with one person's conversation; each
// message is said in a goroutine, as a front's turn is.
type termBot struct {
	t    *testing.T
	c    *Chat
	conv Conversation
	h    *bottest.Handler
	mem  *bottest.Memory

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	stopErr  error
	wg       sync.WaitGroup

	mu      sync.Mutex
	posts   []*termPost
	changed chan struct{} // closed and replaced at every change
}

// termPost is a reply as the terminal shows it: the words streamed so
// far, then the reply whole (and the cut note after a cut one).
type termPost struct {
	to   string // the line it answers
	text strings.Builder
	done bool
}

func (b *termBot) Handler() *bottest.Handler { return b.h }
func (b *termBot) Memory() *bottest.Memory   { return b.mem }
func (b *termBot) Parts(text string) []string {
	return []string{text}
}
func (b *termBot) MaxRunes() int      { return 1 << 20 }
func (b *termBot) MemoryUser() string { return termUser }
func (b *termBot) Draft() string      { b.t.Fatal("a terminal resumes nothing"); return "" }
func (b *termBot) Ready() bool        { return b.c.Ready() }

func (b *termBot) Mention(string) conformance.Ref {
	b.t.Fatal("a terminal has no channels")
	return nil
}

func (b *termBot) Redeliver(conformance.Ref) { b.t.Fatal("a terminal delivers nothing twice") }

// DM says text as the person at the terminal; it returns once the line is
// on its way.
func (b *termBot) DM(text string) conformance.Ref {
	id := mnemo.NewTaskID()
	p := &termPost{to: id}
	b.mu.Lock()
	b.posts = append(b.posts, p)
	b.mu.Unlock()
	b.wg.Go(func() {
		said, err := b.conv.Say(context.Background(), Line{ID: id, Text: text, Show: termShow{b, p}})
		b.change(func() {
			p.done = true
			switch {
			case err != nil:
				p.text.Reset()
				p.text.WriteString("error: " + err.Error())
			case !said.Streamed:
				p.text.Reset()
				p.text.WriteString(said.Text)
			case said.Cut:
				p.text.WriteString(mnemo.CutNote)
			}
		})
	})
	return id
}

// termShow is what the terminal shows of a reply as it is written.
type termShow struct {
	b *termBot
	p *termPost
}

func (s termShow) Text(delta string) { s.b.change(func() { s.p.text.WriteString(delta) }) }
func (s termShow) Status(string)     {}

// change runs f on the posts and wakes the waits.
func (b *termBot) change(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
	close(b.changed)
	b.changed = make(chan struct{})
}

// shown is every reply that shows something, in the order of the lines;
// done only the complete ones.
func (b *termBot) shown(done bool) []conformance.Post {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []conformance.Post
	for _, p := range b.posts {
		if done && !p.done || p.text.Len() == 0 && !p.done {
			continue
		}
		out = append(out, conformance.Post{Text: p.text.String(), To: p.to})
	}
	return out
}

func (b *termBot) wait(ok func([]conformance.Post) bool, done bool) []conformance.Post {
	b.t.Helper()
	return conformance.WaitShown(b.t, conformance.Wait, func() <-chan struct{} {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.changed
	}, func() []conformance.Post { return b.shown(done) }, ok)
}

func (b *termBot) Posts(n int) []conformance.Post {
	b.t.Helper()
	return b.wait(func(ps []conformance.Post) bool { return len(ps) >= n }, true)[:n]
}

func (b *termBot) Shown(ok func([]conformance.Post) bool) []conformance.Post {
	b.t.Helper()
	return b.wait(ok, false)
}

// Settle says "settle" and waits until every line is answered.
func (b *termBot) Settle() []conformance.Post {
	b.t.Helper()
	b.DM("settle")
	b.wg.Wait()
	return b.shown(true)
}

// ShowMemory says /memory and returns the answer.
func (b *termBot) ShowMemory() string {
	said, err := b.conv.Say(context.Background(), Line{ID: mnemo.NewTaskID(), Text: "/memory"})
	if err != nil {
		b.t.Fatal(err)
	}
	return said.Text
}

func (b *termBot) Stop() error {
	b.stopOnce.Do(func() {
		b.cancel()
		b.stopErr = <-b.done
	})
	return b.stopErr
}
