package discord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// begun runs p.begin in the background; its channel gets the edit or the
// error.
func begun(ctx context.Context, p *editPacer, channel string) chan error {
	c := make(chan error, 1)
	go func() {
		e, err := p.begin(ctx, channel)
		if err == nil {
			p.end(channel, e)
		}
		c <- err
	}()
	return c
}

// The pacer lets five edits of a channel through at once, holds the sixth
// until the first is five seconds old, and keeps each channel apart.
func TestEditPacer(t *testing.T) {
	fake := clocktest.New(time.Unix(1_700_000_000, 0))
	p := newEditPacer(fake, editLimit, editWindow)
	ctx := context.Background()
	for i := range editLimit {
		e, err := p.begin(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		p.end("c1", e)
		fake.Advance(time.Second / 2)
		_ = i
	}
	other := begun(ctx, p, "c2")
	if err := <-other; err != nil {
		t.Fatalf("another channel's edit: %v", err)
	}
	sixth := begun(ctx, p, "c1")
	fake.WaitArmed(1) // waiting for the window
	select {
	case err := <-sixth:
		t.Fatalf("a sixth edit within 5 s went through: %v", err)
	default:
	}
	// The first edit ended at 0 s; it is 2.5 s now: 2.5 s more.
	fake.Advance(2500*time.Millisecond - time.Millisecond)
	select {
	case err := <-sixth:
		t.Fatalf("the sixth edit went through before the window moved on: %v", err)
	default:
	}
	fake.Advance(time.Millisecond)
	if err := <-sixth; err != nil {
		t.Fatal(err)
	}

	// Past the window every channel is forgotten.
	fake.Advance(editWindow)
	e, _ := p.begin(ctx, "c1")
	p.end("c1", e)
	p.mu.Lock()
	n := len(p.edits)
	p.mu.Unlock()
	if n != 1 {
		t.Errorf("%d channels kept, want 1", n)
	}
}

// Edits under way count: a sixth waits for one to end, then for the
// window; a cancelled context ends the wait with its error.
func TestEditPacerUnderWay(t *testing.T) {
	fake := clocktest.New(time.Unix(1_700_000_000, 0))
	p := newEditPacer(fake, 2, editWindow)
	ctx := context.Background()
	a, _ := p.begin(ctx, "c")
	b, _ := p.begin(ctx, "c")
	third := begun(ctx, p, "c")
	p.end("c", a) // ends now: the window runs from here
	fake.WaitArmed(1)
	select {
	case <-third:
		t.Fatal("a third edit went through within the window")
	default:
	}
	fake.Advance(editWindow)
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	p.end("c", b)

	cctx, cancel := context.WithCancel(ctx)
	full := newEditPacer(fake, 1, editWindow)
	x, _ := full.begin(cctx, "c")
	waiting := begun(cctx, full, "c")
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait = %v", err)
	}
	full.end("c", x)
}

// A streamed reply whose interval edits used the channel's five edits in
// five seconds holds its final edit back until the window moves on, by
// the bot's own pacing: the fake Discord here takes any number of edits,
// so nothing but the pacer can hold it. Before the fix the final edit
// went out at once: a sixth edit within five seconds.
func TestStreamFinalEditIsPaced(t *testing.T) {
	fake := clocktest.New(time.Now())
	hs := start(t, setup{opts: discordtest.Options{EditLimit: 1000},
		bot: func(b *Bot) {
			b.editEvery, b.typingEvery = time.Millisecond, time.Hour
			b.pace = newEditPacer(fake, editLimit, editWindow)
		}})
	var all strings.Builder
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		for i := range editLimit + 1 {
			d := fmt.Sprintf("w%d ", i)
			all.WriteString(d)
			task.Stream.Text(d)
			_, err := hs.srv.WaitPosts(1, wait)
			if i > 0 {
				_, err = hs.srv.WaitMessageEdits(i, wait)
			}
			if err != nil {
				return mnemo.Reply{}, err
			}
		}
		all.WriteString("done.")
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	})
	hs.dm(alice, "talk")
	hs.posts(t, 1)
	if _, err := hs.srv.WaitMessageEdits(editLimit, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the final edit waiting or sent", func() bool { return fake.Armed() == 1 || len(hs.srv.MessageEdits()) > editLimit })
	if n := len(hs.srv.MessageEdits()); n != editLimit {
		t.Fatalf("%d edits within 5 s (the clock did not move)", n)
	}
	fake.Advance(editWindow)
	edits, err := hs.srv.WaitMessageEdits(editLimit+1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if got := edits[len(edits)-1].Message.Content; got != all.String() {
		t.Errorf("final %q; want %q", got, all.String())
	}
	if calls := hs.srv.Calls("PATCH "); len(calls) != editLimit+1 {
		t.Errorf("%d edit calls; want %d, none refused", len(calls), editLimit+1)
	}
}
