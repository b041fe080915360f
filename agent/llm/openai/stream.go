package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

var _ llm.Streamer = (*Client)(nil)

// errIncomplete: the stream ended (the connection closed, or [DONE])
// before any chunk said why the reply finished. Classified as a
// transport error: llm.ErrUnavailable, retried while no text was handed
// on.
var errIncomplete = fmt.Errorf("the stream ended before the reply was complete: %w", io.ErrUnexpectedEOF)

// errNotStream: the body ended without a single event of a chat
// completion stream (a login page, a JSON body).
var errNotStream = errors.New("no stream events")

// errAttemptTimeout is the cause of an attempt ended by Config.Timeout.
var errAttemptTimeout = errors.New("openai: attempt timed out")

// stopped carries the error onText returned: the caller stopped the
// stream, which is not a failure of the model.
type stopped struct{ err error }

func (s stopped) Error() string { return s.err.Error() }
func (s stopped) Unwrap() error { return s.err }

// Stream implements llm.Streamer: it asks for the reply streamed
// ("stream": true, with stream_options.include_usage so the last chunk
// reports the tokens), hands each piece of text to onText as it arrives,
// and assembles tool calls from their fragments by index.
//
// Everything Complete guarantees holds: the same error kinds and
// messages, MaxResponseBytes over the whole stream, the context ends it
// at once. Timeout bounds the wait for the first chunk and then for each
// next one (a long reply that keeps coming is not cut). Failures are
// retried as in Complete, but only until text was handed on: after that
// the error (an *Error with Cut set) wraps llm.ErrCut, and the response
// holds the text handed on. A stream that ends without a finish reason
// (the connection closed in the middle) is such a failure.
func (c *Client) Stream(ctx context.Context, req llm.Request, onText func(delta string) error) (llm.Response, error) {
	w := toWire(req)
	w.Stream = true
	w.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	c.calls.Add(1)
	start := time.Now()
	var acc streamAcc
	var stop error
	attempts, err := c.retry(ctx, w, func() (http.Header, bool, bool, error) {
		acc = streamAcc{}
		h, timedOut, err := c.streamAttempt(ctx, w, &acc, onText)
		var s stopped
		if errors.As(err, &s) {
			stop = s.err
			return h, false, true, nil
		}
		return h, timedOut, acc.handedOn, err
	})
	if stop != nil {
		return fromWire(acc.response()), stop
	}
	if err != nil {
		if acc.handedOn {
			return fromWire(acc.response()), err
		}
		return llm.Response{}, err
	}
	resp, err := c.succeed(w, acc.response(), attempts, start)
	if len(resp.Choices) == 0 {
		return llm.Response{}, err
	}
	return fromWire(resp), err
}

// streamAttempt makes one streamed attempt, adding what arrives to acc.
// The attempt's timeout restarts at every chunk.
func (c *Client) streamAttempt(ctx context.Context, req goopenai.ChatCompletionRequest, acc *streamAcc,
	onText func(string) error) (header http.Header, timedOut bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := c.afterFunc(c.timeout, func() { cancel(errAttemptTimeout) })
	defer timer.Stop()
	sink := &headerSink{}
	defer func() {
		header = sink.header
		timedOut = err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout)
	}()
	stream, err := c.client.CreateChatCompletionStream(context.WithValue(actx, headerSinkKey{}, sink), req)
	if err != nil {
		return nil, false, err
	}
	defer stream.Close()
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			switch {
			case acc.chunks == 0:
				return nil, false, errNotStream
			case acc.choices && acc.finish == "":
				return nil, false, errIncomplete
			}
			return nil, false, nil // complete, or no choices (which succeed reports)
		}
		if err != nil {
			return nil, false, err
		}
		timer.Reset(c.timeout)
		if delta := acc.add(chunk); delta != "" {
			acc.handedOn = true
			if err := onText(delta); err != nil {
				return nil, false, stopped{err}
			}
		}
	}
}

// attemptTimer is a streamed attempt's timeout, restarted at every chunk
// (*time.Timer).
type attemptTimer interface {
	Reset(time.Duration) bool
	Stop() bool
}

// streamAcc assembles a streamed reply's chunks into a completion.
type streamAcc struct {
	id, model string
	created   int64
	role      string
	content   strings.Builder
	calls     []goopenai.ToolCall // by index
	finish    goopenai.FinishReason
	usage     goopenai.Usage
	chunks    int  // events decoded
	choices   bool // a chunk with choice 0 came
	handedOn  bool // text went to onText
}

// add takes one chunk and returns its text.
func (a *streamAcc) add(chunk goopenai.ChatCompletionStreamResponse) string {
	a.chunks++
	if a.id == "" {
		a.id, a.model, a.created = chunk.ID, chunk.Model, chunk.Created
	}
	if chunk.Usage != nil {
		a.usage = *chunk.Usage
	}
	text := ""
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // mnemo asks for one choice
		}
		a.choices = true
		d := ch.Delta
		if d.Role != "" {
			a.role = d.Role
		}
		text += d.Content
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	a.content.WriteString(text)
	return text
}

// addCall adds a tool-call fragment: the first of a call brings its id
// and name, the next ones pieces of its arguments, all with its index. A
// server that sends no index sends each call whole, or its fragments in
// order: a fragment with an id starts a call, one without continues the
// last.
func (a *streamAcc) addCall(tc goopenai.ToolCall) {
	i := len(a.calls) - 1
	switch {
	case tc.Index != nil:
		i = *tc.Index
	case tc.ID != "" || i < 0:
		i = len(a.calls)
	}
	if i < 0 || i > len(a.calls)+64 {
		return // a nonsense index: not a call to grow a slice for
	}
	for len(a.calls) <= i {
		a.calls = append(a.calls, goopenai.ToolCall{Type: goopenai.ToolTypeFunction})
	}
	call := &a.calls[i]
	if tc.ID != "" {
		call.ID = tc.ID
	}
	if tc.Type != "" {
		call.Type = tc.Type
	}
	call.Function.Name += tc.Function.Name
	call.Function.Arguments += tc.Function.Arguments
}

// response is what came, as a completion (no choices when no chunk had
// one).
func (a *streamAcc) response() goopenai.ChatCompletionResponse {
	resp := goopenai.ChatCompletionResponse{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model, Usage: a.usage}
	if !a.choices && a.content.Len() == 0 {
		return resp
	}
	role := a.role
	if role == "" {
		role = goopenai.ChatMessageRoleAssistant
	}
	msg := goopenai.ChatCompletionMessage{Role: role, Content: a.content.String()}
	for _, tc := range a.calls {
		if tc.ID != "" || tc.Function.Name != "" {
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
	}
	resp.Choices = []goopenai.ChatCompletionChoice{{Message: msg, FinishReason: a.finish}}
	return resp
}
