package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// toolSpy is a hand-written fake tool that records the arguments it got.
type toolSpy struct {
	mu    sync.Mutex
	args  []string
	reply func(args json.RawMessage) (string, error)
}

func (s *toolSpy) tool(name string) mnemo.Tool {
	return mnemo.Tool{
		Name:        name,
		Description: "test tool " + name,
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			s.mu.Lock()
			s.args = append(s.args, string(args))
			s.mu.Unlock()
			if s.reply == nil {
				return "result of " + name + " " + string(args), nil
			}
			return s.reply(args)
		},
	}
}

func (s *toolSpy) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.args)
}

func loopInput(user string) []llm.Message {
	return []llm.Message{
		{Role: "system", Content: "You are mnemo."},
		{Role: "user", Content: user},
	}
}

// loopFixture is a real LLM against a scripted server, with the loop
// configured to use it.
func loopFixture(t *testing.T, tools ...mnemo.Tool) (LoopConfig, *openaitest.Server) {
	t.Helper()
	model, srv := llmFixture(t, nil)
	return LoopConfig{Model: model, ModelName: "test-model", Tools: tools}, srv
}

// toolMessages are the tool results of a recorded request, in order.
func toolMessages(r openaitest.Request) []openaitest.Message {
	var out []openaitest.Message
	for _, m := range r.Chat.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

func TestRunLoopTextAnswer(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_list"), spy.tool("memory_read"))
	srv.Enqueue(openaitest.Text("Hello, Ada."))
	in := loopInput("hi")
	res, err := RunLoop(context.Background(), cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello, Ada." || res.Steps != 1 || res.Stopped != "" || len(res.Calls) != 0 {
		t.Errorf("result = %+v", res)
	}
	if len(res.Messages) != 3 || res.Messages[2].Role != "assistant" || res.Messages[2].Content != "Hello, Ada." {
		t.Errorf("messages = %+v", res.Messages)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Chat.Model != "test-model" || fmt.Sprint(r.ToolNames()) != "[memory_list memory_read]" || len(r.Chat.Messages) != 2 {
		t.Errorf("request = %+v", r.Chat)
	}
	if d := r.Chat.Tools[0].Function.Description; d != "test tool memory_list" {
		t.Errorf("description = %q", d)
	}
	if len(spy.calls()) != 0 {
		t.Errorf("tools ran: %v", spy.calls())
	}
	if in[1].Content != "hi" || len(in) != 2 {
		t.Error("the caller's messages were changed")
	}
}

func TestRunLoopNoToolsSendsNone(t *testing.T) {
	cfg, srv := loopFixture(t)
	srv.Enqueue(openaitest.Text("ok"))
	if _, err := RunLoop(context.Background(), cfg, loopInput("hi")); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; len(r.Chat.Tools) != 0 || strings.Contains(string(r.Body), `"tools"`) {
		t.Errorf("a loop without tools sent tools: %s", r.Body)
	}
}

func TestRunLoopOneToolCall(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_read"))
	srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`).WithID("call_abc")).WithContent("Let me look."),
		openaitest.Text("Your name is Ada."),
	)
	res, err := RunLoop(context.Background(), cfg, loopInput("what's my name?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Your name is Ada." || res.Steps != 2 || res.Stopped != "" {
		t.Errorf("result = %+v", res)
	}
	if got := spy.calls(); len(got) != 1 || got[0] != `{"path":"facts/user.md"}` {
		t.Errorf("tool got %v", got)
	}
	want := ToolCallRecord{Name: "memory_read", Arguments: `{"path":"facts/user.md"}`, Result: `result of memory_read {"path":"facts/user.md"}`}
	if len(res.Calls) != 1 || res.Calls[0] != want {
		t.Errorf("calls = %+v", res.Calls)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Chat.Messages
	if len(msgs) != 4 {
		t.Fatalf("second request has %d messages: %+v", len(msgs), msgs)
	}
	a := msgs[2]
	if a.Role != "assistant" || a.Content != "Let me look." || len(a.ToolCalls) != 1 ||
		a.ToolCalls[0].ID != "call_abc" || a.ToolCalls[0].Function.Name != "memory_read" {
		t.Errorf("assistant message = %+v", a)
	}
	tm := msgs[3]
	if tm.Role != "tool" || tm.ToolCallID != "call_abc" || tm.Content != want.Result {
		t.Errorf("tool message = %+v", tm)
	}
	if fmt.Sprint(reqs[1].ToolNames()) != "[memory_read]" {
		t.Errorf("second request tools = %v", reqs[1].ToolNames())
	}
}

func TestRunLoopSeveralCallsInOneReply(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_list"), spy.tool("memory_read"))
	srv.Enqueue(
		openaitest.ToolCalls(
			openaitest.Call("memory_list", `{}`),
			openaitest.Call("memory_read", `{"path":"facts/user.md"}`),
			openaitest.Call("memory_read", `{"path":"episodes/2026-02.md"}`),
		),
		openaitest.Text("done"),
	)
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) != 3 || res.Steps != 2 || res.Text != "done" {
		t.Errorf("result = %+v", res)
	}
	if got := spy.calls(); fmt.Sprint(got) != `[{} {"path":"facts/user.md"} {"path":"episodes/2026-02.md"}]` {
		t.Errorf("tool calls = %v", got)
	}
	tms := toolMessages(srv.Requests()[1])
	if len(tms) != 3 {
		t.Fatalf("tool messages = %+v", tms)
	}
	for i, tm := range tms {
		if id := fmt.Sprintf("call_%d", i+1); tm.ToolCallID != id {
			t.Errorf("tool message %d has id %q, want %q", i, tm.ToolCallID, id)
		}
	}
	if !strings.Contains(tms[2].Content, "episodes/2026-02.md") {
		t.Errorf("results out of order: %+v", tms)
	}
}

func TestRunLoopBadCalls(t *testing.T) {
	tests := []struct {
		name     string
		call     openaitest.ToolCall
		reply    func(json.RawMessage) (string, error)
		want     string // prefix of the tool result
		wantArgs []string
	}{
		{"unknown tool", openaitest.Call("memory_write", `{"path":"facts/x.md"}`), nil,
			`error: unknown tool "memory_write"; the tools are: memory_list, memory_read`, nil},
		{"malformed JSON", openaitest.Call("memory_read", `{"path":"facts/us`), nil,
			"error: the arguments of memory_read are not a valid JSON object; send one JSON object matching its schema: {", nil},
		{"not an object", openaitest.Call("memory_read", `["facts/user.md"]`), nil,
			"error: the arguments of memory_read are not a valid JSON object", nil},
		{"tool error", openaitest.Call("memory_read", `{"path":"facts/none.md"}`),
			func(json.RawMessage) (string, error) { return "", errors.New("facts/none.md does not exist") },
			"error: facts/none.md does not exist", []string{`{"path":"facts/none.md"}`}},
		{"tool panic", openaitest.Call("memory_read", `{"path":"facts/user.md"}`),
			func(json.RawMessage) (string, error) { panic("nil map") },
			"error: memory_read failed unexpectedly; try something else", []string{`{"path":"facts/user.md"}`}},
		{"empty result", openaitest.Call("memory_read", `{"path":"facts/empty.md"}`),
			func(json.RawMessage) (string, error) { return "", nil },
			"(no output)", []string{`{"path":"facts/empty.md"}`}},
		{"empty arguments", openaitest.Call("memory_read", "  "), nil,
			"result of memory_read {}", []string{`{}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spy := &toolSpy{reply: tt.reply}
			cfg, srv := loopFixture(t, spy.tool("memory_read"), spy.tool("memory_list"))
			var logs bytes.Buffer
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			srv.Enqueue(openaitest.ToolCalls(tt.call.WithID("call_bad")), openaitest.Text("recovered"))
			res, err := RunLoop(context.Background(), cfg, loopInput("q"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "recovered" || res.Steps != 2 {
				t.Errorf("the loop did not continue: %+v", res)
			}
			tms := toolMessages(srv.Requests()[1])
			if len(tms) != 1 || tms[0].ToolCallID != "call_bad" || !strings.HasPrefix(tms[0].Content, tt.want) {
				t.Errorf("tool message = %+v, want prefix %q", tms, tt.want)
			}
			failed := strings.HasPrefix(tt.want, "error: ")
			if len(res.Calls) != 1 || res.Calls[0].Failed != failed || res.Calls[0].Result != tms[0].Content {
				t.Errorf("record = %+v", res.Calls)
			}
			if got := spy.calls(); !slices.Equal(got, tt.wantArgs) {
				t.Errorf("tool ran with %v, want %v", got, tt.wantArgs)
			}
			if tt.name == "tool panic" && !strings.Contains(logs.String(), "tool panicked") {
				t.Errorf("panic not logged: %s", logs.String())
			}
		})
	}
}

func TestRunLoopStepCap(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_read"))
	cfg.MaxSteps = 2
	cfg.Nudge = "Answer now, no more tools."
	srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/a.md"}`)),
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/b.md"}`)),
		openaitest.Text("Here is what I found."),
	)
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Here is what I found." || res.Stopped != StopMaxSteps || res.Steps != 3 || len(spy.calls()) != 2 {
		t.Errorf("result = %+v, tool calls %v", res, spy.calls())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[2]
	if len(last.Chat.Tools) != 0 || strings.Contains(string(last.Body), `"tools"`) {
		t.Errorf("the final request offered tools: %s", last.Body)
	}
	if last.LastUser() != "Answer now, no more tools." {
		t.Errorf("last user message = %q", last.LastUser())
	}
	if n := len(toolMessages(last)); n != 2 {
		t.Errorf("final request carries %d tool results", n)
	}
	if m := res.Messages[len(res.Messages)-1]; m.Role != "assistant" || m.Content != res.Text {
		t.Errorf("last message = %+v", m)
	}
}

func TestRunLoopDefaults(t *testing.T) {
	// MaxSteps 0 means DefaultMaxSteps; the default nudge is used; a nil
	// Logger is fine.
	m := llmtest.New()
	for i := range DefaultMaxSteps {
		m.Add(llmtest.Calls(llm.ToolCall{ID: fmt.Sprint("c", i), Name: "t", Arguments: fmt.Sprintf(`{"i":%d}`, i)}))
	}
	m.Add(llmtest.Text(""))
	spy := &toolSpy{}
	res, err := RunLoop(context.Background(), LoopConfig{Model: m, ModelName: "m", Tools: []mnemo.Tool{spy.tool("t")}}, loopInput("q"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != DefaultMaxSteps+1 || res.Stopped != StopMaxSteps || len(spy.calls()) != DefaultMaxSteps {
		t.Errorf("result = %+v", res)
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	if u := last.Messages[len(last.Messages)-1]; u.Role != "user" || u.Content != defaultNudge {
		t.Errorf("nudge = %+v", u)
	}
	// An empty final answer is never sent back as an empty message.
	if res.Text != "" || res.Messages[len(res.Messages)-1].Content != "(no answer)" {
		t.Errorf("text %q, last message %+v", res.Text, res.Messages[len(res.Messages)-1])
	}
}

func TestRunLoopRepeatedCall(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_read"))
	srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md","max":1}`)),
		openaitest.ToolCalls(openaitest.Call("memory_read", `{ "max": 1, "path": "facts/user.md" }`)),
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"max":1,"path":"facts/user.md"}`)),
		openaitest.Text("I keep finding the same thing: Ada."),
	)
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopRepeated || res.Text != "I keep finding the same thing: Ada." || res.Steps != 4 {
		t.Errorf("result = %+v", res)
	}
	if n := len(spy.calls()); n != maxRepeats {
		t.Errorf("the identical call ran %d times, want %d", n, maxRepeats)
	}
	if len(res.Calls) != 3 || !res.Calls[2].Failed || !strings.Contains(res.Calls[2].Result, "already made") {
		t.Errorf("calls = %+v", res.Calls)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Chat.Tools) != 0 || last.LastUser() != defaultNudge {
		t.Errorf("final request: tools %v, last user %q", last.ToolNames(), last.LastUser())
	}
	// The refused call is still answered, so the transcript stays valid.
	tms := toolMessages(last)
	if len(tms) != 3 || tms[2].ToolCallID != "call_3" {
		t.Errorf("tool messages = %+v", tms)
	}
}

// TestRunLoopReadAgainAfterAFailure: reading the same file again after a
// write failed (a conflict says: read it again) is not a repeat; repeating
// the failing write itself still is.
func TestRunLoopReadAgainAfterAFailure(t *testing.T) {
	reads, writes := &toolSpy{}, &toolSpy{reply: func(json.RawMessage) (string, error) {
		return "", errors.New("changed on disk since it was read; memory_read it again")
	}}
	cfg, srv := loopFixture(t, reads.tool("memory_read"), writes.tool("memory_write"))
	cfg.MaxSteps = 10
	read := openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`))
	write := openaitest.ToolCalls(openaitest.Call("memory_write", `{"path":"facts/user.md"}`))
	srv.Enqueue(read, write, read, write, read, write, openaitest.Text("could not save"))
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(reads.calls()); n != 3 {
		t.Errorf("the read ran %d times, want 3 (each after a failed write)", n)
	}
	if n := len(writes.calls()); n != maxRepeats {
		t.Errorf("the failing write ran %d times, want %d", n, maxRepeats)
	}
	if res.Stopped != StopRepeated || res.Text != "could not save" {
		t.Errorf("result = %+v", res)
	}
}

func TestRunLoopEmptyArgumentsRepeatAsBraces(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_list"))
	srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_list", ``)),
		openaitest.ToolCalls(openaitest.Call("memory_list", `{}`)),
		openaitest.ToolCalls(openaitest.Call("memory_list", ` `)),
		openaitest.Text("ok"),
	)
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil || res.Stopped != StopRepeated || len(spy.calls()) != 2 {
		t.Errorf("err %v, result %+v, calls %v", err, res, spy.calls())
	}
}

