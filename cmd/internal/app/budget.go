package app

import (
	"context"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/cmd/internal/budget"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// NewBudget is the budgets of limits.* on the clock now, one for every
// platform of the process (serve hands it to each; the terminal chat, the
// operator's, uses none).
func NewBudget(cfg *config.Config, now func() time.Time) *budget.Budget {
	return budget.New(budget.Limits{MessagesPerMinute: cfg.Limits.MessagesPerMinute, TokensPerDay: cfg.Limits.TokensPerDay,
		TotalTokensPerDay: cfg.Limits.TotalTokensPerDay}, now)
}

// chargedModel charges what the reflector's model calls cost to the
// day's total (limits.totalTokensPerDay): they are spent for no one
// person, and never refused (a refused reflection would lose memory).
type chargedModel struct {
	model  llm.Model
	budget *budget.Budget
}

var _ llm.Model = chargedModel{}

func (m chargedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.model.Complete(ctx, req)
	m.budget.ChargeTotal(resp.Usage.PromptTokens + resp.Usage.CompletionTokens)
	return resp, err
}
