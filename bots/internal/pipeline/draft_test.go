package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// drafting is the fake platform that shows replies as they are written:
// StartDraft records "start:m:i:text" and names the message "d<n>",
// EditDraft "edit:m:i:id:text" (+ ":final").
type drafting struct {
	*fake
	interval time.Duration

	dmu       sync.Mutex
	n         int
	failStart bool
	failEdit  bool
	editTimes []time.Time // of the edits that are not final
	shows     map[string]string
}

func (d *drafting) DraftInterval() time.Duration { return d.interval }

// FindDraft finds "lost:<message id>" when shows has it (a message a
// crash left unjournaled).
func (d *drafting) FindDraft(_ context.Context, m *msg) string {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	if _, ok := d.shows["lost:"+m.ID]; ok {
		return "lost:" + m.ID
	}
	return ""
}

func (d *drafting) DraftStatus(_ context.Context, m *msg, status string) {
	d.record("status:" + m.ID + ":" + status)
}

func (d *drafting) StartDraft(_ context.Context, m *msg, e DraftEdit) (string, error) {
	i, text := e.Part, e.Text
	d.dmu.Lock()
	if d.failStart {
		d.dmu.Unlock()
		return "", errors.New("HTTP 500")
	}
	d.n++
	id := fmt.Sprintf("d%d", d.n)
	d.shows[id] = text
	d.dmu.Unlock()
	d.record(fmt.Sprintf("start:%s:%d:%s", m.ID, i, text))
	return id, nil
}

func (d *drafting) EditDraft(_ context.Context, m *msg, e DraftEdit) error {
	d.dmu.Lock()
	if d.failEdit && !e.Final {
		d.dmu.Unlock()
		return errors.New("HTTP 500")
	}
	if !e.Final {
		d.editTimes = append(d.editTimes, time.Now())
	}
	if s, ok := d.shows[e.ID]; ok && e.Shown != "" && s != e.Shown {
		d.dmu.Unlock()
		return fmt.Errorf("edit of %s: shown %q, the message shows %q", e.ID, e.Shown, s)
	}
	d.shows[e.ID] = e.Text
	d.dmu.Unlock()
	ev := fmt.Sprintf("edit:%s:%d:%s:%s", m.ID, e.Part, e.ID, e.Text)
	if e.Final {
		ev += ":final"
	}
	d.record(ev)
	return nil
}

// shown is what message id shows.
func (d *drafting) shown(id string) string {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	return d.shows[id]
}

func newDraftEnv(t *testing.T, dir string, interval time.Duration) (*env, *drafting) {
	t.Helper()
	e := newEnv(t, dir, Options{})
	d := &drafting{fake: e.f, interval: interval, shows: map[string]string{}}
	e.p = New[*msg](d, e.p.opts)
	return e, d
}

// prefixed is the events that start with prefix.
func prefixed(f *fake, prefix string) []string {
	var out []string
	for _, e := range f.Events() {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// The first words are shown at once, before the handler is done, and the
// typing indicator ends then; later words are coalesced into at most one
// update per interval, continuing in a new message where Parts splits;
// the complete reply is shown once, each message edited a last time.
func TestDraftStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, d := newDraftEnv(t, "", time.Second)
		var visible []time.Duration
		e.p.opts.FirstVisible = func(dur time.Duration) { visible = append(visible, dur) }
		more, done := make(chan struct{}), make(chan struct{})
		e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Status("reading…")
			task.Stream.Text("one ")
			task.Stream.Status("too late: words are shown")
			<-more
			for _, w := range []string{"two ", "", "three|", "four"} {
				task.Stream.Text(w)
			}
			<-done
			return mnemo.Reply{Text: "one two three|four", Streamed: true}, nil
		})
		e.start(t)
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		synctest.Wait()
		if got := e.f.Events(); !slices.Equal(got, []string{"ack:m1", "typing:m1", "prepare:m1", "status:m1:reading…", "start:m1:0:one ", "stop:m1"}) {
			t.Fatalf("before the handler is done: %q", got)
		}
		if len(visible) != 1 {
			t.Errorf("first visible told %d times", len(visible))
		}
		close(more)
		synctest.Wait()
		if got := prefixed(e.f, "edit:"); len(got) != 0 {
			t.Fatalf("edited within the interval: %q", got)
		}
		time.Sleep(time.Second) // the bubble's clock: the interval passes
		synctest.Wait()
		if got := prefixed(e.f, "edit:"); !slices.Equal(got, []string{"edit:m1:0:d1:one two three"}) {
			t.Errorf("edits after the interval: %q", got)
		}
		if got := prefixed(e.f, "start:"); !slices.Equal(got, []string{"start:m1:0:one ", "start:m1:1:four"}) {
			t.Errorf("messages: %q", got)
		}
		close(done)
		synctest.Wait()
		if d.shown("d1") != "one two three" || d.shown("d2") != "four" {
			t.Errorf("shown %q, %q", d.shown("d1"), d.shown("d2"))
		}
		if got := prefixed(e.f, "edit:"); len(got) != 3 || !strings.HasSuffix(got[1], ":final") || !strings.HasSuffix(got[2], ":final") {
			t.Errorf("final edits %q", got)
		}
		if got := e.f.posts(); len(got) != 0 {
			t.Errorf("posted besides the stream: %q", got)
		}
		if e.p.Journal().Len() != 0 {
			t.Error("the message is still journaled")
		}
		if len(visible) != 1 || visible[0] != 0 {
			t.Errorf("first visible %v", visible)
		}
	})
}

