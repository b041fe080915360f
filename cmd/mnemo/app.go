package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/cmd/internal/budget"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/cmd/internal/state"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
)

// app is a running mnemo as chat and serve use it: the core (the store,
// the reflector and the Thinker) with what the commands add around it —
// the configuration, the model client, metrics, the file history and the
// user-data service.
type app struct {
	env  *cliEnv
	cfg  *config.Config
	core *wiring.Core
	llm  *openai.Client
	// metrics are served on /metrics by serve; chat keeps them unread.
	metrics *metrics.Metrics
	// baseURL is the model server's address as resolved (what was tried).
	baseURL string
	// hist keeps the earlier versions of memory files (changes.go).
	hist    *memhistory.Store
	changes *changeLog
	// stopBaseline ends the keeping of files as found at start (nil: not
	// started), which closes baselineDone when it has stopped.
	stopBaseline context.CancelFunc
	baselineDone chan struct{}

	reflectErr error // what Close's reflector shutdown left undone
	// calls cancels the agent's model calls when the shutdown grace is
	// over (shutdown.go).
	calls *callGate
	// data shows and forgets what is kept of a person or a channel
	// (useQueues).
	data *userdata.Service
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
}

// withdraw keeps the turn of task id from the reflector; called before
// the task is cancelled.
func (a *app) withdraw(id string) { a.withdrawn.Store(id, struct{}{}) }

// saveError says what a chat could not save: turns never journaled (they
// are lost) and reflections that failed at the end (they stay journaled).
// nil when everything said was made durable and reflected.
func (a *app) saveError() error {
	var errs []error
	if n := a.core.Lost(); n > 0 {
		errs = append(errs, fmt.Errorf("%d turn(s) could not be saved to the reflection journal in %s and will not be remembered (the errors above say why: a full or read-only disk?)", n, stateDir(a.cfg)))
	}
	if a.reflectErr != nil && !errors.Is(a.reflectErr, context.Canceled) && !errors.Is(a.reflectErr, context.DeadlineExceeded) {
		errs = append(errs, a.reflectErr) // an interrupted shutdown is not a failure: the turns wait in the journal
	}
	return errors.Join(errs...)
}

// stateDir is state.dir, or "state" beside the memory folder.
func stateDir(cfg *config.Config) string {
	if cfg.State.Dir != "" {
		return cfg.State.Dir
	}
	return filepath.Join(filepath.Dir(filepath.Clean(cfg.Memory.DataDir)), "state")
}

// checkStateFolder makes the state folder's subfolder name (0700) when
// it is missing, and refuses one that a link leads out of the state folder.
func checkStateFolder(st *state.State, name string) error {
	r, err := st.Sub(name)
	if err != nil {
		return err
	}
	return r.Close()
}

// settleLLM resolves the model server (probing a local Ollama when none
// is configured) before a command creates anything: a setup without a
// model leaves no lock or folder behind. The copy it returns names the
// server, so openApp does not probe again.
func settleLLM(ctx context.Context, env *cliEnv, cfg *config.Config) (*config.Config, error) {
	httpClient := &http.Client{Transport: wiring.ModelTransport(cfg.Agent.MaxConcurrent)}
	probe := func(ctx context.Context, url string) error { return openai.ProbeModels(ctx, httpClient, url) }
	baseURL, note, err := cfg.ResolveLLM(ctx, probe, env.getenv("MNEMO_OLLAMA_URL"))
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(env.stderr, "mnemo: "+note)
	}
	c := *cfg
	c.LLM.BaseURL = baseURL
	return &c, nil
}

