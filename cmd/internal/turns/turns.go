// Package turns drives simulated users' conversations for the load tools
// (mnemo-load and the soak test): each user sends its messages in order,
// waiting for each answer, several users at once.
package turns

import (
	"context"
	"sync"
	"sync/atomic"
)

// Run calls turn(u, m) for each message m (from 0) below messages[u] of
// each user u: one user's messages in order, never two at once, and at
// most workers turns at a time, each of a different user. Users take
// turns: once a user's message is answered, the user queues up behind the
// others for the next one, so the load stays at workers until the last
// round instead of trailing off with the users that happened to start
// last. turn returns false when ctx ended before the answer: its worker
// stops, and the others stop at ctx's end too. Run returns when every
// worker has stopped.
func Run(ctx context.Context, workers int, messages []int, turn func(u, m int) bool) {
	ready := make(chan int, len(messages))
	var left atomic.Int64 // users with messages still to send
	for u, n := range messages {
		if n > 0 {
			ready <- u
			left.Add(1)
		}
	}
	if left.Load() == 0 {
		return
	}
	sent := make([]int, len(messages)) // only the worker holding user u touches sent[u]
	var wg sync.WaitGroup
	for range min(workers, int(left.Load())) {
		wg.Go(func() {
			for {
				var u int
				select {
				case <-ctx.Done():
					return
				case next, ok := <-ready:
					if !ok {
						return
					}
					u = next
				}
				m := sent[u]
				if !turn(u, m) {
					return
				}
				if sent[u] = m + 1; sent[u] < messages[u] {
					ready <- u // never blocks: each user is queued at most once
				} else if left.Add(-1) == 0 {
					close(ready)
				}
			}
		})
	}
	wg.Wait()
}
