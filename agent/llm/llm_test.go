package llm

import "testing"

func TestToolResult(t *testing.T) {
	m := ToolResult(ToolCall{ID: "c1", Name: "memory_read", Arguments: `{}`}, "text")
	if m.Role != RoleTool || m.ToolCallID != "c1" || m.Name != "memory_read" || m.Content != "text" || m.ToolCalls != nil {
		t.Errorf("ToolResult = %+v", m)
	}
}
