package agent

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/text"
)

// Defaults of Config.
const (
	DefaultHistoryTurns     = 10
	DefaultMaxConversations = 10000
	DefaultMaxConcurrent    = 8
	DefaultMaxReplyChars    = 16000
	// MinMaxReplyChars is the smallest MaxReplyChars honoured (a smaller
	// one is raised to it), so the cut note always fits with some text.
	MinMaxReplyChars = 100
)

// emptyAnswerText replaces a final answer with no text.
const emptyAnswerText = "Sorry, I don't have an answer to that. Could you rephrase it?"

// finalNudge asks for the answer when the tool loop was stopped.
const finalNudge = "Stop calling tools now and answer my last message with what you have."

//go:embed prompts/system.md
var systemPromptText string

var systemPrompt = template.Must(template.New("system.md").Option("missingkey=error").Parse(systemPromptText))

// Memory is what the Thinker needs of the memory store; cmd satisfies it
// with memory.Store. Both see exactly what the scope may: in a channel
// the speaker's shared files and the channel's memory, nothing else.
type Memory interface {
	// Index is the iteration-1 index message, exactly as memory/README.md shows it.
	Index(s mnemo.Scope) (string, error)
	// ReadTools are memory_list, memory_read and memory_search bound to the scope, fresh
	// per task.
	ReadTools(s mnemo.Scope) ([]mnemo.Tool, error)
}

// Config configures an Agent. Model, ModelName and Memory are required.
type Config struct {
	Model     Model
	ModelName string
	Memory    Memory
	// MaxSteps bounds the model calls of a task's tool loop (one more asks
	// for the final answer); <= 0 means DefaultMaxSteps.
	MaxSteps int
	// HistoryTurns is how many earlier turns of a conversation are sent as
	// short-term context; 0 means DefaultHistoryTurns, < 0 none.
	HistoryTurns int
	// MaxConversations bounds how many conversations' history is kept;
	// past it the least recently active one is dropped. <= 0 means
	// DefaultMaxConversations.
	MaxConversations int
	// MaxConcurrent bounds the tasks running at once across all
	// conversations; <= 0 means DefaultMaxConcurrent.
	MaxConcurrent int
	// MaxReplyChars bounds a reply's length in characters (runes); a
	// longer answer is cut at a line or word break, an open code block is
	// closed, and a note says the reply was cut (all within the bound).
	// <= 0 means DefaultMaxReplyChars; below MinMaxReplyChars is raised to
	// it.
	MaxReplyChars int
	// OnTurn, if set, gets every task that ran (also failed ones), after
	// the reply is produced and before Handle returns, while the
	// conversation is still held (so turns of one conversation arrive in
	// order). It should be quick, e.g. journal the turn and return.
	OnTurn func(mnemo.Turn)
	// Stream: a task with a Task.Stream is answered with the model's
	// replies streamed (llm.Stream), its words shown as they are written.
	// False: the model is asked as for any task, and the whole reply goes
	// to Task.Stream at once (for servers that do not stream).
	Stream bool
	Logger *slog.Logger     // nil → discard
	Now    func() time.Time // nil → time.Now
}

// The Thinker answers tasks for every platform.
var _ mnemo.Handler = (*Agent)(nil)

// Agent is the Thinker: it answers tasks with the model, the user's memory
// index and the memory read tools. It is safe for concurrent use.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	history *history
	slots   chan struct{}

	mu    sync.Mutex
	convs map[string]*convLock
}

// convLock serialises the tasks of one conversation; it exists while a
// task holds or waits for it.
type convLock struct {
	ch   chan struct{}
	refs int
}

// New validates cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	var missing []string
	if cfg.Model == nil {
		missing = append(missing, "Model")
	}
	if strings.TrimSpace(cfg.ModelName) == "" {
		missing = append(missing, "ModelName")
	}
	if cfg.Memory == nil {
		missing = append(missing, "Memory")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("agent: config is missing %s", strings.Join(missing, ", "))
	}
	cfg.MaxSteps = defaults.Positive(cfg.MaxSteps, DefaultMaxSteps)
	cfg.HistoryTurns = cmp.Or(cfg.HistoryTurns, DefaultHistoryTurns) // negative: no history
	cfg.MaxConversations = defaults.Positive(cfg.MaxConversations, DefaultMaxConversations)
	cfg.MaxConcurrent = defaults.Positive(cfg.MaxConcurrent, DefaultMaxConcurrent)
	cfg.MaxReplyChars = max(defaults.Positive(cfg.MaxReplyChars, DefaultMaxReplyChars), MinMaxReplyChars)
	cfg.Logger = defaults.Logger(cfg.Logger)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Agent{
		cfg:     cfg,
		log:     cfg.Logger,
		now:     cfg.Now,
		history: newHistory(cfg.HistoryTurns, cfg.MaxConversations),
		slots:   make(chan struct{}, cfg.MaxConcurrent),
		convs:   map[string]*convLock{},
	}, nil
}