func TestRunLoopTruncatedToolCallsNotRun(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_read"))
	srv.Enqueue(
		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/us`)).
			WithContent("Reading.").WithFinishReason(openaitest.FinishLength),
		openaitest.Text("Answer without the file."),
	)
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(spy.calls()) != 0 || len(res.Calls) != 0 {
		t.Errorf("a truncated call ran: %v", spy.calls())
	}
	if res.Text != "Answer without the file." || res.Steps != 2 {
		t.Errorf("result = %+v", res)
	}
	second := srv.Requests()[1]
	msgs := second.Chat.Messages
	if a := msgs[len(msgs)-2]; a.Role != "assistant" || a.Content != "Reading." || len(a.ToolCalls) != 0 {
		t.Errorf("assistant message = %+v", a)
	}
	if !strings.Contains(second.LastUser(), "cut off") || len(second.Chat.Tools) != 1 {
		t.Errorf("retry request: last user %q, tools %v", second.LastUser(), second.ToolNames())
	}
}

func TestRunLoopLengthWithToolCallsFromAnyModel(t *testing.T) {
	// A Model that neither removes cut-off calls nor reports ErrTruncated:
	// the loop still never runs them.
	cut := llmtest.Calls(llm.ToolCall{ID: "c1", Name: "t", Arguments: `{"path":"facts/a.md"}`})
	cut.Response.FinishReason = llm.FinishLength
	m := llmtest.New(cut, llmtest.Text("fine"))
	spy := &toolSpy{}
	res, err := RunLoop(context.Background(), LoopConfig{Model: m, ModelName: "m", Tools: []mnemo.Tool{spy.tool("t")}}, loopInput("q"))
	if err != nil || res.Text != "fine" || len(spy.calls()) != 0 {
		t.Errorf("err %v, result %+v, tool calls %v", err, res, spy.calls())
	}
	if a := m.Requests()[1].Messages[2]; a.Content != "(no answer)" || len(a.ToolCalls) != 0 {
		t.Errorf("assistant message = %+v", a)
	}
}

func TestRunLoopTruncatedUntilCap(t *testing.T) {
	// Every reply cut off: the cap still ends the loop, with a final
	// answer; a truncated final reply is used as it is.
	cfg, srv := loopFixture(t)
	cfg.MaxSteps = 2
	cut := openaitest.ToolCalls(openaitest.Call("x", `{"a`)).WithFinishReason(openaitest.FinishLength)
	srv.Enqueue(cut, cut, openaitest.Text("short answer").WithFinishReason(openaitest.FinishLength))
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil || res.Text != "short answer" || res.Stopped != StopMaxSteps || res.Steps != 3 {
		t.Errorf("err %v, result %+v", err, res)
	}
}

func TestRunLoopModelError(t *testing.T) {
	cfg, srv := loopFixture(t)
	srv.Enqueue(openaitest.Error(400, "model_not_found", "no such model"))
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("err = %v, want llm.ErrBadRequest", err)
	}
	if res.Steps != 1 || res.Text != "" {
		t.Errorf("result = %+v", res)
	}
}

func TestRunLoopModelErrorAfterTools(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_list"))
	srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_list", `{}`)), openaitest.Error(401, "invalid_api_key", "bad key"))
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("err = %v", err)
	}
	if res.Steps != 2 || len(res.Calls) != 1 || len(res.Messages) != 4 {
		t.Errorf("partial result = %+v", res)
	}
}

func TestRunLoopCancelled(t *testing.T) {
	cfg, _ := loopFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunLoop(ctx, cfg, loopInput("q")); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// TestRunLoopFinalCallFails: a failure of the call that asks for the
// final answer is the loop's error.
func TestRunLoopFinalCallFails(t *testing.T) {
	boom := errors.New("connection reset")
	m := llmtest.New(llmtest.Calls(llm.ToolCall{ID: "c", Name: "t", Arguments: `{}`}), llmtest.Fail(boom))
	spy := &toolSpy{}
	_, err := RunLoop(context.Background(), LoopConfig{Model: m, ModelName: "m", MaxSteps: 1, Tools: []mnemo.Tool{spy.tool("t")}}, loopInput("q"))
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestCanonicalJSON(t *testing.T) {
	tests := map[string]string{
		`{"b":2,"a":[1,{"d":1,"c":2}]}`: `{"a":[1,{"c":2,"d":1}],"b":2}`,
		` {"a" : 1} `:                   `{"a":1}`,
		"":                              `{}`,
		`{"a":`:                         `{"a":`,
	}
	for in, want := range tests {
		if got := canonicalJSON(in); got != want {
			t.Errorf("canonicalJSON(%q) = %q, want %q", in, got, want)
		}
	}
}
