package app

import (
	"context"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm"
)

// callGate cancels the model calls of the agent's tasks when the shutdown
// grace is over. Tasks outlive the adapters' context on purpose (a message
// taken is answered), so this is what bounds them.
type callGate struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newCallGate() *callGate {
	g := &callGate{}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	return g
}

// model wraps m so that its calls end when the gate closes.
func (g *callGate) model(m agent.Model) agent.Model { return gatedModel{m: m, g: g} }

// close cancels the calls in progress and every later one.
func (g *callGate) close(cause error) { g.cancel(cause) }

type gatedModel struct {
	m agent.Model
	g *callGate
}

func (gm gatedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	ctx, done := gm.gate(ctx)
	defer done()
	return gm.m.Complete(ctx, req)
}

// Stream is Complete streamed (llm.Stream): a stream still running when
// the grace is over is cut there.
func (gm gatedModel) Stream(ctx context.Context, req llm.Request, onText func(string) error) (llm.Response, error) {
	ctx, done := gm.gate(ctx)
	defer done()
	return llm.Stream(ctx, gm.m, req, onText)
}

// gate is ctx, also cancelled when the gate closes.
func (gm gatedModel) gate(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	// A gate closed already cancels the call here and now: AfterFunc on a
	// done context runs its func on a goroutine of its own, which a fast
	// model could beat.
	if gm.g.ctx.Err() != nil {
		cancel(context.Cause(gm.g.ctx))
	}
	stop := context.AfterFunc(gm.g.ctx, func() { cancel(context.Cause(gm.g.ctx)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}
