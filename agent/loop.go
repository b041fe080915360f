package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/agent/llm"
)

// Model is what the loop needs from a model: llm.Model, which a provider
// (llm/openai) implements.
type Model = llm.Model

// DefaultMaxSteps bounds the model calls of one loop.
const DefaultMaxSteps = 8

// maxRepeats is how often the very same call (name and arguments) may run
// in one loop; one more means the model is stuck.
const maxRepeats = 2

// LoopConfig configures one run of the tool loop.
type LoopConfig struct {
	Model     Model
	ModelName string
	Tools     []mnemo.Tool
	MaxSteps  int          // model calls at most; default DefaultMaxSteps
	Logger    *slog.Logger // nil: discard
	// Nudge is the user message that asks for a final answer without tools
	// when the step cap or a repeated call stops the loop.
	Nudge string
	// OnText, when set, streams the model's replies (llm.Stream): it gets
	// each piece of visible text of model call step (1, 2, ...) as it
	// arrives, the words written before tool calls too. An error it
	// returns stops that call, and the loop, with that error.
	OnText func(step int, delta string) error
	// OnStatus, when set, is told what the loop does between model calls
	// (toolStatus: "reading facts/user.md…") and "" when the tools of a
	// step are done.
	OnStatus func(status string)
}

// Stop reasons of a loop that did not end with the model's own answer.
const (
	StopMaxSteps = "max_steps"
	StopRepeated = "repeated_call"
)

// ToolCallRecord is one tool call the loop ran.
type ToolCallRecord struct {
	Name      string
	Arguments string
	Result    string
	Failed    bool
}

// LoopResult is what a loop produced.
type LoopResult struct {
	Text     string        // the final answer
	Messages []llm.Message // every message, input included
	Steps    int           // model calls made
	Calls    []ToolCallRecord
	Stopped  string // "", StopMaxSteps or StopRepeated
	Tokens   int    // prompt + completion tokens of the model calls, as the server reported them
}

const defaultNudge = "Stop calling tools now and give your final answer with what you have."

