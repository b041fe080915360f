package intake

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/chat"
	"github.com/mnemo-agent/mnemo/memory/durable"
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
	HTTPClient  *http.Client     // nil → chat.NewHTTPClient(HTTPTimeout), closed at the end of Run
	HTTPTimeout time.Duration
}

// Adapter is the journal's side of every chat adapter's Run: Run is
// called once; the journal is memory-only until Run opens the one in Dir,
// and is closed (with the idle connections of the HTTP client it made)
// when Run ends. bots/internal/pipeline drives the messages through it.
type Adapter struct {
	opts AdapterOptions
	Log  *slog.Logger
	Now  func() time.Time
	HTTP *http.Client

	// Faults is the journal's disk-fault hook; tests inject faults.
	Faults durable.Hook

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
	a := &Adapter{opts: opts, Log: opts.Logger, Now: opts.Now, HTTP: opts.HTTPClient}
	if a.HTTP == nil {
		a.HTTP = chat.NewHTTPClient(opts.HTTPTimeout)
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
		j, err := Open(Options{Dir: a.opts.Dir, Name: a.opts.Platform, Logger: a.Log, Now: a.Now, Faults: a.Faults})
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
