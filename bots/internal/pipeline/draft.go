package pipeline

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo"
)

// Drafter is a Platform that shows a reply while it is written (optional):
// the pipeline posts the first words as a message at once and then edits
// it, at most once per DraftInterval, continuing in a new message where
// Parts would split. A platform without it gets the reply whole.
type Drafter[M Incoming] interface {
	// DraftInterval is the least time between two updates of a reply's
	// messages (the platform's edit rate limit).
	DraftInterval() time.Duration
	// StartDraft posts e.Text as message e.Part of m's reply (part 0
	// answers m) and returns the platform's id of it.
	StartDraft(ctx context.Context, m M, e DraftEdit) (id string, err error)
	// EditDraft shows e.Text in message e.ID of m's reply instead of
	// e.Shown; the pipeline calls it once more with e.Final for every
	// message when the reply is complete (a platform with nothing to do
	// for an unchanged text returns nil).
	EditDraft(ctx context.Context, m M, e DraftEdit) error
}

// Statuser is a Drafter that can say what the agent does before the
// reply's first words, e.g. "reading facts/user.md…" (optional): the
// typing indicator's text, where the platform's has one.
type Statuser[M Incoming] interface {
	// DraftStatus shows status while m is answered ("": the usual
	// thinking indicator again).
	DraftStatus(ctx context.Context, m M, status string)
}

// DraftFinder is a Drafter that can find, after a restart, the first
// message of m's reply a crash left unjournaled: posted in the instant
// before its id was written down (optional). Without it that message
// stays as it was and the reply is posted after it.
type DraftFinder[M Incoming] interface {
	// FindDraft is the platform's id of the first message of m's reply,
	// or "" when there is none (or it cannot tell).
	FindDraft(ctx context.Context, m M) string
}

// DraftEdit is one update of a message of a streamed reply.
type DraftEdit struct {
	Part  int    // the message's place in the reply
	ID    string // the platform's id of it ("" for StartDraft)
	Text  string // what it is to show (rendered by Parts)
	Shown string // what it shows now ("" when unknown: after a restart)
	Final bool   // the reply is complete: the message's last update
	// Parts is how many messages the reply needs so far; Written is the
	// reply so far as the model wrote it (Markdown, not rendered; "" in
	// the final update and after a restart), for a platform that streams
	// the source itself while the reply fits one message.
	Parts   int
	Written string
}

// draftFiller is what draft.finish puts in a message streamed earlier
// that the complete reply no longer needs (its split came out shorter),
// so that no words show twice.
const draftFiller = "…"

// draft is a reply as it is written (mnemo.Stream): Text collects the
// words and wakes the draft's goroutine, which posts the first words at
// once and then updates the messages at most once per interval. finish
// shows the complete reply, exactly once.
type draft[M Incoming] struct {
	p       *Pipeline[M]
	d       Drafter[M]
	m       M
	visible func() // called once, at the first words shown

	mu      sync.Mutex
	text    strings.Builder
	running bool          // the goroutine was started
	wake    chan struct{} // cap 1: new words
	done    chan struct{} // closed by finish
	ended   chan struct{} // closed when the goroutine ends

	// Owned by the goroutine until it ends, then by finish.
	ids    []string // the messages of the reply, in order
	shown  []string // what each shows
	broken bool     // a post or edit failed: no more updates until finish
}

var _ mnemo.Stream = (*draft[*Message])(nil)

func newDraft[M Incoming](p *Pipeline[M], d Drafter[M], m M, ids []string, visible func()) *draft[M] {
	return &draft[M]{p: p, d: d, m: m, visible: visible, ids: ids, shown: make([]string, len(ids)),
		wake: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
}

// Text adds delta to the reply and has it shown soon.
func (dr *draft[M]) Text(delta string) {
	if delta == "" {
		return
	}
	dr.mu.Lock()
	dr.text.WriteString(delta)
	start := !dr.running
	dr.running = true
	dr.mu.Unlock()
	if start {
		dr.p.wg.Go(dr.run)
	}
	select {
	case dr.wake <- struct{}{}:
	default:
	}
}

// Status shows what the agent does on a platform that can (Statuser),
// until the first words come; after them the words say enough.
func (dr *draft[M]) Status(status string) {
	st, ok := dr.d.(Statuser[M])
	if !ok {
		return
	}
	dr.mu.Lock()
	started := dr.running
	dr.mu.Unlock()
	if !started {
		st.DraftStatus(dr.p.work, dr.m, status)
	}
}

// written is the reply so far.
func (dr *draft[M]) written() string {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	return dr.text.String()
}

// run updates the messages as words come: at once the first time, then
// at most once per interval, until finish.
func (dr *draft[M]) run() {
	defer close(dr.ended)
	var last time.Time
	for {
		select {
		case <-dr.wake:
		case <-dr.done:
			return
		}
		if len(dr.ids) > 0 && !last.IsZero() {
			if wait := dr.d.DraftInterval() - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-dr.done:
					t.Stop()
					return
				}
			}
		}
		if dr.broken {
			continue
		}
		written := dr.written()
		dr.show(dr.p.plat.Parts(dr.m, written), written, false)
		last = time.Now()
	}
}

