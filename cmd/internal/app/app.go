package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/budget"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/cmd/internal/state"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
)

// Options are what a running mnemo is opened with. Config and Logger are
// required.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Notes, when set, is told what the person running mnemo should read
	// once (the local model server that was found): the CLI's stderr.
	Notes io.Writer
	// OllamaURL stands in for the local Ollama address (tests); "" is the
	// default.
	OllamaURL string
	// Faults, when set, is called before each change the store and the
	// reflection journal make on disk (the crash tests). nil in the binary.
	Faults durable.Hook
	// Now is the clock of the access checks and the budgets; nil: time.Now.
	Now func() time.Time
	// Platforms are the chat platforms as they registered (bots/registry):
	// serve runs those turned on (Adapters), and every forget drops what
	// their intake journals hold.
	Platforms []platform.Platform
}

// App is a running mnemo as chat and serve use it: the core (the store,
// the reflector and the Thinker) with the use cases around it — what is
// remembered shown, shared and forgotten (Memory), the chat sessions, the
// change log, the budgets and the control socket's handler. Open it with
// Open; Close it once.
type App struct {
	*Memory
	cfg       *config.Config
	platforms []platform.Platform
	log       *slog.Logger
	now       func() time.Time
	core      *wiring.Core
	llm       *openai.Client
	// metrics are served on /metrics by serve; chat keeps them unread.
	metrics *metrics.Metrics
	// baseURL is the model server's address as resolved (what was tried).
	baseURL string
	// hist keeps the earlier versions of memory files (changes.go).
	hist *memhistory.Store
	// stopBaseline ends the keeping of files as found at start (nil: not
	// started), which closes baselineDone when it has stopped.
	stopBaseline context.CancelFunc
	baselineDone chan struct{}

	reflectErr error // what Close's reflector shutdown left undone
	// calls cancels the agent's model calls when the shutdown grace is
	// over (callgate.go).
	calls *callGate
	// withdrawn holds the IDs of tasks a person cancelled (Ctrl-C in
	// chat): their turns are not reflected.
	withdrawn sync.Map
	// state is the state folder; indexRoot and journalRoot its index and
	// reflector folders, where the store keeps its index cache and the
	// reflector its journal (opened through the state's root).
	state                  *state.State
	indexRoot, journalRoot *os.Root
	// access is who may talk, as `mnemo access` changed it (access.go).
	access   *access.Store
	accessMu sync.Mutex
	// budget is limits.*: serve's platforms check it; the reflector's
	// tokens count toward its total (budget.go).
	budget *budget.Budget
	// chats is the terminal platform the second chats talk to (the
	// control socket's "chat" sessions), once UseAdapters was given it.
	chats platform.Chats
	// keeper is "Remember this" (remember.go).
	keeper *keeper
}

// ConfigError is a setting that keeps mnemo from starting (a platform
// refused its section): the CLI exits 2 on it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Withdraw keeps the turn of task id from the reflector; called before
// the task is cancelled.
func (a *App) Withdraw(id string) { a.withdrawn.Store(id, struct{}{}) }

// SaveError says what a chat could not save: turns never journaled (they
// are lost) and reflections that failed at the end (they stay journaled).
// nil when everything said was made durable and reflected.
func (a *App) SaveError() error {
	var errs []error
	if n := a.core.Lost(); n > 0 {
		errs = append(errs, fmt.Errorf("%d turn(s) could not be saved to the reflection journal in %s and will not be remembered (the errors above say why: a full or read-only disk?)", n, a.cfg.State.Dir))
	}
	if a.reflectErr != nil && !errors.Is(a.reflectErr, context.Canceled) && !errors.Is(a.reflectErr, context.DeadlineExceeded) {
		errs = append(errs, a.reflectErr) // an interrupted shutdown is not a failure: the turns wait in the journal
	}
	return errors.Join(errs...)
}

// OpenState opens the state folder (0700, no link followed), saying on log
// when it had to be made private.
func OpenState(dir string, log *slog.Logger) (*state.State, error) {
	st, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	if was := st.Tightened(); was != 0 && log != nil {
		log.Warn("mnemo: the state folder was open to other users; made it private", "dir", dir, "was", was.String(), "now", state.Mode.String())
	}
	return st, nil
}