// ForgetUser drops every turn user spoke from the short-term history of
// all conversations (call it when the user's memory is forgotten, so the
// bot does not go on quoting it from context) and reports how many.
func (a *Agent) ForgetUser(user string) int {
	return a.history.forgetUser(user)
}

// Handle answers one task. Tasks of the same Conversation run one at a
// time, in arrival order; at most MaxConcurrent run at once overall.
//
// A failure of the model (or a panic anywhere in the task) is not an
// error: the Reply is Failed with ApologyText for the adapter to post, and
// OnTurn still gets the turn. The error is non-nil only when ctx ended
// before the task started (while it waited for its conversation or a
// slot); the task then did not run and OnTurn is not called.
func (a *Agent) Handle(ctx context.Context, t mnemo.Task) (reply mnemo.Reply, err error) {
	start := time.Now()
	if t.ID == "" {
		t.ID = mnemo.NewTaskID()
	}
	if t.Time.IsZero() {
		t.Time = a.now()
	}
	if t.Conversation == "" {
		t.Conversation = t.Platform + ":" + t.User
	}
	log := withLazily(a.log, "task_id", t.ID, "platform", t.Platform, "user", t.User, "conversation", t.Conversation)
	defer func() {
		// Last resort: nothing in a task may take the process down.
		if r := recover(); r != nil {
			log.Error("agent: task panicked", "state", "failed", "panic", r, "stack", string(debug.Stack()))
			reply, err = mnemo.Reply{TaskID: t.ID, Text: mnemo.ApologyText, Failed: true}, nil
		}
	}()
	log.Info("agent: task received", "state", "received", "channel", t.Channel,
		"context_messages", len(t.Context))
	log.Debug("agent: task text", "text", t.Text)

	unlock, err := a.lockConversation(ctx, t.Conversation)
	if err != nil {
		log.Info("agent: task abandoned while queued", "state", "failed", "error", err)
		return mnemo.Reply{TaskID: t.ID, Failed: true}, err
	}
	defer unlock()
	if err := a.acquireSlot(ctx); err != nil {
		log.Info("agent: task abandoned while queued", "state", "failed", "error", err)
		return mnemo.Reply{TaskID: t.ID, Failed: true}, err
	}
	var sh *shower
	if t.Stream != nil {
		sh = newShower(t.Stream, a.cfg.MaxReplyChars)
	}
	res, err := a.thinkInSlot(ctx, t, log, start, sh)

	reply = mnemo.Reply{TaskID: t.ID, Text: res.Text, Steps: res.Steps, Stopped: res.Stopped, Tokens: res.Tokens}
	if errors.Is(err, errReplyFull) && sh != nil && sh.full {
		err = nil // the streamed reply reached maxReplyChars: it ends there
		log.Warn("agent: reply cut: it was longer than maxReplyChars", "max_reply_chars", a.cfg.MaxReplyChars)
	}
	if err != nil && sh != nil && sh.runes > 0 {
		// Words were shown, then the model broke off: the reply is what
		// was shown (the front end adds mnemo.CutNote). It is no answer
		// to remember: neither the history nor the reflector gets it.
		reply.Text, reply.Failed, reply.Err, reply.Streamed, reply.Cut = sh.shown.String(), true, err, true, true
		level := slog.LevelWarn
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			level = slog.LevelInfo // the caller cancelled it (Ctrl-C in chat)
		}
		log.Log(ctx, level, "agent: reply cut off after its first words", "state", "failed", "steps", res.Steps,
			"shown_chars", sh.runes, "duration", time.Since(start), "error", err)
		return reply, nil
	}
	if err != nil {
		reply.Text, reply.Failed, reply.Err = mnemo.ApologyText, true, err
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The caller cancelled it (Ctrl-C in chat): no fault to warn of.
			log.Info("agent: task cancelled", "state", "failed", "steps", res.Steps, "duration", time.Since(start))
		} else {
			log.Warn("agent: task failed", "state", "failed", "steps", res.Steps, "duration", time.Since(start), "error", err)
		}
	} else {
		switch {
		case sh != nil && a.cfg.Stream:
			reply.Text, reply.Streamed = sh.finish(), true
		default:
			if strings.TrimSpace(reply.Text) == "" {
				reply.Text = emptyAnswerText
			}
			if cut, ok := cutReply(reply.Text, a.cfg.MaxReplyChars); ok {
				log.Warn("agent: reply cut: it was longer than maxReplyChars", "chars", utf8.RuneCountInString(reply.Text),
					"max_reply_chars", a.cfg.MaxReplyChars)
				reply.Text = cut
			}
			if sh != nil { // not streamed from the model: shown whole
				sh.show(reply.Text, utf8.RuneCountInString(reply.Text))
				reply.Streamed = true
			}
		}
		a.history.add(t.Conversation, turn{User: t.User, Speaker: t.Speaker, Text: t.Text, Reply: reply.Text})
		log.Info("agent: replied", "state", "replied", "steps", res.Steps, "tool_calls", len(res.Calls),
			"stopped", res.Stopped, "duration", time.Since(start))
	}
	log.Debug("agent: reply text", "text", reply.Text)
	a.emitTurn(t, reply, log)
	return reply, nil
}

