package agent

import (
	"context"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/llm/openai"
	"sync"
	"testing"
	"time"
)

// llmSleeps records the waits a client asked for instead of sleeping.
type llmSleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *llmSleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

// llmFixture is the real provider pointed at a fresh scripted server, with
// recorded sleeps and jitter fixed at 0.5.
func llmFixture(t *testing.T, edit func(*openai.Config)) (*openai.Client, *openaitest.Server, *llmSleeps) {
	t.Helper()
	srv := openaitest.New(t)
	sl := &llmSleeps{}
	cfg := openai.Config{
		BaseURL: srv.URL(),
		APIKey:  "sk-test-0123456789abcdef",
		Sleep:   sl.sleep,
		Rand:    func() float64 { return 0.5 },
	}
	if edit != nil {
		edit(&cfg)
	}
	return openai.New(cfg), srv, sl
}
