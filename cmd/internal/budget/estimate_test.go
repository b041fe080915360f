package budget

import (
	"encoding/json"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

// Estimate is bytes/3 rounded up: never less than a token for any text,
// and high rather than low (three-byte characters count one each).
func TestEstimate(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0}, {"a", 1}, {"ab", 1}, {"abc", 1}, {"abcd", 2}, {"abcdef", 2}, {"abcdefg", 3},
		{"日本語", 3}, {"é", 1}, {"hello, world", 4},
	}
	for _, tt := range tests {
		if got := Estimate(tt.text); got != tt.want {
			t.Errorf("Estimate(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// A call counts every part of the request the server reads, and the
// reply's text and tool calls.
func TestEstimateCall(t *testing.T) {
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "abcdef"}, // 2 + 4
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "memory_read", Arguments: `{"path":"x"}`}}}, // 1+4+4 + 4
			{Role: llm.RoleTool, ToolCallID: "c1", Name: "memory_read", Content: "text"},                                     // 1+4+2 + 4
		},
		Tools: []llm.ToolDef{{Name: "memory_list", Description: "lists", Parameters: json.RawMessage(`{}`)}}, // 4+2+1
	}
	resp := llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "the answer", // 4
		ToolCalls: []llm.ToolCall{{ID: "c2", Name: "memory_list", Arguments: "{}"}}}} // 1+4+1
	prompt, completion := EstimateCall(req, resp)
	if prompt != 6+13+11+7 || completion != 10 {
		t.Fatalf("EstimateCall = %d, %d; want 37, 10", prompt, completion)
	}
	if p, c := EstimateCall(llm.Request{}, llm.Response{}); p != 0 || c != 0 {
		t.Fatalf("an empty call: %d, %d", p, c)
	}
}
