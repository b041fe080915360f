package reflector

import (
	"context"
	"fmt"
)

// Forget drops the turns of user that are waiting to be reflected, from
// memory and from the journal, stops a reflection of that user that is
// running (its changes so far stay; an admin forget removes them next) and
// waits for it to end, bounded by ctx — so that memory deleted after
// Forget returns is not written again from an older conversation. It
// returns how many turns were dropped.
func (r *Reflector) Forget(ctx context.Context, user string) (int, error) {
	if err := validUser(user); err != nil {
		return 0, err
	}
	r.mu.Lock()
	u := r.users[user]
	if u == nil {
		r.mu.Unlock()
		return 0, nil
	}
	u.refs++    // keep the state while the journal is rewritten
	u.run = nil // a running run sees it is forgotten; a run cut short is not resumed
	var running <-chan struct{}
	if u.busy {
		running = u.done
		u.cancel()
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		u.refs--
		r.forget(u)
		r.mu.Unlock()
	}()

	u.jmu.Lock()
	r.mu.Lock()
	r.disarm(u)
	dropped := len(u.queued) + len(u.running)
	r.pending -= len(u.queued) // the running turns are counted off when their run ends
	u.queued, u.due = nil, false
	r.mu.Unlock()
	err := r.j.rewrite(user, nil, nil)
	u.jmu.Unlock()
	if err != nil {
		return dropped, fmt.Errorf("forget the journaled turns of %s: %w", user, err)
	}
	if dropped > 0 {
		r.log.Info("reflection: forgot pending turns", "user", user, "turns", dropped)
	}
	if running == nil {
		return dropped, nil
	}
	select {
	case <-running:
		return dropped, nil
	case <-ctx.Done():
		return dropped, fmt.Errorf("a reflection of %s is still running: %w", user, ctx.Err())
	}
}