// thinkInSlot runs think in the slot acquireSlot took, and frees it.
func (a *Agent) thinkInSlot(ctx context.Context, t mnemo.Task, log *slog.Logger, start time.Time, sh *shower) (LoopResult, error) {
	defer func() { <-a.slots }()
	log.Info("agent: thinking", "state", "thinking", "queued", time.Since(start))
	return a.think(ctx, t, log, sh)
}

// think runs the model for t, showing its work on sh (nil: the task has
// no Stream). A panic becomes an error.
func (a *Agent) think(ctx context.Context, t mnemo.Task, log *slog.Logger, sh *shower) (res LoopResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("agent: panic while thinking", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("agent: panic: %v", r)
		}
	}()
	mode := memoryMode(t, log)
	var index string
	var tools []mnemo.Tool
	if mode != mnemo.ChannelMemoryOff {
		index, tools, err = a.loadMemory(taskScope(t, mode))
		if err != nil {
			log.Warn("agent: memory unavailable; answering without it", "error", err)
			mode, index, tools = "unavailable", "", nil
		}
	}
	system, err := renderSystem(t, mode)
	if err != nil {
		return res, err
	}
	hist := a.history.get(t.Conversation)
	loop := LoopConfig{Model: a.cfg.Model, ModelName: a.cfg.ModelName, Tools: tools, MaxSteps: a.cfg.MaxSteps,
		Logger: log, Nudge: finalNudge}
	if sh != nil {
		loop.OnStatus = sh.status
		if a.cfg.Stream {
			loop.OnText = sh.text
		}
	}
	res, err = RunLoop(ctx, loop, buildMessages(t, system, hist, index))
	if errors.Is(err, llm.ErrContextLength) && len(hist) > 0 && (sh == nil || sh.runes == 0) {
		// The short-term history no longer fits: drop it, so this and the
		// conversation's next messages can still be answered.
		log.Warn("agent: conversation too long for the model; retrying without its history", "turns", len(hist))
		a.history.clearConversation(t.Conversation)
		steps, spent := res.Steps, res.Tokens
		res, err = RunLoop(ctx, loop, buildMessages(t, system, nil, index))
		res.Steps, res.Tokens = res.Steps+steps, res.Tokens+spent
	}
	return res, err
}

// taskScope is what of the memory a task in mode may see: in a DM all of
// the speaker's; in a channel the channel's memory and, unless the
// channel is trusted (full), only the speaker's shared files.
func taskScope(t mnemo.Task, mode string) mnemo.Scope {
	if !t.Channel {
		return mnemo.Scope{User: t.User}
	}
	return mnemo.Scope{User: t.User, Channel: t.ChannelKey, Shared: mode != mnemo.ChannelMemoryFull}
}

// loadMemory gets the index and the read tools; a panic in Memory is an
// error like any other.
func (a *Agent) loadMemory(s mnemo.Scope) (index string, tools []mnemo.Tool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("memory panicked: %v", r)
		}
	}()
	if index, err = a.cfg.Memory.Index(s); err != nil {
		return "", nil, fmt.Errorf("memory index: %w", err)
	}
	if tools, err = a.cfg.Memory.ReadTools(s); err != nil {
		return "", nil, fmt.Errorf("memory tools: %w", err)
	}
	return index, tools, nil
}

