package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// TestCompleteWire pins the bytes a request in the core's types becomes on
// the wire (what go-openai sent when the loop built its messages itself),
// and the reply read back: the first choice, its tool calls, finish reason
// and usage.
func TestCompleteWire(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/a.md"}`)).WithContent("Looking.").WithUsage(7, 3))
	call := llm.ToolCall{ID: "call_1", Name: "memory_list", Arguments: `{}`}
	resp, err := c.Complete(context.Background(), llm.Request{
		Model: "test-model",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are mnemo."},
			{Role: llm.RoleUser, Content: "hi"},
			{Role: llm.RoleAssistant, Content: "Let me look.", ToolCalls: []llm.ToolCall{call}},
			llm.ToolResult(call, "[]"),
		},
		Tools: []llm.ToolDef{{Name: "memory_list", Description: "List files.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	const wantMsgs = `[{"role":"system","content":"You are mnemo."},{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"memory_list","arguments":"{}"}}]},` +
		`{"role":"tool","content":"[]","name":"memory_list","tool_call_id":"call_1"}]`
	const wantTools = `[{"function":{"name":"memory_list","description":"List files.","parameters":{"type":"object","properties":{}}},"type":"function"}]`
	if string(body["messages"]) != wantMsgs {
		t.Errorf("messages on the wire:\n%s\nwant\n%s", body["messages"], wantMsgs)
	}
	if string(body["tools"]) != wantTools {
		t.Errorf("tools on the wire:\n%s\nwant\n%s", body["tools"], wantTools)
	}
	if string(body["model"]) != `"test-model"` {
		t.Errorf("model on the wire: %s", body["model"])
	}
	m := resp.Message
	if m.Role != llm.RoleAssistant || m.Content != "Looking." || len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "memory_read" ||
		m.ToolCalls[0].Arguments != `{"path":"facts/a.md"}` || m.ToolCalls[0].ID == "" {
		t.Errorf("reply message = %+v", m)
	}
	if resp.FinishReason != llm.FinishToolCalls || resp.Usage != (llm.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}) || resp.Model == "" {
		t.Errorf("reply = %+v", resp)
	}

	// Without tools the request has no "tools" key at all, as before.
	srv.Enqueue(openaitest.Text("ok"))
	if _, err := c.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	body = nil
	if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("a request without tools sent %s", body["tools"])
	}

	// A failed call gives the zero Response with the error.
	if resp, err := c.Complete(context.Background(), llm.Request{Model: "m"}); err == nil || resp.Message.Role != "" {
		t.Errorf("script ran out: %+v, %v", resp, err)
	}
}
