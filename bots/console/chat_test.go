package console

import (
	"context"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// over is a terminal platform answering with h, run for one test; deps
// change what it is made with.
func over(t testing.TB, h mnemo.Handler, deps ...func(*platform.Deps)) *Chat {
	t.Helper()
	d := platform.Deps{Handler: h}
	for _, f := range deps {
		f(&d)
	}
	c := New(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	return c
}

// chatOf is h's terminal platform's conversation of user, for one test.
func chatOf(t testing.TB, user string, h mnemo.Handler, deps ...func(*platform.Deps)) Conversation {
	return over(t, h, deps...).Conversation(user)
}

// withMemory gives the platform mem as its memory.
func withMemory(mem memorycmd.Memory) func(*platform.Deps) {
	return func(d *platform.Deps) { d.Memory = mem }
}


// withWithdraw gives the platform withdraw.
func withWithdraw(withdraw func(taskID string)) func(*platform.Deps) {
	return func(d *platform.Deps) { d.Withdraw = withdraw }
}
