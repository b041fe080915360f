package agent

import (
	"context"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// llmFixture is the real provider pointed at a fresh scripted server; its
// waits between retries return at once.
func llmFixture(t *testing.T, edit func(*openai.Config)) (*openai.Client, *openaitest.Server) {
	t.Helper()
	srv := openaitest.New(t)
	cfg := openai.Config{
		BaseURL: srv.URL(),
		APIKey:  "sk-test-0123456789abcdef",
		Sleep:   func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Rand:    func() float64 { return 0.5 },
	}
	if edit != nil {
		edit(&cfg)
	}
	return openai.New(cfg), srv
}