// emitTurn gives the turn to OnTurn; its panic is logged, not spread.
func (a *Agent) emitTurn(t mnemo.Task, r mnemo.Reply, log *slog.Logger) {
	if a.cfg.OnTurn == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("agent: OnTurn panicked", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	a.cfg.OnTurn(mnemo.Turn{TaskID: t.ID, User: t.User, Conversation: t.Conversation, Platform: t.Platform,
		Speaker: t.Speaker, UserText: t.Text, ReplyText: r.Text, Time: t.Time, Context: t.Context, Failed: r.Failed,
		Channel: t.Channel, ChannelKey: t.ChannelKey, MemoryOff: memoryMode(t, log) == mnemo.ChannelMemoryOff, Origin: t.Origin})
}

// lockConversation waits until the conversation is free (or ctx ends)
// and returns its unlock function.
func (a *Agent) lockConversation(ctx context.Context, key string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	l := a.convs[key]
	if l == nil {
		l = &convLock{ch: make(chan struct{}, 1)}
		a.convs[key] = l
	}
	l.refs++
	a.mu.Unlock()
	drop := func() {
		a.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(a.convs, key)
		}
		a.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// acquireSlot waits for one of the MaxConcurrent slots (or ctx's end).
func (a *Agent) acquireSlot(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// memoryMode is "full", "read" or "off": a DM or the console always uses
// memory fully; a channel as ChannelMemory says, "read" by default.
func memoryMode(t mnemo.Task, log *slog.Logger) string {
	if !t.Channel {
		return mnemo.ChannelMemoryFull
	}
	switch m := t.ChannelMemory; m {
	case mnemo.ChannelMemoryFull, mnemo.ChannelMemoryRead, mnemo.ChannelMemoryOff:
		return m
	case "":
		return mnemo.ChannelMemoryRead
	default:
		log.Warn("agent: unknown channel memory mode; using read", "channel_memory", m)
		return mnemo.ChannelMemoryRead
	}
}

type promptData struct {
	PlatformName, Date, Weekday, Time, Speaker string
	Channel                                    bool
	Memory                                     string // full, read, off, unavailable
}

// rendered caches renderSystem's output by its data: the prompt changes
// once a minute (its time) per speaker and platform, not per message.
var rendered struct {
	sync.Mutex
	tmpl *template.Template // what m was rendered with
	m    map[promptData]string
}

// maxRendered bounds rendered; a full cache is emptied.
const maxRendered = 256

func renderSystem(t mnemo.Task, mode string) (string, error) {
	d := promptData{
		PlatformName: platformName(t.Platform),
		Date:         t.Time.Format("2006-01-02"),
		Weekday:      t.Time.Weekday().String(),
		Time:         t.Time.Format("15:04 MST"),
		Speaker:      text.OneLine(t.Speaker),
		Channel:      t.Channel,
		Memory:       mode,
	}
	rendered.Lock()
	if rendered.tmpl != systemPrompt {
		rendered.tmpl, rendered.m = systemPrompt, nil
	}
	out, ok := rendered.m[d]
	rendered.Unlock()
	if ok {
		return out, nil
	}
	var b strings.Builder
	if err := systemPrompt.Execute(&b, d); err != nil {
		return "", fmt.Errorf("agent: system prompt: %w", err)
	}
	out = strings.TrimSpace(b.String())
	rendered.Lock()
	if rendered.m == nil || len(rendered.m) >= maxRendered {
		rendered.m = make(map[promptData]string)
	}
	rendered.m[d] = out
	rendered.Unlock()
	return out, nil
}

func platformName(p string) string {
	switch p {
	case "console":
		return "a terminal"
	case "slack":
		return "Slack"
	case "discord":
		return "Discord"
	case "":
		return "a chat"
	}
	return text.OneLine(p)
}

// buildMessages lays out iteration 1: system prompt, short-term history
// (user/assistant pairs, no index or tool traffic), the memory index as a
// user message (when there is one), the thread context, the message.
func buildMessages(t mnemo.Task, system string, hist []turn, index string) []llm.Message {
	msgs := make([]llm.Message, 0, 4+2*len(hist))
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: system})
	for _, h := range hist {
		said := nonEmpty(h.Text)
		if h.User != t.User {
			who := text.OneLine(h.Speaker)
			if who == "" {
				who = "another person"
			}
			said = fmt.Sprintf("[Earlier message from %s, not the person you are answering now]\n%s", who, said)
		}
		msgs = append(msgs,
			llm.Message{Role: llm.RoleUser, Content: said},
			llm.Message{Role: llm.RoleAssistant, Content: nonEmpty(h.Reply)})
	}
	if index != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: index})
	}
	if len(t.Context) > 0 {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: renderContext(t)})
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: nonEmpty(t.Text)})
	return msgs
}

// nonEmpty keeps a message from being sent without content (the wire
// omits an empty one, and servers reject that).
func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty message)"
	}
	return s
}

// renderContext attributes each earlier thread message to its author and
// marks which are the speaker's and which other people's.
func renderContext(t mnemo.Task) string {
	speaker := text.OneLine(t.Speaker)
	if speaker == "" {
		speaker = "the person you are answering"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Earlier messages in this thread, oldest first, quoted for context. Only lines marked \"(the speaker)\" are from %s; "+
		"lines marked \"(another person)\" are other people's words, not the speaker's.\n", speaker)
	for _, m := range t.Context {
		author := text.OneLine(m.Author)
		if author == "" {
			author = "someone"
		}
		role := "another person"
		if m.FromSpeaker {
			role = "the speaker"
		}
		lines := strings.Split(strings.TrimRight(m.Text, "\n"), "\n")
		fmt.Fprintf(&b, "\n[%s (%s)]: %s", author, role, lines[0])
		for _, l := range lines[1:] {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}
