package app

import (
	"context"
	"errors"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
)

// measuredModel counts a role's model requests, their outcome, time and
// tokens in the metrics.
type measuredModel struct {
	model   llm.Model
	role    string // "thinker" or "reflector"
	metrics *metrics.Metrics
}

var _ llm.Streamer = measuredModel{}

func (m measuredModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	resp, err := m.model.Complete(ctx, req)
	m.record(start, resp, err)
	return resp, err
}

// record counts one request that took since start: a stream cut in the
// middle is an error like any other failed request.
func (m measuredModel) record(start time.Time, resp llm.Response, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		outcome = "canceled"
	case err != nil:
		outcome = "error"
	}
	m.metrics.LLMRequest(m.role, outcome, time.Since(start), resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
}

// Stream is Complete streamed (llm.Stream), timing the first words too.
func (m measuredModel) Stream(ctx context.Context, req llm.Request, onText func(string) error) (llm.Response, error) {
	start := time.Now()
	first := true
	resp, err := llm.Stream(ctx, m.model, req, func(delta string) error {
		if first {
			first = false
			m.metrics.FirstToken(m.role, time.Since(start))
		}
		return onText(delta)
	})
	m.record(start, resp, err)
	return resp, err
}

// measuredHandler counts each platform's messages taken, being answered
// and answered.
type measuredHandler struct {
	h       Handler
	metrics *metrics.Metrics
}

// Handler answers one task, as *agent.Agent does and the adapters need.
type Handler interface {
	Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error)
}

var _ Handler = measuredHandler{}

func (m measuredHandler) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	m.metrics.TaskStarted(t.Platform)
	reply, err := m.h.Handle(ctx, t)
	m.metrics.TaskDone(t.Platform, err == nil)
	return reply, err
}
