package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
	"github.com/mnemo-agent/mnemo/reflector"
)

// Options are what the core is made of. cmd/mnemo fills them from the
// configuration, the load tool from its flags; zero values take each
// package's defaults.
type Options struct {
	// Thinker and Reflector are the model as each role uses it (one
	// client, wrapped as the caller needs: metrics, a call gate).
	Thinker, Reflector llm.Model
	// ThinkerModel and ReflectorModel are the model names.
	ThinkerModel, ReflectorModel string

	Store       memory.Options // the memory store (Logger and Faults: from below when unset; OnChange: the Observer's)
	IndexBudget int            // bytes of the index the Thinker sees first
	// Observer is told of turns, tool calls, reflections and changes to
	// the memory files; nil observes nothing.
	Observer Observer

	// StateDir holds the reflection journal (StateDir/reflector) and the
	// memory index cache (StateDir/index, unless Store.IndexCache is set).
	StateDir string
	// Reflect and Agent are the rest of the reflector's and the Thinker's
	// configuration; the model, memory, logger, fault hook and the hooks
	// the Observer is told through are set here.
	Reflect reflector.Config
	// Rollup configures the roll-ups of old episode months (its After: 0
	// turns them off); the model is Reflector's unless Rollup.Model is
	// set, the store, state folder and logger are set here, and the
	// roll-up of a person (and of a channel's memory, after a reflection
	// in it) runs after their reflections. RollupCommit, when set, is
	// told of each roll-up just before it is written (the history names
	// its author).
	Rollup       reflector.RollupConfig
	RollupCommit func(memory.Commit)
	Agent        agent.Config
	Logger       *slog.Logger
	Faults       durable.Hook // before each disk step of the store and the journal; nil in production
}

// Core is mnemo's core as every front end uses it: the memory store, the
// reflector and the Thinker, wired together and closed in one order.
type Core struct {
	Store     *memory.Store
	Memory    Memory
	Reflector *reflector.Reflector
	Agent     *agent.Agent
	// Rollups is the roll-up job; nil when roll-ups are off.
	Rollups *reflector.Rollups

	log  *slog.Logger
	lost atomic.Int64 // turns that could not be journaled
}

// Open opens the store, then the reflector (which replays the turns a
// crash left journaled), then the Thinker, whose turns go to the
// reflector.
func Open(o Options) (*Core, error) {
	log := defaults.Logger(o.Logger)
	obs := o.Observer
	so := o.Store
	var onTool func(string, error)
	if obs != nil { // unobserved, the store and the tools skip the work of telling
		so.OnChange, onTool = obs.Change, obs.ToolCall
	}
	if so.Logger == nil {
		so.Logger = log
	}
	if so.Faults == nil {
		so.Faults = o.Faults
	}
	if so.IndexCache == "" && o.StateDir != "" {
		so.IndexCache = filepath.Join(o.StateDir, "index")
	}
	store, err := memory.Open(so)
	if err != nil {
		return nil, err
	}
	c := &Core{Store: store, Memory: Memory{Store: store, IndexBudget: o.IndexBudget, OnToolCall: onTool}, log: log}
	rc := o.Reflect
	rc.Model, rc.ModelName, rc.Memory, rc.StateDir = o.Reflector, o.ReflectorModel, c.Memory, o.StateDir
	rc.Logger, rc.Faults = log, o.Faults
	if obs != nil {
		rc.OnRun = obs.Reflection
	}
	ro := o.Rollup
	if ro.Model == nil {
		ro.Model = o.Reflector
	}
	if ro.ModelName == "" {
		ro.ModelName = o.ReflectorModel
	}
	ro.Store, ro.StateDir, ro.Logger = RollupStore{Store: store, OnCommit: o.RollupCommit}, o.StateDir, log
	if ro.Clock == nil {
		ro.Clock = rc.Clock
	}
	if c.Rollups = reflector.NewRollups(ro); c.Rollups != nil {
		rc.AfterRun = func(ctx context.Context, s mnemo.Scope) {
			c.Rollups.AfterReflection(ctx, s.User) // the person's own months, never mixed with a channel's
			if s.Channel != "" {
				c.Rollups.AfterReflection(ctx, s.Channel) // the channel's memory, from its own months
			}
		}
	}
	if c.Reflector, err = reflector.Open(rc); err != nil {
		store.Close()
		return nil, fmt.Errorf("open the reflection journal in %s: %w", o.StateDir, err)
	}
	ac := o.Agent
	ac.Model, ac.ModelName, ac.Memory, ac.Logger = o.Thinker, o.ThinkerModel, c.Memory, log
	ac.OnTurn = func(t mnemo.Turn) {
		if t.MemoryOff || obs != nil && !obs.Turn(t) {
			return // memory is off where it was said: nothing of it is kept
		}
		if t.Failed {
			// The reply never came (or broke off): no exchange to learn
			// from, and a reflection now would fail as the reply did, be
			// retried and given up on, an error for the admin to clear.
			log.Info("reflector: not reflected: the reply never came; nothing of the turn is kept", "task_id", t.TaskID, "user", t.User)
			return
		}
		if err := c.Reflector.Add(t); err != nil {
			c.lost.Add(1)
			log.Error("reflector: could not journal the turn; it will not be reflected", "task_id", t.TaskID, "user", t.User, "err", err)
		}
	}
	if c.Agent, err = agent.New(ac); err != nil { // only a wiring mistake
		c.Reflector.Close(context.Background())
		store.Close()
		return nil, err
	}
	return c, nil
}

// Lost is the number of turns that could not be journaled (they are not
// remembered).
func (c *Core) Lost() int64 { return c.lost.Load() }

// Close reflects every pending turn and waits for running reflections
// until ctx ends (then they are cancelled; their turns stay journaled),
// then closes the store. reflectErr says what the reflector left undone
// (logged, not a failure of Close); err is the store's.
func (c *Core) Close(ctx context.Context) (reflectErr, err error) {
	start := time.Now()
	if rerr := c.Reflector.Close(ctx); rerr != nil && !errors.Is(rerr, reflector.ErrClosed) {
		reflectErr = rerr
		c.log.Warn("reflector: shutdown incomplete", "err", rerr, "waited", time.Since(start).Round(time.Millisecond))
	}
	return reflectErr, c.Store.Close()
}
