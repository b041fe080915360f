package intake

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/core"
)

// AdapterOptions configures an Adapter. Platform is required.
type AdapterOptions struct {
	Platform string // "slack", "discord": the journal's name and every log and error prefix
	// Keeps says what the journal keeps, for the error when it cannot be
	// opened ("the messages received and not yet answered").
	Keeps string
	Dir   string // the journal's folder; "" keeps it in memory

	Logger      *slog.Logger     // nil → discard
	Now         func() time.Time // nil → time.Now
	HTTPClient  *http.Client     // nil → core.NewHTTPClient(HTTPTimeout), closed at the end of Run
	HTTPTimeout time.Duration
}

// Adapter is what every chat adapter's Bot does the same way around its
// messages: Run is called once; the journal is memory-only until Run opens
// the one in Dir, and is closed (with the idle connections of the HTTP
// client it made) when Run ends; the messages the journal kept from before
// a restart are answered first; a reply is journaled before it is posted
// and the message leaves the journal once it is. The adapters keep only
// what is their platform's: reading events into messages, and posting.
type Adapter struct {
	opts  AdapterOptions
	Log   *slog.Logger
	Now   func() time.Time
	HTTP  *http.Client
	Queue *core.Queue // messages, in order per conversation

	// OpenFile is the journal's file layer; tests inject faults.
	OpenFile OpenFileFunc

	ownHTTP bool
	started atomic.Bool
	journal atomic.Pointer[Journal]
}

// NewAdapter fills in the defaults of opts; its journal is in memory until
// Start.
func NewAdapter(opts AdapterOptions) *Adapter {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Adapter{opts: opts, Log: opts.Logger, Now: opts.Now, HTTP: opts.HTTPClient,
		Queue: core.NewQueue(core.MaxInFlight, core.PerConversation)}
	if a.HTTP == nil {
		a.HTTP = core.NewHTTPClient(opts.HTTPTimeout)
		a.ownHTTP = true
	}
	mem, _ := Open(Options{Name: opts.Platform, Logger: a.Log, Now: a.Now}) // in memory: cannot fail
	a.journal.Store(mem)
	return a
}

// Journal is the intake journal (a memory-only one until Start opens the
// one in Dir).
func (a *Adapter) Journal() *Journal { return a.journal.Load() }

// Start begins Run: it refuses a second call, and opens the journal in Dir
// when set. stop closes the journal, after the tasks are done, and the idle
// connections of the HTTP client the Adapter made.
func (a *Adapter) Start() (stop func(), err error) {
	if !a.started.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%s: Run was already called on this Bot", a.opts.Platform)
	}
	if a.opts.Dir != "" {
		j, err := Open(Options{Dir: a.opts.Dir, Name: a.opts.Platform, Logger: a.Log, Now: a.Now, OpenFile: a.OpenFile})
		if err != nil {
			a.closeIdle()
			return nil, fmt.Errorf("%s: %w (the intake journal keeps %s; the state folder must be writable)", a.opts.Platform, err, a.opts.Keeps)
		}
		a.journal.Store(j)
	}
	j := a.Journal()
	return func() {
		j.Close()
		a.closeIdle()
	}, nil
}

func (a *Adapter) closeIdle() {
	if a.ownHTTP {
		a.HTTP.CloseIdleConnections()
	}
}

// Replay answers what the journal kept from before a restart, in the order
// it came: a message not answered yet goes to enqueue; a reply a crash
// interrupted, with its text, to resume. decode gives back the message of
// an entry (logging to log); an entry it cannot decode is logged and
// dropped.
func Replay[T any](a *Adapter, decode func(e Entry, log *slog.Logger) (T, error), enqueue func(T), resume func(m T, text string)) {
	pending := a.Journal().Pending()
	if len(pending) == 0 {
		return
	}
	a.Log.Info(a.opts.Platform+": answering the messages received before a restart", "messages", len(pending))
	for _, e := range pending {
		m, err := decode(e, a.Log)
		if err != nil {
			a.Log.Error(a.opts.Platform+": an unreadable message in the intake journal cannot be answered; dropping it",
				"file", a.Journal().Path(), "id", e.ID, "error", err)
			_ = a.Journal().Done(e.ID)
			continue
		}
		if e.Posting {
			resume(m, e.Reply)
		} else {
			enqueue(m)
		}
	}
}

// Decode is the usual decode of Replay: the entry's data as JSON into a W,
// which must be Valid, and the message W gives back.
func Decode[W Wire[T], T any](e Entry, log *slog.Logger) (T, error) {
	var w W
	var zero T
	if err := json.Unmarshal(e.Data, &w); err != nil {
		return zero, err
	}
	if !w.Valid() {
		return zero, errors.New("malformed ids")
	}
	return w.Incoming(e, log), nil
}

// Wire is a message as the journal keeps it (W) that gives back the
// message to answer (T): Valid checks the ids a reply is addressed with,
// Incoming rebuilds the message of entry e, logging to log.
type Wire[T any] interface {
	Valid() bool
	Incoming(e Entry, log *slog.Logger) T
}

// Reply posts text as the answer to message id. The text is journaled
// first, so that a crash while it is posted neither loses nor doubles it
// (Resume); once posted, the message leaves the journal.
func (a *Adapter) Reply(id string, log *slog.Logger, text string, start time.Time, post func(from int) (int, error)) {
	if err := a.Journal().Posting(id, text); err != nil {
		log.Error(a.opts.Platform+": the reply could not be journaled; posting it anyway (a crash while it is posted could post it twice)", "error", err)
	}
	a.Post(id, log, text, 0, start, post)
}

// Resume finishes a reply a crash interrupted: posted counts the parts of
// it already on the platform, which are not posted again.
func (a *Adapter) Resume(id string, log *slog.Logger, text string, posted int, post func(from int) (int, error)) {
	log.Info(a.opts.Platform+": finishing a reply interrupted by a restart", "parts_posted_before", posted)
	a.Post(id, log, text, posted, time.Now(), post)
}

// Post posts text's parts from the part from on with post (which returns
// how many it posted), then takes message id out of the journal (a part
// that cannot be posted is not retried: logged).
func (a *Adapter) Post(id string, log *slog.Logger, text string, from int, start time.Time, post func(from int) (int, error)) {
	if n, err := post(from); err != nil {
		what := "reply"
		if text == core.BusyReplyText {
			what = "busy reply"
		}
		log.Error(a.opts.Platform+": cannot post the "+what, "error", err, "parts_posted", n)
	} else {
		log.Info(a.opts.Platform+": replied", "parts", n, "duration", time.Since(start))
	}
	if err := a.Journal().Done(id); err != nil {
		log.Warn(a.opts.Platform+": the reply was posted but could not be marked done; after a restart it is checked, not posted again", "error", err)
	}
}
