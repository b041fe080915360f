package intake

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// LifecycleOptions configures a Lifecycle. Platform is required.
type LifecycleOptions struct {
	Platform string // "slack", "discord": the journal's name and every log and error prefix
	// Keeps says what the journal keeps, for the error when it cannot be
	// opened ("the messages received and not yet answered").
	Keeps string
	Dir   string // the journal's folder; "" keeps it in memory

	Logger *slog.Logger     // nil → discard
	Now    func() time.Time // nil → time.Now
	// AtStop, when set, runs when the journal is closed, and after a Start
	// that failed (a platform closes the idle connections of the HTTP
	// client it made).
	AtStop func()
}

// Lifecycle is the intake journal's life in a chat adapter's Run: Run is
// called once; the journal is memory-only until Start opens the one in
// Dir, and is closed when Run ends. bots/internal/pipeline drives the
// messages through it.
type Lifecycle struct {
	opts LifecycleOptions
	Log  *slog.Logger
	Now  func() time.Time

	// Faults is the journal's disk-fault hook; tests inject faults.
	Faults durable.Hook

	started atomic.Bool
	journal atomic.Pointer[Journal]
}

// NewLifecycle fills in the defaults of opts; its journal is in memory
// until Start.
func NewLifecycle(opts LifecycleOptions) *Lifecycle {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.AtStop == nil {
		opts.AtStop = func() {}
	}
	l := &Lifecycle{opts: opts, Log: opts.Logger, Now: opts.Now}
	mem, _ := Open(Options{Name: opts.Platform, Logger: l.Log, Now: l.Now}) // in memory: cannot fail
	l.journal.Store(mem)
	return l
}

// Journal is the intake journal (a memory-only one until Start opens the
// one in Dir).
func (l *Lifecycle) Journal() *Journal { return l.journal.Load() }

// Start begins Run: it refuses a second call, and opens the journal in Dir
// when set. stop closes the journal, after the tasks are done, then runs
// AtStop.
func (l *Lifecycle) Start() (stop func(), err error) {
	if !l.started.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%s: Run was already called on this Bot", l.opts.Platform)
	}
	if l.opts.Dir != "" {
		j, err := Open(Options{Dir: l.opts.Dir, Name: l.opts.Platform, Logger: l.Log, Now: l.Now, Faults: l.Faults})
		if err != nil {
			l.opts.AtStop()
			return nil, fmt.Errorf("%s: %w (the intake journal keeps %s; the state folder must be writable)", l.opts.Platform, err, l.opts.Keeps)
		}
		l.journal.Store(j)
	}
	j := l.Journal()
	return func() {
		j.Close()
		l.opts.AtStop()
	}, nil
}
