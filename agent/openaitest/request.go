package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ChatRequest is a chat completion request as the server decodes it, with
// its own types rather than a client library's: a fake server that shared
// the client's types would agree with the client's mistakes. It holds the
// fields tests read; the raw body is in Request.Body.
type ChatRequest struct {
	Model         string         `json:"model"`
	Messages      []Message      `json:"messages"`
	Tools         []Tool         `json:"tools,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
}

// StreamOptions are the options of a streamed request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request. Content is its text; a content
// sent as an array of parts is in MultiContent instead.
type Message struct {
	Role         string
	Content      string
	MultiContent []ContentPart
	Name         string
	ToolCalls    []MessageToolCall
	ToolCallID   string
}

// ContentPart is one part of a message content sent as an array.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// MessageToolCall is a tool call an assistant message of the request
// carries (a call made earlier in the conversation).
type MessageToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call calls, with its JSON arguments.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Tool is a tool a request offers the model.
type Tool struct {
	Type     string    `json:"type"`
	Function *Function `json:"function,omitempty"`
}

// Function declares a function tool.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// messageWire is Message on the wire, its content left raw: a string, an
// array of parts, or null.
type messageWire struct {
	Role       string            `json:"role"`
	Content    json.RawMessage   `json:"content,omitempty"`
	Name       string            `json:"name,omitempty"`
	ToolCalls  []MessageToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

// UnmarshalJSON reads a message whose content is a string, an array of
// parts or null.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w messageWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, Name: w.Name, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID}
	switch c := bytes.TrimSpace(w.Content); {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		return json.Unmarshal(c, &m.MultiContent)
	default:
		return fmt.Errorf("message content is neither a string nor an array of parts: %s", c)
	}
	return nil
}
