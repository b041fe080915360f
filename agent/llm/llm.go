package llm

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mnemo-agent/mnemo/agent/text"
)

// Role says who wrote a Message.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool's result
)

// Message is one message of a conversation.
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall
	// ToolCallID and Name: of a tool result, the call it answers and the
	// tool's name.
	ToolCallID string
	Name       string
}

// ToolCall is one function call a model asked for: Arguments is the JSON
// text it sent, as sent (possibly malformed).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolResult is the message that answers call with text.
func ToolResult(call ToolCall, text string) Message {
	return Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: text}
}

// ToolDef declares a tool to the model: Parameters is a JSON Schema object.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is one completion request.
type Request struct {
	Model    string // the model's name, e.g. "gpt-4o-mini"
	Messages []Message
	Tools    []ToolDef // none: the model may not call tools
}

// FinishReason says why a model stopped writing.
type FinishReason string

// The finish reasons the core tells apart; a provider passes others through.
const (
	FinishStop      FinishReason = "stop"
	FinishToolCalls FinishReason = "tool_calls"
	FinishLength    FinishReason = "length" // cut off at the token limit
)

// Usage is the tokens one reply cost.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Response is a model's reply: its message (role assistant), why it ended,
// and what it cost. Model is the model that answered, as the server named it.
type Response struct {
	Message      Message
	FinishReason FinishReason
	Usage        Usage
	Model        string
}

// Model sends one request to a language model and returns its reply.
// Failures wrap one of the Err* errors below (or the context's error), so
// callers can tell them apart with errors.Is. Implementations must be safe
// for concurrent use.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Streamer is a Model that can also stream a reply: Stream sends req as
// Complete does, hands each piece of the reply's visible text (its
// content, never tool calls) to onText as it arrives, and returns the
// whole response as Complete would. Tool calls are assembled from their
// fragments and returned whole, never handed to onText.
//
// A failure before onText was first called is a failure of Complete (same
// kinds, same retries). Once onText has been called nothing is retried
// (the text was handed on and would come twice): a failure then returns
// the response so far (its Message.Content is the text handed on) and an
// error that wraps ErrCut besides its kind. When onText returns an error,
// the stream stops and Stream returns the response so far with that error
// as it is.
type Streamer interface {
	Model
	Stream(ctx context.Context, req Request, onText func(delta string) error) (Response, error)
}

// Stream streams req from m when m is a Streamer; otherwise it completes
// it and hands the reply's whole text to onText at once (when there is
// any), so callers have one path.
func Stream(ctx context.Context, m Model, req Request, onText func(delta string) error) (Response, error) {
	if s, ok := m.(Streamer); ok {
		return s.Stream(ctx, req, onText)
	}
	resp, err := m.Complete(ctx, req)
	if resp.Message.Content != "" && (err == nil || errors.Is(err, ErrTruncated)) {
		if terr := onText(resp.Message.Content); terr != nil {
			return resp, terr
		}
	}
	return resp, err
}

// The kinds of model failure.
var (
	// ErrRateLimited: HTTP 429 that did not clear within the retries, or
	// whose Retry-After was longer than the client waits.
	ErrRateLimited = errors.New("rate limited by the model server")
	// ErrQuota: the account is out of credit (HTTP 429 insufficient_quota).
	// Not retried: it does not pass by waiting.
	ErrQuota = errors.New("model provider quota exhausted (insufficient_quota): check the account's plan and billing")
	// ErrAuth: HTTP 401 or 403.
	ErrAuth = errors.New("the model server refused the credentials: check OPENAI_API_KEY")
	// ErrUnavailable: HTTP 5xx, a non-JSON error page from a proxy, a
	// transport error or an attempt timeout that did not clear within the
	// retries.
	ErrUnavailable = errors.New("model server unavailable")
	// ErrContextLength: the request is longer than the model's context
	// window (code context_length_exceeded). Not retried.
	ErrContextLength = errors.New("conversation too long for the model's context window")
	// ErrBadRequest: any other refusal (400, 404 unknown model, 422, ...),
	// a request the client refused to send, or a bad base URL. Not retried.
	ErrBadRequest = errors.New("the model server rejected the request")
	// ErrBadResponse: a reply that is not a chat completion, or has no
	// choices. Not retried.
	ErrBadResponse = errors.New("unusable reply from the model server")
	// ErrTruncated: the reply hit the token limit (finish reason "length")
	// in the middle of tool calls. Complete returns the response as well,
	// with those tool calls removed so they are never run; the text, if
	// any, is kept.
	ErrTruncated = errors.New("the model's reply was cut off at the token limit in the middle of tool calls")
	// ErrResponseTooLarge: the response body (a success or an error page)
	// is longer than the client reads. Not retried: it would not get
	// smaller.
	ErrResponseTooLarge = errors.New("the model server's response is too large")
	// ErrCut: a streamed reply broke off after some of its text was
	// handed on (Streamer); the error wraps its kind too (usually
	// ErrUnavailable, or the context's error). Never retried.
	ErrCut = errors.New("the reply broke off in the middle")
)

// RedactURLs is text.RedactURLs.
//
// Deprecated: use text.RedactURLs; kept for cmd/mnemo until it moves to
// cmd/internal/app.
func RedactURLs(s string) string { return text.RedactURLs(s) }