// openApp resolves the model server (falling back to a local Ollama),
// opens the store and the reflector (which replays turns a crash left
// journaled) and builds the Thinker.
func openApp(ctx context.Context, env *cliEnv, cfg *config.Config) (*app, error) {
	httpClient := &http.Client{Transport: wiring.ModelTransport(cfg.Agent.MaxConcurrent)}
	ollama := env.getenv("MNEMO_OLLAMA_URL")
	probe := func(ctx context.Context, url string) error { return openai.ProbeModels(ctx, httpClient, url) }
	baseURL, note, err := cfg.ResolveLLM(ctx, probe, ollama)
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(env.stderr, "mnemo: "+note)
	}
	st, err := openState(env, stateDir(cfg))
	if err != nil {
		return nil, err
	}
	journalRoot, err := st.Sub("reflector")
	if err != nil {
		st.Close()
		return nil, failure(fmt.Errorf("reflection journal: %w", err))
	}
	indexRoot, err := st.Sub("index")
	if err != nil {
		journalRoot.Close()
		st.Close()
		return nil, failure(fmt.Errorf("memory index cache: %w", err))
	}
	hist, err := openHistory(cfg, time.Now)
	if err != nil {
		indexRoot.Close()
		journalRoot.Close()
		st.Close()
		return nil, err
	}
	changes := &changeLog{hist: hist, metrics: metrics.New(metrics.Gauges{}), log: env.logger}
	retries := cfg.LLM.MaxRetries
	if retries == 0 {
		retries = -1 // the client reads 0 as "default"; the configuration means none
	}
	client := openai.New(openai.Config{
		BaseURL: baseURL, APIKey: cfg.LLM.APIKey, HTTPClient: httpClient,
		Timeout: cfg.LLM.Timeout, MaxRetries: retries, MaxResponseBytes: int64(cfg.LLM.MaxResponseBytes),
		Logger: env.logger,
	})
	reflModel := cmp.Or(cfg.LLM.ReflectorModel, cfg.LLM.Model)
	history := cfg.Agent.HistoryTurns
	if history == 0 {
		history = -1 // the agent reads 0 as "default"; the configuration means none
	}
	calls := newCallGate()
	a := &app{env: env, cfg: cfg, llm: client, calls: calls, hist: hist, metrics: changes.metrics, baseURL: baseURL,
		state: st, indexRoot: indexRoot, journalRoot: journalRoot, budget: newBudget(env, cfg)}
	core, err := wiring.Open(wiring.Options{
		Thinker:      calls.model(measuredModel{client, "thinker", changes.metrics}),
		Reflector:    chargedModel{measuredModel{client, "reflector", changes.metrics}, a.budget},
		ThinkerModel: cfg.LLM.Model, ReflectorModel: reflModel,
		Store: memory.Options{
			Dir: cfg.Memory.DataDir, ReadCap: cfg.Memory.ReadCap, WriteCap: cfg.Memory.WriteCap,
			SearchBudget: cfg.Memory.SearchBudget, Watch: true, Clean: true,
			IndexCache: filepath.Join(stateDir(cfg), "index"), IndexCacheRoot: indexRoot,
		},
		IndexBudget: cfg.Memory.IndexBudget, Observer: coreObserver{changes, &a.withdrawn},
		StateDir: stateDir(cfg),
		Reflect: reflector.Config{Idle: cfg.Reflector.Idle, MaxTurns: cfg.Reflector.MaxTurns, MaxSteps: cfg.Reflector.MaxSteps,
			FactsBudget: cfg.Reflector.FactsBudget, JournalRoot: journalRoot},
		Agent: agent.Config{MaxSteps: cfg.Agent.MaxSteps, HistoryTurns: history, MaxConcurrent: cfg.Agent.MaxConcurrent,
			MaxReplyChars: cfg.MaxReplyChars, Stream: cfg.LLM.Stream},
		Logger: env.logger, Faults: env.faults,
	})
	if err != nil {
		hist.Close()
		indexRoot.Close()
		journalRoot.Close()
		st.Close()
		return nil, failure(err)
	}
	a.core = core
	a.changes = changes
	a.metrics.SetGauges(metrics.Gauges{JournalPending: a.core.Reflector.Pending})
	a.useQueues(nil)
	env.logger.Info("mnemo: ready", "model", cfg.LLM.Model, "reflector_model", reflModel, "llm", agent.RedactURLs(baseURL), "memory", cfg.Memory.DataDir, "state", stateDir(cfg))
	return a, nil
}

// startBaseline keeps, in the background, the memory files of user (all
// users for "") as found at start (changeLog.baseline): serve looks at
// everyone's, chat at its own person's only.
func (a *app) startBaseline(user string) {
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
// Callers bound ctx by the shutdown grace (shutdown.go).
func (a *app) Close(ctx context.Context) error {
	if a.stopBaseline != nil {
		a.stopBaseline()
		<-a.baselineDone
	}
	var err error
	a.reflectErr, err = a.core.Close(ctx) // the store's watcher stops last: nothing more to record
	u := a.llm.Usage()
	a.env.logger.Info("mnemo: stopped", "llm_calls", u.Calls, "prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens, "retries", u.Retries, "failures", u.Failures)
	a.hist.Close()
	a.indexRoot.Close()
	a.journalRoot.Close()
	a.state.Close()
	return err
}

// Show is what `/memory` answers in Slack and Discord (userdata.Service.Show).
func (a *app) Show(user, channel string) (string, error) { return a.data.Show(user, channel) }

// SetShared marks one of user's memory files shared with channels or
// private (/memory share, /memory private in Slack, Discord and the
// chat). user is a person, as the platform names them: a channel's files
// are an admin's to change. The change is a write of the store: the
// metrics count it and the history keeps it under the person's name. A
// missing file is an error wrapping fs.ErrNotExist, as core.Memory asks.
func (a *app) SetShared(user, path string, shared bool) (changed bool, err error) {
	u, err := a.core.Store.User(user)
	if err == nil && mnemo.IsChannel(user) {
		err = fmt.Errorf("%s is a channel's memory, not a person's: /memory share and /memory private change a person's own files", user)
	}
	if err != nil {
		return false, err
	}
	who := user + " (/memory private)"
	if shared {
		who = user + " (/memory share)"
	}
	_, err = u.SetShared(path, shared, func(c memory.Commit) error {
		changed = true
		a.changes.author(c, who)
		return nil
	})
	if errors.Is(err, memory.ErrNotFound) {
		return false, fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
	}
	if err != nil {
		return false, err
	}
	a.env.logger.Info("memory: visibility changed at the user's request", "user", user, "path", path, "shared", shared, "changed", changed)
	return changed, nil
}

// CheckPath says whether p is a memory file name (facts/<name>.md or
// episodes/YYYY-MM.md).
func (a *app) CheckPath(p string) error {
	_, err := memory.ParsePath(p)
	return err
}

// forgetWait bounds how long a forget waits for a running reflection.
const forgetWait = 30 * time.Second

// useQueues (re)builds the user-data service over what this process runs:
// the store, the history, the reflector, the Thinker's short-term history
// and the running adapters' queues (Forget(user) by platform name; nil
// for none). Call it before the front ends take messages.
func (a *app) useQueues(queues map[string]func(user string) int) {
	a.data = userdata.New(userdata.Wiring{
		StateDir: stateDir(a.cfg), Store: a.core.Store, History: a.hist,
		Reflect: a.core.Reflector, Agent: a.core.Agent, Queues: queues,
	}, a.env.logger)
}

// Forget deletes one memory file (or, with path "", all of the user's
// memory), for /memory forget in Slack and Discord, with everything else
// kept of the user (userdata.Service.Forget). A missing file or folder is
// an error wrapping memory.ErrNotFound, after the rest is gone.
func (a *app) Forget(user, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), forgetWait)
	defer cancel()
	_, err := a.data.Forget(ctx, userdata.Request{Owner: user, Path: path})
	return err
}