// Updates wait for the interval since the last one; the words of a whole
// reply streamed quickly make one start and no edit before the final one.
func TestDraftCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, d := newDraftEnv(t, "", time.Second)
		step := make(chan struct{})
		e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
			var all strings.Builder
			for i := range 30 {
				w := fmt.Sprintf("w%d ", i)
				all.WriteString(w)
				task.Stream.Text(w)
				<-step
			}
			return mnemo.Reply{Text: all.String(), Streamed: true}, nil
		})
		e.start(t)
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		for range 30 {
			synctest.Wait()
			time.Sleep(200 * time.Millisecond)
			step <- struct{}{}
		}
		synctest.Wait()
		d.dmu.Lock()
		times := slices.Clone(d.editTimes)
		d.dmu.Unlock()
		if len(times) < 4 || len(times) > 6 { // 6 s of words, one update a second
			t.Errorf("%d edits for 6 s of words", len(times))
		}
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < time.Second {
				t.Errorf("edits %d and %d are %v apart", i-1, i, gap)
			}
		}
		if got := d.shown("d1"); !strings.HasPrefix(got, "w0 w1") || !strings.HasSuffix(got, "w29 ") {
			t.Errorf("final %q", got)
		}
	})
}

// A reply cut off after words were shown ends with those words and
// mnemo.CutNote; so does one whose handler failed or panicked after
// words were shown. Nothing shown is posted again.
func TestDraftCut(t *testing.T) {
	shown := make(chan struct{})
	for _, c := range []struct {
		name  string
		reply func(mnemo.Task) (mnemo.Reply, error)
	}{
		{"cut", func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Text("half a")
			<-shown
			return mnemo.Reply{Text: "half a", Failed: true, Cut: true, Streamed: true}, nil
		}},
		{"error", func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Text("half a")
			<-shown
			return mnemo.Reply{}, errors.New("broken")
		}},
		{"panic", func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Text("half a")
			<-shown
			panic("broken")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shown = make(chan struct{})
			e, d := newDraftEnv(t, t.TempDir(), 0)
			e.h.SetReply(c.reply)
			e.start(t)
			e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
			e.f.waitEvent(t, "start:m1:0:half a")
			close(shown)
			e.f.waitEvent(t, "edit:m1:0:d1:half a"+mnemo.CutNote+":final")
			if got := prefixed(e.f, "start:"); !slices.Equal(got, []string{"start:m1:0:half a"}) {
				t.Errorf("messages %q", got)
			}
			if len(e.f.posts()) != 0 {
				t.Errorf("posted again: %q", e.f.posts())
			}
			if d.shown("d1") != "half a"+mnemo.CutNote {
				t.Errorf("shows %q", d.shown("d1"))
			}
		})
	}
}