// show brings the messages to parts: an edit of each one that changed,
// and a new message for each part past them (at most 5 with the
// platform's Parts). A failure stops the updates until the final one.
func (dr *draft[M]) show(parts []string, written string, final bool) error {
	h := dr.m.Head()
	for i, part := range parts {
		if i < len(dr.ids) {
			if part == dr.shown[i] && !final {
				continue
			}
			err := dr.d.EditDraft(dr.p.work, dr.m, DraftEdit{Part: i, ID: dr.ids[i], Text: part, Shown: dr.shown[i], Final: final,
				Parts: len(parts), Written: written})
			if err != nil {
				dr.broken = true
				return fmt.Errorf("edit of part %d of %d: %w", i+1, len(parts), err)
			}
			dr.shown[i] = part
			if i == 0 {
				dr.visible()
			}
			continue
		}
		id, err := dr.d.StartDraft(dr.p.work, dr.m, DraftEdit{Part: i, Text: part, Parts: len(parts), Written: written})
		if err != nil {
			dr.broken = true
			return fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
		}
		dr.ids, dr.shown = append(dr.ids, id), append(dr.shown, part)
		if i == 0 {
			dr.visible()
		}
		if err := dr.p.Journal().Drafted(h.ID, dr.ids); err != nil {
			h.Log.Warn(dr.p.opts.Name+": the streamed message could not be journaled; after a crash the reply may be posted again", "error", err)
		}
	}
	return nil
}

// stop ends the goroutine (it finishes the update it is making).
func (dr *draft[M]) stop() {
	close(dr.done)
	dr.mu.Lock()
	running := dr.running
	dr.running = true // a late Text starts nothing
	dr.mu.Unlock()
	if running {
		<-dr.ended
	}
}

// finish shows text, the complete reply, in the messages streamed (each
// edited once more, whatever it showed) and new ones after them, after
// journaling it (so that a crash now is resumed, not answered again).
// It reports false, doing nothing, when no message was streamed.
func (dr *draft[M]) finish(text string, start time.Time) bool {
	dr.stop()
	if len(dr.ids) == 0 {
		return false
	}
	h := dr.m.Head()
	if err := dr.p.Journal().Posting(h.ID, text); err != nil {
		h.Log.Error(dr.p.opts.Name+": the reply could not be journaled; finishing it anyway", "error", err)
	}
	dr.complete(text, start)
	return true
}

// complete shows text in the messages and posts what they cannot hold,
// then takes m out of the journal.
func (dr *draft[M]) complete(text string, start time.Time) {
	h := dr.m.Head()
	parts := dr.p.plat.Parts(dr.m, text)
	edit := parts
	for len(edit) < len(dr.ids) {
		edit = append(edit, draftFiller)
	}
	edit = edit[:len(dr.ids)]
	err := dr.show(edit, "", true)
	n := len(dr.ids)
	if err == nil && n < len(parts) {
		// What the platform shows already of the parts after the streamed
		// ones (a crash during the final post).
		from := max(n, dr.p.plat.Posted(dr.p.work, dr.m, parts))
		for i := from; i < len(parts) && err == nil; i++ {
			if err = dr.p.plat.PostPart(dr.p.work, dr.m, i, parts[i]); err != nil {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
			}
		}
	}
	if err != nil {
		h.Log.Error(dr.p.opts.Name+": cannot finish the streamed reply", "error", err)
	} else {
		h.Log.Info(dr.p.opts.Name+": replied", "parts", len(parts), "streamed", n, "duration", time.Since(start))
	}
	if err := dr.p.Journal().Done(h.ID); err != nil {
		h.Log.Warn(dr.p.opts.Name+": the reply was posted but could not be marked done; after a restart it is checked, not posted again", "error", err)
	}
}

// finalText is what a streamed reply ends with: the reply, or, when it
// broke off after words were shown (a cut, an error, a panic), those words
// and mnemo.CutNote, so that nothing shown is taken back or repeated.
func finalText(a Answered, written string) string {
	switch {
	case written == "" && a.Cut:
		return a.Text + mnemo.CutNote
	case written == "":
		return a.Text
	case a.Cut || a.Failed && !a.Streamed:
		return written + mnemo.CutNote
	}
	return a.Text
}
