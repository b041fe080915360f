package reflector

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm"
)

// Kinds of record lines in a user's journal.
const (
	kindRun    = "run"    // a run began over the first Turns pending turns
	kindStep   = "step"   // a model reply with tool calls, before they ran
	kindIntent = "intent" // a change to Path is about to make version After
	kindDone   = "done"   // tool call Call finished its change with Result
	// kindReflected: the run succeeded; its records and the first Turns
	// pending turns are done.
	kindReflected = "reflected"
)

// record is one journal line about the run in progress:
//
//	{"kind":"run","run":"4f…","turns":3}
//	{"kind":"step","run":"4f…","step":1,"message":{"role":"assistant","tool_calls":[…]}}
//	{"kind":"intent","run":"4f…","call":2,"path":"facts/user.md","change":"write","after":"120:9a…"}
//	{"kind":"done","run":"4f…","call":2,"result":"{\"success\":true}"}
//
// Each is fsynced before what it vouches for happens: a step before its
// tools run, an intent before its rename. So after a crash the run is
// resumed: recorded replies are replayed instead of asking the model again
// (which could answer differently), a call with a done record is not run
// again, and a call with only an intent is run again only when the file is
// not already at the version it was making.
type record struct {
	Kind    string       `json:"kind"`
	Run     string       `json:"run"`
	Turns   int          `json:"turns,omitempty"`
	Step    int          `json:"step,omitempty"`
	Message *stepMessage `json:"message,omitempty"`
	Call    int          `json:"call,omitempty"`
	Path    string       `json:"path,omitempty"`
	Change  string       `json:"change,omitempty"` // of an intent: create, write, patch or append
	After   string       `json:"after,omitempty"`
	Result  string       `json:"result,omitempty"`
}

// stepMessage is a model reply as journaled: the chat completions message
// layout, which journals written before the core had types of its own used
// too, so they resume.
type stepMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []stepToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type stepToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	} `json:"function"`
}

func toStep(m llm.Message) *stepMessage {
	s := &stepMessage{Role: string(m.Role), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		c := stepToolCall{ID: tc.ID, Type: "function"}
		c.Function.Name, c.Function.Arguments = tc.Name, tc.Arguments
		s.ToolCalls = append(s.ToolCalls, c)
	}
	return s
}

func (s *stepMessage) message() llm.Message {
	m := llm.Message{Role: llm.Role(s.Role), Content: s.Content, Name: s.Name, ToolCallID: s.ToolCallID}
	for _, tc := range s.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return m
}

// parseRecord decodes and checks one record line.
func parseRecord(line []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		return record{}, err
	}
	bad := func(what string) (record, error) { return record{}, fmt.Errorf("bad %s record: %s", rec.Kind, what) }
	switch {
	case rec.Run == "":
		return bad("no run id")
	case (rec.Kind == kindRun || rec.Kind == kindReflected) && rec.Turns < 1:
		return bad("no turns")
	case rec.Kind == kindStep && (rec.Step < 1 || rec.Message == nil || len(rec.Message.ToolCalls) == 0):
		return bad("no step number or tool calls")
	case (rec.Kind == kindIntent || rec.Kind == kindDone) && rec.Call < 1:
		return bad("no call number")
	case rec.Kind == kindIntent && rec.Path == "":
		return bad("no path")
	case rec.Kind != kindRun && rec.Kind != kindStep && rec.Kind != kindIntent && rec.Kind != kindDone && rec.Kind != kindReflected:
		return record{}, fmt.Errorf("unknown record kind %q", rec.Kind)
	}
	return rec, nil
}

// runLog is a run as far as the journal knows it.
type runLog struct {
	id        string
	turns     int  // the run covers the first turns pending turns
	journaled bool // its run line is in the journal
	steps     []llm.Message
	intents   map[int]record
	done      map[int]string
	// commits are the changes this process saw the run make, in order
	// (not journaled: told to Config.OnExplicit).
	commits []Commit
}

func newRunLog(turns int) *runLog {
	return &runLog{id: rand.Text(), turns: turns, intents: map[int]record{}, done: map[int]string{}}
}

// records renders the run as journal lines; nil or not yet journaled: none.
func (l *runLog) records() []record {
	if l == nil || !l.journaled {
		return nil
	}
	out := []record{{Kind: kindRun, Run: l.id, Turns: l.turns}}
	for i := range l.steps {
		out = append(out, record{Kind: kindStep, Run: l.id, Step: i + 1, Message: toStep(l.steps[i])})
	}
	for n := 1; len(out) < 1+len(l.steps)+len(l.intents)+len(l.done); n++ {
		if it, ok := l.intents[n]; ok {
			out = append(out, it)
		}
		if res, ok := l.done[n]; ok {
			out = append(out, record{Kind: kindDone, Run: l.id, Call: n, Result: res})
		}
	}
	return out
}

