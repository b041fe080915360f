package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/cmd/internal/budget"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// NewBudget is the budgets of limits.* on the clock now, one for every
// platform of the process (serve hands it to each; the terminal chat, the
// operator's, uses none). A message holds its own estimate and the reply
// cap (maxReplyChars/3 tokens, budget.Estimate's rate) until answered.
func NewBudget(cfg *config.Config, now func() time.Time) *budget.Budget {
	return budget.New(budget.Limits{MessagesPerMinute: cfg.Limits.MessagesPerMinute, TokensPerDay: cfg.Limits.TokensPerDay,
		TotalTokensPerDay: cfg.Limits.TotalTokensPerDay, ReplyTokens: (cfg.MaxReplyChars + 2) / 3}, now)
}

// countedModel fills in the usage of a reply the server sent none for
// (a stream without stream_options.include_usage honoured, a server that
// never reports it) with mnemo's own count (budget.EstimateCall), so that
// the budgets hold either way; the first such reply is logged, once for
// the process (the model is shared by the Thinker and the reflector).
type countedModel struct {
	model llm.Model
	log   *slog.Logger
	once  *sync.Once
}

var _ llm.Streamer = countedModel{}

func newCountedModel(m llm.Model, log *slog.Logger) countedModel {
	return countedModel{model: m, log: log, once: &sync.Once{}}
}

func (m countedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.model.Complete(ctx, req)
	return m.count(req, resp, err), err
}

// Stream is Complete streamed (llm.Stream).
func (m countedModel) Stream(ctx context.Context, req llm.Request, onText func(string) error) (llm.Response, error) {
	resp, err := llm.Stream(ctx, m.model, req, onText)
	return m.count(req, resp, err), err
}

// count is resp with its usage counted by mnemo when the server sent
// none: for every reply that came, cut or whole; a call that failed with
// nothing received cost nothing mnemo can see.
func (m countedModel) count(req llm.Request, resp llm.Response, err error) llm.Response {
	u := resp.Usage
	if u.PromptTokens > 0 || u.CompletionTokens > 0 || u.TotalTokens > 0 {
		return resp
	}
	if err != nil && resp.Message.Content == "" && len(resp.Message.ToolCalls) == 0 {
		return resp
	}
	m.once.Do(func() {
		m.log.Warn("llm: the model server reports no token usage; mnemo counts tokens itself (bytes/3, an estimate) for the budgets and metrics")
	})
	prompt, completion := budget.EstimateCall(req, resp)
	resp.Usage = llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return resp
}