// A reply that was not streamed is posted as before; a reply whose split
// came out shorter than the messages streamed fills the extra one; a
// first post that fails leaves the reply to the usual post.
func TestDraftEdges(t *testing.T) {
	t.Run("not streamed", func(t *testing.T) {
		e, _ := newDraftEnv(t, "", 0)
		e.start(t)
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		e.f.waitEvent(t, "post:m1:0:echo: hi")
		if got := prefixed(e.f, "start:"); len(got) != 0 {
			t.Errorf("streamed %q", got)
		}
	})
	t.Run("shorter", func(t *testing.T) {
		e, d := newDraftEnv(t, "", 0)
		shown := make(chan struct{})
		e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Text("a|b")
			<-shown
			return mnemo.Reply{Text: "ab", Streamed: true}, nil
		})
		e.start(t)
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		e.f.waitEvent(t, "start:m1:1:b")
		close(shown)
		e.f.waitEvent(t, "edit:m1:1:d2:"+draftFiller+":final")
		if d.shown("d1") != "ab" || d.shown("d2") != draftFiller {
			t.Errorf("shown %q, %q", d.shown("d1"), d.shown("d2"))
		}
	})
	t.Run("start fails", func(t *testing.T) {
		e, d := newDraftEnv(t, "", 0)
		d.failStart = true
		e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Text("a")
			return mnemo.Reply{Text: "a|b", Streamed: true}, nil
		})
		e.start(t)
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		e.f.waitEvent(t, "post:m1:1:b")
		if got := e.f.posts(); !slices.Equal(got, []string{"post:m1:0:a", "post:m1:1:b"}) {
			t.Errorf("posts %q", got)
		}
	})
	t.Run("edit fails", func(t *testing.T) {
		e, d := newDraftEnv(t, "", 0)
		d.failEdit = true
		next := make(chan struct{})
		e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
			task.Stream.Text("a")
			<-next
			task.Stream.Text("b|c")
			return mnemo.Reply{Text: "ab|c", Streamed: true}, nil
		})
		e.start(t)
		e.p.Receive(context.Background(), e.msg("m1", "c1", "hi"))
		e.f.waitEvent(t, "start:m1:0:a")
		close(next)
		e.f.waitEvent(t, "post:m1:1:c")
		if d.shown("d1") != "ab" {
			t.Errorf("shown %q", d.shown("d1"))
		}
	})
}

// After a crash, a streamed reply being finished (Posting) is finished by
// editing its messages, and the rest is posted; a reply still being
// streamed is answered again into the messages it showed, not posted
// again.
func TestDraftResume(t *testing.T) {
	dir := t.TempDir()
	j, err := intake.Open(intake.Options{Dir: dir, Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	enc := func(id, conv, text string) intake.Entry {
		return intake.Entry{ID: id, User: "u", Data: f.Encode(&msg{Message: Message{Conversation: conv, User: "u", DM: true, Text: text}})}
	}
	j.Add(enc("m1", "c1", "finishing"), enc("m2", "c2", "streaming"), enc("m3", "c3", "lost"), enc("m4", "c4", "plain"))
	if err := j.Drafted("m1", []string{"x1"}); err != nil {
		t.Fatal(err)
	}
	j.Posting("m1", "a|b")
	j.Drafted("m2", []string{"y1", "y2"})
	j.Close()

	e, d := newDraftEnv(t, dir, 0)
	d.shows["x1"], d.shows["y1"], d.shows["y2"], d.shows["lost:m3"] = "a, half", "old|", "half", "ne"
	e.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		task.Stream.Text("new")
		return mnemo.Reply{Text: "new", Streamed: true}, nil
	})
	e.start(t)
	e.p.Replay(context.Background())
	e.f.waitEvent(t, "post:m1:1:b")
	e.f.waitEvent(t, "edit:m2:1:y2:"+draftFiller+":final")
	e.f.waitEvent(t, "edit:m3:0:lost:m3:new:final")
	e.p.Close() // m4 answered too, streamed or posted (the handler returns at once)
	if d.shown("x1") != "a" || d.shown("y1") != "new" || d.shown("lost:m3") != "new" {
		t.Errorf("shown %q, %q, %q", d.shown("x1"), d.shown("y1"), d.shown("lost:m3"))
	}
	if got := append(prefixed(e.f, "start:"), prefixed(e.f, "post:m4")...); !slices.Equal(got, []string{"start:m4:0:new"}) &&
		!slices.Equal(got, []string{"post:m4:0:new"}) {
		t.Errorf("posted: %q", got)
	}
	if got := e.h.Tasks(); len(got) != 3 {
		t.Errorf("tasks %+v", got)
	}
	if !strings.Contains(e.logs.String(), "finishing a streamed reply interrupted by a restart") {
		t.Errorf("logs:\n%s", e.logs)
	}
}

// What a streamed reply ends with.
func TestFinalText(t *testing.T) {
	for _, c := range []struct {
		a       Answered
		written string
		want    string
	}{
		{Answered{Text: "all", Streamed: true}, "all", "all"},
		{Answered{Text: "new"}, "old", "new"},
		{Answered{Text: "half", Failed: true, Cut: true, Streamed: true}, "half", "half" + mnemo.CutNote},
		{Answered{Text: "half", Failed: true, Cut: true}, "", "half" + mnemo.CutNote},
		{Answered{Text: ErrorReplyText, Failed: true}, "some", "some" + mnemo.CutNote},
		{Answered{Text: mnemo.ApologyText, Failed: true}, "", mnemo.ApologyText},
	} {
		if got := finalText(c.a, c.written); got != c.want {
			t.Errorf("finalText(%+v, %q) = %q; want %q", c.a, c.written, got, c.want)
		}
	}
}