// OpenHistory opens the history folder in the state folder, through the
// state folder's root (OpenState: the folder is kept 0700, and a link
// that leads history/ out of it is refused).
func OpenHistory(cfg *config.Config, now func() time.Time) (*memhistory.Store, error) {
	dir := filepath.Join(cfg.State.Dir, "history")
	st, err := OpenState(cfg.State.Dir, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close() // the history's own root stays open
	root, err := st.Sub("history")
	if err != nil {
		return nil, fmt.Errorf("history: %w; the history is kept in %s: make that a folder mnemo may write, or set state.dir", err, dir)
	}
	h, err := memhistory.Open(memhistory.Options{
		Dir: dir, Root: root, Now: now,
		Keep: cfg.History.Keep, MaxAge: cfg.History.MaxAge,
	})
	if err != nil {
		return nil, fmt.Errorf("%w; the history is kept in %s: make that a folder mnemo may write, or set state.dir", err, dir)
	}
	return h, nil
}

// stateSubError is what of the state folder (at dir) could not be opened,
// with the fix: a link leading out says its own (state.ErrLink); anything
// else in the way (a file where the folder must be) is named.
func stateSubError(what, dir string, err error) error {
	if errors.Is(err, state.ErrLink) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w; it is kept in %s: make that a folder mnemo may write, or set state.dir", what, err, dir)
}

// SettleLLM resolves the model server (probing a local Ollama when none
// is configured) before a command creates anything: a setup without a
// model leaves no lock or folder behind. The copy it returns names the
// server, so Open does not probe again. A note for the person (the local
// server found) goes to notes.
func SettleLLM(ctx context.Context, cfg *config.Config, ollamaURL string, notes io.Writer) (*config.Config, error) {
	httpClient := &http.Client{Transport: wiring.ModelTransport(cfg.Agent.MaxConcurrent)}
	probe := func(ctx context.Context, url string) error { return openai.ProbeModels(ctx, httpClient, url) }
	baseURL, note, err := cfg.ResolveLLM(ctx, probe, ollamaURL)
	if err != nil {
		return nil, err
	}
	if note != "" && notes != nil {
		fmt.Fprintln(notes, "mnemo: "+note)
	}
	c := *cfg
	c.LLM.BaseURL = baseURL
	return &c, nil
}

// Open resolves the model server (falling back to a local Ollama),
// opens the store and the reflector (which replays turns a crash left
// journaled) and builds the Thinker.
func Open(ctx context.Context, o Options) (*App, error) {
	cfg, log := o.Config, o.Logger
	cfg, err := SettleLLM(ctx, cfg, o.OllamaURL, o.Notes)
	if err != nil {
		return nil, err
	}
	baseURL := cfg.LLM.BaseURL
	httpClient := &http.Client{Transport: wiring.ModelTransport(cfg.Agent.MaxConcurrent)}
	st, err := OpenState(cfg.State.Dir, log)
	if err != nil {
		return nil, err
	}
	journalRoot, err := st.Sub("reflector")
	if err != nil {
		st.Close()
		return nil, stateSubError("reflection journal", filepath.Join(cfg.State.Dir, "reflector"), err)
	}
	indexRoot, err := st.Sub("index")
	if err != nil {
		journalRoot.Close()
		st.Close()
		return nil, stateSubError("memory index cache", filepath.Join(cfg.State.Dir, "index"), err)
	}
	hist, err := OpenHistory(cfg, time.Now)
	if err != nil {
		indexRoot.Close()
		journalRoot.Close()
		st.Close()
		return nil, err
	}
	changes := &changeLog{hist: hist, metrics: metrics.New(metrics.Gauges{}), log: log}
	retries := cfg.LLM.MaxRetries
	if retries == 0 {
		retries = -1 // the client reads 0 as "default"; the configuration means none
	}
	client := openai.New(openai.Config{
		BaseURL: baseURL, APIKey: cfg.LLM.APIKey, HTTPClient: httpClient,
		Timeout: cfg.LLM.Timeout, MaxRetries: retries, MaxResponseBytes: int64(cfg.LLM.MaxResponseBytes),
		Logger: log,
	})
	reflModel := cfg.LLM.ReflectorModel // follows llm.model unless set: config works it out
	history := cfg.Agent.HistoryTurns
	if history == 0 {
		history = -1 // the agent reads 0 as "default"; the configuration means none
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	calls := newCallGate()
	counted := newCountedModel(client, log)
	a := &App{cfg: cfg, platforms: o.Platforms, log: log, now: now, llm: client, calls: calls, hist: hist, metrics: changes.metrics, baseURL: baseURL,
		state: st, indexRoot: indexRoot, journalRoot: journalRoot, budget: NewBudget(cfg, now)}
	a.keeper = newKeeper(a)
	core, err := wiring.Open(wiring.Options{
		Thinker:      calls.model(measuredModel{counted, "thinker", changes.metrics}),
		Reflector:    measuredModel{counted, "reflector", changes.metrics},
		ThinkerModel: cfg.LLM.Model, ReflectorModel: reflModel,
		Store: memory.Options{
			Dir: cfg.Memory.DataDir, ReadCap: cfg.Memory.ReadCap, WriteCap: cfg.Memory.WriteCap,
			SearchBudget: cfg.Memory.SearchBudget, Watch: true, Clean: true,
			IndexCache: filepath.Join(cfg.State.Dir, "index"), IndexCacheRoot: indexRoot,
			Forgetting: changes.forgetting,
		},
		IndexBudget: cfg.Memory.IndexBudget, Observer: coreObserver{changes, &a.withdrawn},
		StateDir: cfg.State.Dir,
		Reflect: reflector.Config{Idle: cfg.Reflector.Idle, MaxTurns: cfg.Reflector.MaxTurns, MaxSteps: cfg.Reflector.MaxSteps,
			FactsBudget: cfg.Reflector.FactsBudget, JournalRoot: journalRoot,
			OnTokens:   a.budget.Charge, // a person's reflections are charged to them
			OnExplicit: a.keeper.told},
		Rollup: reflector.RollupConfig{After: cfg.Memory.RollupAfter, Model: measuredModel{counted, "rollup", changes.metrics},
			OnOutcome: changes.metrics.Rollup, OnTokens: a.budget.Charge},
		RollupCommit: func(c memory.Commit) { changes.author(c, "rollup") },
		Agent: agent.Config{MaxSteps: cfg.Agent.MaxSteps, HistoryTurns: history, MaxConcurrent: cfg.Agent.MaxConcurrent,
			MaxReplyChars: cfg.MaxReplyChars, Stream: cfg.LLM.Stream},
		Logger: log, Faults: o.Faults,
	})
	if err != nil {
		hist.Close()
		indexRoot.Close()
		journalRoot.Close()
		st.Close()
		return nil, err
	}
	a.core = core
	a.Memory = &Memory{store: core.Store, hist: hist, changes: changes, stateDir: cfg.State.Dir, log: log}
	a.metrics.SetGauges(metrics.Gauges{JournalPending: a.core.Reflector.Pending})
	a.UseJournals(Journals(o.Platforms, nil))
	log.Info("mnemo: ready", "model", cfg.LLM.Model, "reflector_model", reflModel, "llm", agent.RedactURLs(baseURL), "memory", cfg.Memory.DataDir, "state", cfg.State.Dir)
	return a, nil
}

// StartBaseline keeps, in the background, the memory files of user (all
// users for "") as found at start (changeLog.baseline): serve looks at
// everyone's, chat at its own person's only.
func (a *App) StartBaseline(user string) {
	bg, stop := context.WithCancel(context.Background())
	a.stopBaseline, a.baselineDone = stop, make(chan struct{})
	go func() {
		defer close(a.baselineDone)
		a.changes.baseline(bg, a.core.Store, user)
	}()
}

// Close reflects every pending turn and waits for running reflections
// until ctx ends (then they are cancelled), and closes the store. Turns not
// reflected stay journaled for the next start: that is logged, not failed.
// Callers bound ctx by the shutdown grace.
func (a *App) Close(ctx context.Context) error {
	if a.stopBaseline != nil {
		a.stopBaseline()
		<-a.baselineDone
	}
	var err error
	a.reflectErr, err = a.core.Close(ctx) // the store's watcher stops last: nothing more to record
	u := a.llm.Usage()
	a.log.Info("mnemo: stopped", "llm_calls", u.Calls, "prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens, "retries", u.Retries, "failures", u.Failures)
	a.hist.Close()
	a.indexRoot.Close()
	a.journalRoot.Close()
	a.state.Close()
	return err
}

// CancelCalls cancels the model calls in progress and every later one,
// and ends the platforms' waits for a Remember this: the shutdown grace
// is over.
func (a *App) CancelCalls(cause error) {
	a.calls.close(cause)
	a.keeper.stopWaiting()
}

// Metrics are the process's metrics (served on /metrics by serve).
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// Pending is how many turns wait to be reflected.
func (a *App) Pending() int { return a.core.Reflector.Pending() }

// State is the state folder.
func (a *App) State() *state.State { return a.state }

// PlatformHandler is the Thinker as the chat platforms ask it: measured.
func (a *App) PlatformHandler() Handler { return measuredHandler{a.core.Agent, a.metrics} }

// RollupModel is the model `mnemo memory rollup` calls, as the reflector
// of a running mnemo would (llm.reflectorModel), with its name; the
// server is resolved as Open resolves it.
func RollupModel(ctx context.Context, cfg *config.Config, ollamaURL string, log *slog.Logger) (llm.Model, string, error) {
	cfg, err := SettleLLM(ctx, cfg, ollamaURL, nil)
	if err != nil {
		return nil, "", err
	}
	retries := cfg.LLM.MaxRetries
	if retries == 0 {
		retries = -1 // the client reads 0 as "default"; the configuration means none
	}
	return openai.New(openai.Config{
		BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey,
		HTTPClient: &http.Client{Transport: wiring.ModelTransport(1)},
		Timeout:    cfg.LLM.Timeout, MaxRetries: retries, MaxResponseBytes: int64(cfg.LLM.MaxResponseBytes),
		Logger: log,
	}), cfg.LLM.ReflectorModel, nil
}
