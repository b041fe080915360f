package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
)

// app is mnemo's core as every front end uses it: the memory store, the
// model client, the Thinker and the reflector, wired together.
type app struct {
	env   *cliEnv
	cfg   *config.Config
	core  *wiring.Core
	store *memory.Store
	llm   *openai.Client
	agent *agent.Agent
	refl  *reflector.Reflector
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
	// forgetters are what a forget drops besides the reflector's pending
	// turns and the short-term history: a front end that keeps more about
	// a user (queued intake) appends one with addForgetter.
	forgetters []forgetter
	// withdrawn holds the IDs of tasks a person cancelled (Ctrl-C in
	// chat): their turns are not reflected.
	withdrawn sync.Map
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
	hist, err := openHistory(cfg, time.Now)
	if err != nil {
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
	a := &app{env: env, cfg: cfg, llm: client, calls: calls, hist: hist, metrics: changes.metrics, baseURL: baseURL}
	core, err := wiring.Open(wiring.Options{
		Thinker:      calls.model(measuredModel{client, "thinker", changes.metrics}),
		Reflector:    measuredModel{client, "reflector", changes.metrics},
		ThinkerModel: cfg.LLM.Model, ReflectorModel: reflModel,
		Store: memory.Options{
			Dir: cfg.Memory.DataDir, ReadCap: cfg.Memory.ReadCap, WriteCap: cfg.Memory.WriteCap,
			Watch: true, Clean: true, OnChange: changes.onChange,
		},
		IndexBudget: cfg.Memory.IndexBudget, OnToolCall: countTool(changes.metrics),
		StateDir: stateDir(cfg),
		Reflect: reflector.Config{Idle: cfg.Reflector.Idle, MaxTurns: cfg.Reflector.MaxTurns, MaxSteps: cfg.Reflector.MaxSteps,
			FactsBudget: cfg.Reflector.FactsBudget, OnRun: changes.metrics.Reflection},
		Agent: agent.Config{MaxSteps: cfg.Agent.MaxSteps, HistoryTurns: history, MaxConcurrent: cfg.Agent.MaxConcurrent,
			MaxReplyChars: cfg.MaxReplyChars},
		SkipTurn: func(t agent.Turn) bool { _, ok := a.withdrawn.LoadAndDelete(t.TaskID); return ok },
		Logger:   env.logger, Faults: env.faults,
	})
	if err != nil {
		hist.Close()
		return nil, failure(err)
	}
	a.core, a.store, a.refl, a.agent = core, core.Store, core.Reflector, core.Agent
	a.changes = changes
	a.metrics.SetGauges(metrics.Gauges{JournalPending: a.refl.Pending})
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
		a.changes.baseline(bg, a.store, user)
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
	return err
}

// Show is what `/memory` answers in Slack and Discord: each of the user's
// files marked private or shared, fact files in full, the index of their
// episodes; in a channel (channel is its memory name, agent.ChannelKey),
// what is remembered about the channel after them (all of it is used in
// the channel: no marks). user is a person: a channel's memory is never
// shown as someone's own.
func (a *app) Show(user, channel string) (string, error) {
	if err := memory.ValidateUser(user); err != nil {
		return "", err
	}
	var b strings.Builder
	n, err := a.showFiles(&b, user, true, "What I remember about you (%d %s; I use [private] ones only when we talk in private, [shared] ones in channels too):\n")
	switch {
	case err != nil:
		return "", err
	case n == 0:
		b.WriteString("I don't remember anything about you yet.\n")
	default:
		b.WriteString("\nTo let me use one of your files in channels: /memory share <path>; to keep it private again: /memory private <path>. " +
			"To delete a file: /memory forget <path>. To delete everything: /memory forget all.\n")
	}
	if channel != "" {
		if err := agent.ValidateChannel(channel); err != nil {
			return "", err
		}
		b.WriteString("\n")
		m, err := a.showFiles(&b, channel, false, "What I remember about this channel (%d %s, used with everyone who talks to me here):\n")
		if err != nil {
			return "", err
		}
		if m == 0 {
			b.WriteString("I don't remember anything about this channel yet.\n")
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// showFiles writes owner's files to b under the heading (a format taking
// the count and "file" or "files"), each an index line (marked [private]
// or [shared] when tag) with a fact file's text below it; nothing when
// there are none. It returns how many there are.
func (a *app) showFiles(b *strings.Builder, owner string, tag bool, heading string) (int, error) {
	u, files, err := wiring.Files(a.store, owner)
	if err != nil || len(files) == 0 {
		return 0, err
	}
	sess := u.NewSession()
	fmt.Fprintf(b, heading, len(files), map[bool]string{true: "file", false: "files"}[len(files) == 1])
	for _, f := range files {
		line := memory.IndexLine(f)
		if tag {
			line = "- " + visibilityTag(f) + " " + strings.TrimPrefix(line, "- ")
		}
		b.WriteString("\n" + line + "\n")
		if k, _ := memory.ParsePath(f.Path); k == memory.KindFact {
			if d, err := sess.Load(f.Path); err == nil {
				b.WriteString("```\n" + strings.TrimRight(d.Text, "\n") + "\n```\n")
			}
		}
	}
	return len(files), nil
}

// visibilityTag is how /memory marks a file: [shared] when its header
// says so (memory.IsShared, read with the index), else [private].
func visibilityTag(f memory.FileInfo) string {
	if f.Shared {
		return "[shared]"
	}
	return "[private]"
}

// SetShared marks one of user's memory files shared with channels or
// private (/memory share, /memory private in Slack, Discord and the
// chat). user is a person, as the platform names them: a channel's files
// are an admin's to change. The change is a write of the store: the
// metrics count it and the history keeps it under the person's name. A
// missing file is an error wrapping fs.ErrNotExist, as core.Memory asks.
func (a *app) SetShared(user, path string, shared bool) (changed bool, err error) {
	u, err := a.store.User(user)
	if err == nil && agent.IsChannel(user) {
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

// forgetter drops one kind of pending work about a user that would
// otherwise bring forgotten memory back (turns waiting to be reflected,
// queued messages) or quote it (short-term history), and says how many
// items it dropped.
type forgetter struct {
	// noun and rest name the items in the report: "turn", " waiting to be
	// reflected" gives "2 turns waiting to be reflected".
	noun, rest string
	forget     func(ctx context.Context, user string) (int, error)
	// verb says what was done to the items; "": "dropped".
	verb string
}

// addForgetter makes every later forget also run f (before the files are
// deleted). Call it before the front end starts taking messages.
func (a *app) addForgetter(f forgetter) { a.forgetters = append(a.forgetters, f) }

// allForgetters are what a forget of name drops first. A person's: the
// added ones (queued messages: dropped before they become turns), then
// the reflector's and the agent's. A channel's memory has no pending work
// of its own, but turns said there still name it: they are detached, so
// that they are not reflected back into the forgotten memory.
func (a *app) allForgetters(name string) []forgetter {
	if agent.IsChannel(name) {
		return []forgetter{channelForgetter(a.refl.ForgetChannel)}
	}
	return append(append([]forgetter(nil), a.forgetters...),
		forgetter{noun: "turn", rest: " waiting to be reflected", forget: a.refl.Forget},
		forgetter{noun: "turn", rest: " of short-term history", forget: func(_ context.Context, user string) (int, error) { return a.agent.ForgetUser(user), nil }},
	)
}

// dropped is what a forget dropped besides the files, in forgetter order.
type dropped []droppedItem

type droppedItem struct {
	f forgetter
	n int
}

// channelForgetter detaches a forgotten channel from the turns said there.
func channelForgetter(detach func(ctx context.Context, key string) (int, error)) forgetter {
	return forgetter{noun: "turn", rest: " waiting to be reflected", forget: detach, verb: "detached the channel from"}
}

// String is "dropped 2 turns waiting to be reflected, 1 turn of
// short-term history": the kinds with something dropped (each verb said
// once), or "" when none had.
func (d dropped) String() string {
	var b strings.Builder
	last := ""
	for _, it := range d {
		if it.n == 0 {
			continue
		}
		verb := cmp.Or(it.f.verb, "dropped")
		switch {
		case b.Len() == 0:
			b.WriteString(verb + " ")
		case verb != last:
			b.WriteString("; " + verb + " ")
		default:
			b.WriteString(", ")
		}
		last = verb
		fmt.Fprintf(&b, "%d %s%s%s", it.n, it.f.noun, plural(it.n), it.f.rest)
	}
	return b.String()
}

// runForgetters runs fs for user in order and stops at the first error.
func runForgetters(ctx context.Context, fs []forgetter, user string) (dropped, error) {
	var d dropped
	for _, f := range fs {
		n, err := f.forget(ctx, user)
		d = append(d, droppedItem{f, n})
		if err != nil {
			return d, fmt.Errorf("forget %s: could not drop the %ss%s: %w", user, f.noun, f.rest, err)
		}
	}
	return d, nil
}

// Forget deletes one memory file (or, with path "", all of the user's
// memory), for /memory forget in Slack and Discord. See forget.
func (a *app) Forget(user, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), forgetWait)
	defer cancel()
	_, err := a.forget(ctx, user, path, false)
	return err
}

// forget drops the user's pending work first (every forgetter), so that
// what is forgotten is not written back from it, then deletes the file or
// the whole folder. It returns what was dropped; a missing file or folder
// is an error wrapping memory.ErrNotFound, after the pending work is gone.
// user may be a channel's memory (for mnemo memory forget): then only its
// files and history go. A user's forget never touches a channel's memory:
// channels' folders and histories are named apart ('#', agent.ChannelKey).
func (a *app) forget(ctx context.Context, user, path string, keepHistory bool) (dropped, error) {
	u, err := a.store.User(user) // checks the name before anything is dropped
	if err != nil {
		return nil, err
	}
	d, err := runForgetters(ctx, a.allForgetters(user), user)
	if err != nil {
		return d, err
	}
	if path == "" {
		err = u.RemoveAll()
	} else {
		err = u.Remove(path)
	}
	if err == nil && !keepHistory {
		err = forgetHistory(a.hist, user, path)
	}
	if err == nil && path == "" && !agent.IsChannel(user) {
		err = forgetChatHistory(a.cfg, user)
	}
	if err == nil {
		a.env.logger.Info("memory: forgotten at the user's request", "user", user, "path", path, "dropped", d.String(), "history_kept", keepHistory)
	}
	return d, err
}
