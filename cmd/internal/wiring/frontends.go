package wiring

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Shutdown order, the same for every command that runs the core:
//  1. the front ends stop taking work and finish the tasks they took
//     (RunFrontends returns when all have);
//  2. the reflector reflects what is pending and drains, within the
//     shutdown grace (Core.Close);
//  3. the store closes, its watcher last (Core.Close).

// Frontend is a chat platform front end the core serves.
type Frontend struct {
	Name string
	// Run takes work until ctx ends, then finishes the tasks it took and
	// returns nil; or it returns an error when it cannot go on.
	Run func(ctx context.Context) error
}

// RunFrontends runs the front ends until ctx ends or one of them fails:
// the first failure stops the others (a half-up bot is worse than a
// restart). stopping, which must be safe to call more than once and from
// any goroutine, is called when one fails and when all have returned, so
// that the shutdown grace starts while the others finish their tasks
// (ctx ending is the caller's own signal to start it). It returns the
// first failure, named by its front end, once every front end has
// returned.
func RunFrontends(ctx context.Context, stopping func(), fronts ...Frontend) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, f := range fronts {
		g.Go(func() error {
			if err := f.Run(gctx); err != nil {
				stopping()
				if strings.HasPrefix(err.Error(), f.Name+": ") {
					return err // named already: "discord: discord: …" says it twice
				}
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			return nil
		})
	}
	err := g.Wait()
	stopping() // all returned, by themselves too: stop, within the grace
	return err
}