// RunLoop runs the reason → act loop: it calls the model with the messages
// and tools, runs the tool calls it asks for, feeds the results back, and
// ends when the model answers in text. A bad tool call (unknown tool,
// malformed arguments, a tool error or panic) goes back to the model as the
// tool result. When the step cap or a repeated identical call stops the
// loop, one more call without tools asks for the answer. Only a failed model
// call is returned as an error (with whatever result there is so far).
func RunLoop(ctx context.Context, cfg LoopConfig, messages []llm.Message) (LoopResult, error) {
	cfg.MaxSteps = defaults.Positive(cfg.MaxSteps, DefaultMaxSteps)
	cfg.Logger = defaults.Logger(cfg.Logger)
	if cfg.Nudge == "" {
		cfg.Nudge = defaultNudge
	}
	// Room for the reply: a message answered at once (the usual case)
	// appends it without copying the conversation again.
	res := LoopResult{Messages: append(make([]llm.Message, 0, len(messages)+1), messages...)}
	byName := make(map[string]mnemo.Tool, len(cfg.Tools))
	var defs []llm.ToolDef
	for _, t := range cfg.Tools {
		byName[t.Name] = t
		defs = append(defs, llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	seen := map[string]int{}
	for res.Steps < cfg.MaxSteps {
		res.Steps++
		resp, err := ask(ctx, cfg, res.Steps, llm.Request{Model: cfg.ModelName, Messages: res.Messages, Tools: defs})
		res.Tokens += tokens(resp.Usage)
		truncated := errors.Is(err, llm.ErrTruncated)
		if err != nil && !truncated {
			return res, err
		}
		msg := resp.Message
		if resp.FinishReason == llm.FinishLength && len(msg.ToolCalls) > 0 {
			// Calls cut off at the token limit are never run, even when the
			// Model did not remove them itself (llm/openai does).
			cfg.Logger.Info("agent: dropped tool calls cut off at the token limit", "calls", len(msg.ToolCalls))
			msg.ToolCalls, truncated = nil, true
		}
		if len(msg.ToolCalls) == 0 {
			if truncated {
				// The cut-off tool calls were dropped: say so, and let the model try again.
				res.Messages = append(res.Messages, assistantText(msg.Content),
					llm.Message{Role: llm.RoleUser, Content: "Your last reply was cut off at the output limit and its tool calls were not run. Use shorter tool arguments, or answer directly."})
				continue
			}
			res.Text = msg.Content
			res.Messages = append(res.Messages, assistantText(msg.Content))
			return res, nil
		}
		res.Messages = append(res.Messages, llm.Message{Role: llm.RoleAssistant, Content: msg.Content, ToolCalls: msg.ToolCalls})
		repeated := false
		for _, call := range msg.ToolCalls {
			key := call.Name + "\x00" + canonicalJSON(call.Arguments)
			seen[key]++
			rec := ToolCallRecord{Name: call.Name, Arguments: call.Arguments}
			if seen[key] > maxRepeats {
				repeated = true
				rec.Result, rec.Failed = "error: this exact call was already made and answered; use the earlier result", true
			} else {
				if cfg.OnStatus != nil {
					cfg.OnStatus(toolStatus(call))
				}
				rec.Result, rec.Failed = runTool(ctx, byName, call, cfg.Logger)
				if rec.Failed {
					// A failure (a conflict, a missing file) is news: making
					// another call again after it (reading the file anew) is
					// not being stuck. Repeating the failed call itself is.
					for k := range seen {
						if k != key {
							delete(seen, k)
						}
					}
				}
			}
			res.Calls = append(res.Calls, rec)
			res.Messages = append(res.Messages, llm.ToolResult(call, rec.Result))
		}
		if cfg.OnStatus != nil {
			cfg.OnStatus("")
		}
		if repeated {
			res.Stopped = StopRepeated
			break
		}
	}
	if res.Stopped == "" {
		res.Stopped = StopMaxSteps
	}
	cfg.Logger.Warn("agent: tool loop stopped; asking for a final answer", "reason", res.Stopped, "steps", res.Steps)
	res.Messages = append(res.Messages, llm.Message{Role: llm.RoleUser, Content: cfg.Nudge})
	res.Steps++
	resp, err := ask(ctx, cfg, res.Steps, llm.Request{Model: cfg.ModelName, Messages: res.Messages})
	res.Tokens += tokens(resp.Usage)
	if err != nil && !errors.Is(err, llm.ErrTruncated) {
		return res, err
	}
	res.Text = resp.Message.Content
	res.Messages = append(res.Messages, assistantText(res.Text))
	return res, nil
}

// ask makes model call step: streamed to cfg.OnText when it is set.
func ask(ctx context.Context, cfg LoopConfig, step int, req llm.Request) (llm.Response, error) {
	if cfg.OnText == nil {
		return cfg.Model.Complete(ctx, req)
	}
	return llm.Stream(ctx, cfg.Model, req, func(delta string) error { return cfg.OnText(step, delta) })
}

// tokens is what one model call cost (Reply.Tokens, the budgets): prompt
// plus completion, whatever TotalTokens says.
func tokens(u llm.Usage) int { return u.PromptTokens + u.CompletionTokens }

// assistantText never sends an empty content: the wire omits it and some
// servers then reject the message.
func assistantText(s string) llm.Message {
	if strings.TrimSpace(s) == "" {
		s = "(no answer)"
	}
	return llm.Message{Role: llm.RoleAssistant, Content: s}
}

// canonicalJSON makes {"a":1, "b":2} and {"b":2,"a":1} the same call.
// Empty arguments are the same as {}.
func canonicalJSON(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v) // re-encoding decoded JSON cannot fail
	return string(b)
}

// runTool runs one call and turns every failure into a result text.
func runTool(ctx context.Context, tools map[string]mnemo.Tool, call llm.ToolCall, log *slog.Logger) (result string, failed bool) {
	name := call.Name
	t, ok := tools[name]
	if !ok {
		names := make([]string, 0, len(tools))
		for n := range tools {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Sprintf("error: unknown tool %q; the tools are: %s", name, strings.Join(names, ", ")), true
	}
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return fmt.Sprintf("error: the arguments of %s are not a valid JSON object; send one JSON object matching its schema: %s", name, t.Parameters), true
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("agent: tool panicked", "tool", name, "panic", r, "stack", string(debug.Stack()))
			result, failed = fmt.Sprintf("error: %s failed unexpectedly; try something else", name), true
		}
	}()
	out, err := t.Call(ctx, json.RawMessage(args))
	if err != nil {
		log.Info("agent: tool error", "tool", name, "err", err)
		return "error: " + err.Error(), true
	}
	if out == "" {
		out = "(no output)"
	}
	return out, false
}
