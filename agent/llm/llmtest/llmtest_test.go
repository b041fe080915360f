package llmtest

import (
	"context"
	"errors"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

func TestScript(t *testing.T) {
	boom := errors.New("boom")
	s := New(Calls(llm.ToolCall{ID: "c1", Name: "t", Arguments: `{}`}))
	s.Add(Text("done"), Fail(boom))
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
	r, err := s.Complete(context.Background(), llm.Request{Model: "m", Messages: msgs})
	if err != nil || r.FinishReason != llm.FinishToolCalls || len(r.Message.ToolCalls) != 1 || r.Message.Role != llm.RoleAssistant {
		t.Fatalf("first reply %+v, %v", r, err)
	}
	msgs[0].Content = "changed by the caller"
	if r, err := s.Complete(context.Background(), llm.Request{}); err != nil || r.Message.Content != "done" || r.FinishReason != llm.FinishStop {
		t.Fatalf("second reply %+v, %v", r, err)
	}
	if s.Pending() != 1 {
		t.Errorf("pending %d", s.Pending())
	}
	if _, err := s.Complete(context.Background(), llm.Request{}); !errors.Is(err, boom) {
		t.Errorf("third reply: %v", err)
	}
	if _, err := s.Complete(context.Background(), llm.Request{}); !errors.Is(err, ErrScriptEnded) {
		t.Errorf("past the script: %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != 4 || reqs[0].Model != "m" || reqs[0].Messages[0].Content != "hi" {
		t.Errorf("requests = %+v", reqs)
	}
}
