// Package llmtest is a recorded conversation for tests: Script is an
// llm.Model that answers from a queue of replies, without HTTP, and
// records every request. Tests of what a real server cannot send, or of
// code above the provider, use it; tests of the wire use agent/openaitest
// with the llm/openai provider.
package llmtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

// Reply is one scripted answer: a response, an error, or both (as
// llm.ErrTruncated comes with its response).
type Reply struct {
	Response llm.Response
	Err      error
}

// Text is a reply that answers s.
func Text(s string) Reply {
	return Reply{Response: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: s}, FinishReason: llm.FinishStop}}
}

// Calls is a reply that calls tools.
func Calls(calls ...llm.ToolCall) Reply {
	return Reply{Response: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}, FinishReason: llm.FinishToolCalls}}
}

// Fail is a reply that fails with err.
func Fail(err error) Reply { return Reply{Err: err} }

// ErrScriptEnded is what a Script answers once its replies are used up.
var ErrScriptEnded = errors.New("llmtest: the script ran out of replies")

// Script answers each request with the next queued reply. It is safe for
// concurrent use.
type Script struct {
	mu      sync.Mutex
	replies []Reply
	reqs    []llm.Request
}

// New returns a Script that will answer with replies, in order.
func New(replies ...Reply) *Script { return &Script{replies: replies} }

// Add queues more replies.
func (s *Script) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Complete records req and answers with the next reply.
func (s *Script) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Messages = slices.Clone(req.Messages) // the caller goes on appending
	s.reqs = append(s.reqs, req)
	if len(s.replies) == 0 {
		return llm.Response{}, fmt.Errorf("%w (request %d)", ErrScriptEnded, len(s.reqs))
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r.Response, r.Err
}

// Requests are the requests received so far, in order.
func (s *Script) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Pending is the number of replies not yet given.
func (s *Script) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}