// assembleRun rebuilds the run of a journal from its records; pending is
// the number of turns read. A record set that does not describe one run
// over existing turns is dropped, with the reason.
func assembleRun(recs []record, pending int) (*runLog, string) {
	if len(recs) == 0 {
		return nil, ""
	}
	head := recs[0]
	if head.Kind != kindRun {
		return nil, "journal records without their run line"
	}
	if head.Turns > pending {
		return nil, fmt.Sprintf("the run covers %d turns but %d are journaled", head.Turns, pending)
	}
	l := &runLog{id: head.Run, turns: head.Turns, journaled: true, intents: map[int]record{}, done: map[int]string{}}
	for _, rec := range recs[1:] {
		if rec.Run != l.id || rec.Kind == kindRun {
			return nil, "records of two runs"
		}
		switch rec.Kind {
		case kindStep:
			if rec.Step != len(l.steps)+1 {
				return nil, fmt.Sprintf("step %d recorded after step %d", rec.Step, len(l.steps))
			}
			l.steps = append(l.steps, rec.Message.message())
		case kindIntent:
			l.intents[rec.Call] = rec
		case kindDone:
			l.done[rec.Call] = rec.Result
		}
	}
	return l, ""
}

// errForgotten ends a run whose user's memory was forgotten meanwhile.
var errForgotten = errors.New("the user's memory was forgotten during the run")

// execution is one go at a run: the model and the tools wrapped so that
// what the run does is journaled before it happens, and what it did before
// (an earlier go cut short) is not done again.
type execution struct {
	r     *Reflector
	u     *userState
	run   *runLog
	model agent.Model

	calls      int // model calls made, replayed ones included
	seq        int // tool calls made
	cur        int // the tool call running
	committed  bool
	storageErr error    // the first disk failure a tool met
	changed    []string // paths changed, in order
	replayed   int      // tool calls answered from the journal
}

// journal appends rec to the user's file, unless the run was forgotten.
func (x *execution) journal(rec record) error {
	return x.u.journal(x.run, rec)
}

// Complete replays the recorded replies in order, then asks the model and
// journals each reply that calls tools before the loop runs them.
func (x *execution) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	x.calls++
	if x.calls <= len(x.run.steps) {
		return llm.Response{Message: x.run.steps[x.calls-1], FinishReason: llm.FinishToolCalls}, nil
	}
	resp, err := x.model.Complete(ctx, req)
	if err != nil || len(resp.Message.ToolCalls) == 0 || resp.FinishReason == llm.FinishLength {
		return resp, err // nothing the loop will run
	}
	msg := resp.Message
	if jerr := x.journal(record{Kind: kindStep, Run: x.run.id, Step: len(x.run.steps) + 1, Message: toStep(msg)}); jerr != nil {
		return resp, jerr
	}
	x.run.steps = append(x.run.steps, msg)
	return resp, nil
}

// wrap makes t's calls numbered, answered from the journal when an earlier
// go made them, and told apart when they meet a disk failure.
func (x *execution) wrap(t mnemo.Tool, version func(string) (string, error)) mnemo.Tool {
	inner := t.Call
	t.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
		x.seq++
		n := x.seq
		if res, ok := x.run.done[n]; ok {
			x.replayed++
			x.changed = append(x.changed, x.run.intents[n].Path)
			return res, nil
		}
		if it, ok := x.run.intents[n]; ok && version != nil {
			if cur, err := version(it.Path); err == nil && cur == it.After {
				// Made before the crash, not yet marked done: do not make it again.
				x.replayed++
				return x.finish(n, it.Path, `{"success":true}`), nil
			}
		}
		x.cur, x.committed = n, false
		res, err := inner(ctx, args)
		if errors.Is(err, mnemo.ErrStorage) && x.storageErr == nil {
			x.storageErr = fmt.Errorf("%s: %w", t.Name, err)
		}
		if err == nil && x.committed {
			res = x.finish(n, x.run.intents[n].Path, res)
		}
		return res, err
	}
	return t
}

// finish records that call n changed path with result res.
func (x *execution) finish(n int, path, res string) string {
	x.changed = append(x.changed, path)
	if err := x.journal(record{Kind: kindDone, Run: x.run.id, Call: n, Result: res}); err != nil {
		// The change is made and its intent journaled: a resumed run still
		// sees it. The run fails, so it is resumed rather than trusted.
		if x.storageErr == nil {
			x.storageErr = err
		}
		return res
	}
	x.run.done[n] = res
	return res
}

// commit is the store's CommitHook: the intent of the running call is made
// durable before the store renames the new text into place.
func (x *execution) commit(c Commit) error {
	rec := record{Kind: kindIntent, Run: x.run.id, Call: x.cur, Path: c.Path, Change: c.Kind, After: c.After}
	if err := x.journal(rec); err != nil {
		if errors.Is(err, errForgotten) {
			return err
		}
		return fmt.Errorf("%w: could not journal the change first: %w", mnemo.ErrStorage, err)
	}
	x.run.intents[x.cur] = rec
	x.run.commits = append(x.run.commits, c)
	x.committed = true
	return nil
}
