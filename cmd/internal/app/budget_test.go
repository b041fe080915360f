package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// A reply without usage gets mnemo's own count, streamed or not; one with
// usage (any of its counts) is left as the server said; a call that
// failed with nothing received costs nothing; a reply cut after some text
// is counted. That the server reports none is said once.
func TestCountedModel(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "abcdef"}}} // 2 + 4
	text := llm.Message{Role: llm.RoleAssistant, Content: "abc"}                         // 1
	tests := []struct {
		name string
		resp llm.Response
		err  error
		want llm.Usage
	}{
		{"no usage", llm.Response{Message: text}, nil, llm.Usage{PromptTokens: 6, CompletionTokens: 1, TotalTokens: 7}},
		{"tool calls only", llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{{Name: "abc"}}}}, nil, llm.Usage{PromptTokens: 6, CompletionTokens: 1, TotalTokens: 7}},
		{"an empty answer", llm.Response{}, nil, llm.Usage{PromptTokens: 6, TotalTokens: 6}},
		{"usage reported", llm.Response{Message: text, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}}, nil, llm.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}},
		{"completion only", llm.Response{Message: text, Usage: llm.Usage{CompletionTokens: 5}}, nil, llm.Usage{CompletionTokens: 5}},
		{"total only", llm.Response{Message: text, Usage: llm.Usage{TotalTokens: 9}}, nil, llm.Usage{TotalTokens: 9}},
		{"failed, nothing came", llm.Response{}, llm.ErrUnavailable, llm.Usage{}},
		{"cut after some text", llm.Response{Message: text}, fmt.Errorf("%w: %w", llm.ErrCut, llm.ErrUnavailable), llm.Usage{PromptTokens: 6, CompletionTokens: 1, TotalTokens: 7}},
		{"cut tool calls", llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{{Name: "abc"}}}}, llm.ErrTruncated, llm.Usage{PromptTokens: 6, CompletionTokens: 1, TotalTokens: 7}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprint(tt.name, " stream=", stream), func(t *testing.T) {
				var logs bytes.Buffer
				m := newCountedModel(stubModel{resp: tt.resp, err: tt.err}, slog.New(slog.NewTextHandler(&logs, nil)))
				var resp llm.Response
				var err error
				if stream {
					resp, err = m.Stream(context.Background(), req, func(string) error { return nil })
				} else {
					resp, err = m.Complete(context.Background(), req)
				}
				if !errors.Is(err, tt.err) || tt.err == nil && err != nil {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				if resp.Usage != tt.want {
					t.Fatalf("usage %+v, want %+v", resp.Usage, tt.want)
				}
				if resp.Message.Content != tt.resp.Message.Content {
					t.Fatalf("message %+v", resp.Message)
				}
				said := strings.Count(logs.String(), "reports no token usage")
				if counted := tt.want != tt.resp.Usage; said != map[bool]int{true: 1}[counted] {
					t.Fatalf("said %d times:\n%s", said, logs.String())
				}
			})
		}
	}
	var logs bytes.Buffer
	m := newCountedModel(stubModel{resp: llm.Response{Message: text}}, slog.New(slog.NewTextHandler(&logs, nil)))
	for range 3 {
		m.Complete(context.Background(), req)
	}
	if n := strings.Count(logs.String(), "reports no token usage"); n != 1 {
		t.Fatalf("said %d times in three replies", n)
	}
}

// The budget holds the reply cap at Estimate's rate: maxReplyChars/3
// rounded up.
func TestNewBudgetHoldsTheReplyCap(t *testing.T) {
	cfg := &config.Config{MaxReplyChars: 16000}
	cfg.Limits.TokensPerDay = 1_000_000
	b := NewBudget(cfg, nil)
	if held, reason, _ := b.Reserve("ada", "abcd"); reason != "" || held != 5334+2 {
		t.Fatalf("held %d (%q), want 5336", held, reason)
	}
	if l := b.Limits(); l.TokensPerDay != 1_000_000 || l.ReplyTokens != 5334 {
		t.Fatalf("limits %+v", l)
	}
}
