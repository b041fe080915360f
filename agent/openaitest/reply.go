package openaitest

import (
	"net/http"
	"slices"
	"time"
)

type replyKind int

const (
	kindChat  replyKind = iota // a chat.completion (or its stream)
	kindError                  // an OpenAI JSON error body
	kindRaw                    // any body, verbatim
)

// Reply is one scripted answer. Build it with Text, ToolCalls, Error, Raw,
// BadGateway or NoChoices and adjust it with the With* methods, which return
// a modified copy. The zero Reply is an assistant message with empty text.
type Reply struct {
	kind replyKind

	// chat
	content    string
	hasContent bool
	toolCalls  []ToolCall
	finish     string
	noChoices  bool
	model      string
	usage      *usage
	noUsage    bool

	// error and raw
	status      int
	errType     string
	errCode     string
	errMessage  string
	contentType string
	body        string

	header http.Header
	delay  time.Duration

	// streaming (only when the request asks for a stream)
	wordDelay  time.Duration // before each word; 0: the text in 3 pieces at once
	pauseAfter int           // hold after this many text chunks until Server.Resume (0: never)
	cutAfter   int           // drop the connection after this many text chunks (0: never)
	errAfter   int           // send an error event after this many text chunks (0: never)
	errEvent   *Reply        // that event's error
}

type usage struct{ prompt, completion int }

// ToolCall is one function call in a scripted assistant message. An empty
// ID is filled in by the server as "call_1", "call_2", ... in the order the
// server sends them.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // raw JSON text, sent as is (it may be invalid or cut short)
}

// Call returns a tool call of the named function with the given raw JSON
// arguments; the server assigns its ID.
func Call(name, arguments string) ToolCall {
	return ToolCall{Name: name, Arguments: arguments}
}

// WithID returns a copy of the call with a fixed ID.
func (c ToolCall) WithID(id string) ToolCall {
	c.ID = id
	return c
}

// Text is an assistant reply with the given text and finish_reason "stop".
func Text(content string) Reply {
	return Reply{content: content, hasContent: true}
}

// ToolCalls is an assistant reply that calls the given tools, with no text
// (content null) and finish_reason "tool_calls".
func ToolCalls(calls ...ToolCall) Reply {
	return Reply{toolCalls: slices.Clone(calls)}
}

// NoChoices is a well-formed chat.completion with an empty choices array.
func NoChoices() Reply {
	return Reply{noChoices: true}
}

// Error is an HTTP error with an OpenAI error body:
//
//	{"error":{"message":message,"type":...,"param":null,"code":code}}
//
// The type is derived from the status (429 → "rate_limit_error" or, for
// code insufficient_quota, "insufficient_quota"; other 4xx →
// "invalid_request_error"; 5xx → "server_error"); WithType overrides it.
// An empty code is sent as null.
func Error(status int, code, message string) Reply {
	t := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests && code == "insufficient_quota":
		t = "insufficient_quota"
	case status == http.StatusTooManyRequests:
		t = "rate_limit_error"
	case status >= 500:
		t = "server_error"
	}
	return Reply{kind: kindError, status: status, errType: t, errCode: code, errMessage: message}
}

// Raw is an HTTP answer with the given status, Content-Type and body, sent
// verbatim: use it for what a proxy or a broken server sends.
func Raw(status int, contentType, body string) Reply {
	return Reply{kind: kindRaw, status: status, contentType: contentType, body: body}
}

// BadGatewayHTML is the body BadGateway sends.
const BadGatewayHTML = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n" +
	"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// BadGateway is a reverse proxy's HTML 502 page (not JSON).
func BadGateway() Reply {
	return Raw(http.StatusBadGateway, "text/html", BadGatewayHTML)
}

// WithContent returns a copy whose assistant message has this text (also
// next to tool calls).
func (r Reply) WithContent(content string) Reply {
	r.content, r.hasContent = content, true
	return r
}

// WithFinishReason returns a copy with this finish_reason, e.g.
// FinishLength for a reply cut off at the token limit. By
// default it is "tool_calls" when the reply has tool calls and "stop"
// otherwise.
func (r Reply) WithFinishReason(reason string) Reply {
	r.finish = reason
	return r
}

// WithUsage returns a copy reporting these token counts (total is their
// sum). By default the server makes up small non-zero counts from the text
// lengths.
func (r Reply) WithUsage(prompt, completion int) Reply {
	r.usage = &usage{prompt: prompt, completion: completion}
	return r
}

// WithoutUsage returns a copy that reports no usage: no "usage" field in
// a completion, no usage chunk in a stream even when
// stream_options.include_usage asks for one (servers that ignore it).
func (r Reply) WithoutUsage() Reply {
	r.noUsage = true
	return r
}

// WithModel returns a copy whose response names this model instead of the
// requested one.
func (r Reply) WithModel(model string) Reply {
	r.model = model
	return r
}

// WithType returns a copy of an Error reply with this error type.
func (r Reply) WithType(errType string) Reply {
	r.errType = errType
	return r
}

// WithHeader returns a copy that also sends this response header.
func (r Reply) WithHeader(key, value string) Reply {
	h := r.header.Clone()
	if h == nil {
		h = make(http.Header)
	}
	h.Add(key, value)
	r.header = h
	return r
}

// WithRetryAfter returns a copy with a Retry-After header: delay seconds
// ("1") or an HTTP date.
func (r Reply) WithRetryAfter(value string) Reply {
	return r.WithHeader("Retry-After", value)
}

// WithDelay returns a copy that waits d before answering anything. The wait
// ends early, without an answer, when the client gives up on the request
// (its context is done) or the server is closed, so Close never hangs on it.
func (r Reply) WithDelay(d time.Duration) Reply {
	r.delay = d
	return r
}

// WithWordDelay returns a copy that, when the request asks for a stream,
// sends its text one word (with the spaces after it) per chunk and waits d
// before each, as a model writes: the first word comes d after the
// request. Without it the text is sent at once, in three pieces.
func (r Reply) WithWordDelay(d time.Duration) Reply {
	r.wordDelay = d
	return r
}

// WithPauseAfter returns a copy whose stream holds after its first n text
// chunks until the test calls Server.Resume, so a test can see what the
// code under test did with the first words while the model is still
// writing. Words are chunks as WithWordDelay sends them (with d = 0 when
// it is not set).
func (r Reply) WithPauseAfter(n int) Reply {
	r.pauseAfter = n
	return r
}

// WithCutAfter returns a copy whose stream sends its first n text chunks
// (words, as WithPauseAfter counts them) and then drops the connection:
// no finish reason, no [DONE], as when a model server dies mid-reply.
func (r Reply) WithCutAfter(n int) Reply {
	r.cutAfter = n
	return r
}

// WithErrorAfter returns a copy whose stream sends its first n text chunks
// (words, as WithPauseAfter counts them) and then an error event (data:
// {"error":...}, from an Error reply such as Error(500, "", "overloaded"))
// and ends, as a server that fails in the middle of a reply.
func (r Reply) WithErrorAfter(n int, e Reply) Reply {
	r.errAfter, r.errEvent = n, &e
	return r
}
