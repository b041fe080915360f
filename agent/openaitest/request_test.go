package openaitest

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestRequestDecoding: the server reads requests with its own types —
// content as a string, as an array of parts or null, tool calls and tool
// results, tools — and refuses a content of any other shape.
func TestRequestDecoding(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("ok"))
	body := `{"model":"m","stream":false,"messages":[` +
		`{"role":"system","content":[{"type":"text","text":"be "},{"type":"text","text":"brief"}]},` +
		`{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"memory_list","arguments":"{}"}}]},` +
		`{"role":"tool","content":"[]","name":"memory_list","tool_call_id":"c1"}],` +
		`"tools":[{"type":"function","function":{"name":"memory_list","description":"List.","parameters":{"type":"object"}}}]}`
	if status, _, m := post(t, s, http.MethodPost, "/v1/chat/completions", body); status != 200 {
		t.Fatalf("status %d: %v", status, m)
	}
	r := s.Requests()[0]
	c := r.Chat
	if r.DecodeErr != nil || c.Model != "m" || len(c.Messages) != 4 || r.System() != "be brief" || r.LastUser() != "hi" {
		t.Fatalf("decoded %+v, %v", c, r.DecodeErr)
	}
	a, tm := c.Messages[2], c.Messages[3]
	if a.Content != "" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "c1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function != (FunctionCall{Name: "memory_list", Arguments: "{}"}) {
		t.Errorf("assistant message %+v", a)
	}
	if tm.Role != "tool" || tm.Content != "[]" || tm.Name != "memory_list" || tm.ToolCallID != "c1" {
		t.Errorf("tool message %+v", tm)
	}
	if len(c.Tools) != 1 || c.Tools[0].Function.Description != "List." || string(c.Tools[0].Function.Parameters) != `{"type":"object"}` {
		t.Errorf("tools %+v", c.Tools)
	}

	for _, bad := range []string{
		`{"model":"m","messages":[{"role":"user","content":42}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x","tool_calls":"no"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[1]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"unterminated}]}`,
	} {
		if status, _, _ := post(t, s, http.MethodPost, "/v1/chat/completions", bad); status != 400 {
			t.Errorf("%s: status %d, want 400", bad, status)
		}
	}
}

// FuzzMessageDecoding: any JSON a client sends as a message decodes or
// fails cleanly, and a string content is read as sent.
func FuzzMessageDecoding(f *testing.F) {
	f.Add(`{"role":"user","content":"hi"}`)
	f.Add(`{"role":"user","content":[{"type":"text","text":"a"}]}`)
	f.Add(`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]}`)
	f.Add(`{"content":7}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m Message
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return
		}
		var raw struct {
			Content any `json:"content"`
		}
		if json.Unmarshal([]byte(s), &raw) == nil {
			if text, ok := raw.Content.(string); ok && m.Content != text {
				t.Fatalf("content %q read as %q", text, m.Content)
			}
		}
	})
}
