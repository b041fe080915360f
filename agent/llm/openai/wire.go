package openai

import (
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

// toWire renders a request in go-openai's types. Every tool call is sent
// back with type "function", the only type the chat API has.
func toWire(req llm.Request) goopenai.ChatCompletionRequest {
	out := goopenai.ChatCompletionRequest{Model: req.Model, Messages: make([]goopenai.ChatCompletionMessage, len(req.Messages))}
	for i, m := range req.Messages {
		w := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{ID: tc.ID, Type: goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		out.Messages[i] = w
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return out
}

// fromWire is the first choice of resp (which has at least one).
func fromWire(resp goopenai.ChatCompletionResponse) llm.Response {
	ch := resp.Choices[0]
	msg := llm.Message{Role: llm.Role(ch.Message.Role), Content: ch.Message.Content}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return llm.Response{Message: msg, FinishReason: llm.FinishReason(ch.FinishReason), Model: resp.Model,
		Usage: llm.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}}
}
