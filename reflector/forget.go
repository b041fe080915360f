package reflector

import (
	"context"
	"fmt"
	"time"
)

// Forget drops the turns of user that are waiting to be reflected, from
// memory and from the journal, and waits (bounded by ctx) for a reflection
// of that user already running to end — so that memory deleted after
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
	u.refs++ // keep the state while the journal is rewritten
	r.mu.Unlock()

	u.jmu.Lock()
	r.mu.Lock()
	r.disarm(u)
	dropped := len(u.queued)
	u.queued, u.due = nil, false
	r.pending -= dropped
	r.mu.Unlock()
	err := r.j.rewrite(user, nil)
	u.jmu.Unlock()

	defer func() {
		r.mu.Lock()
		u.refs--
		r.forget(u)
		r.mu.Unlock()
	}()
	if err != nil {
		return dropped, fmt.Errorf("forget the journaled turns of %s: %w", user, err)
	}
	if dropped > 0 {
		r.log.Info("reflection: forgot pending turns", "user", user, "turns", dropped)
	}
	for {
		r.mu.Lock()
		busy := u.busy
		r.mu.Unlock()
		if !busy {
			return dropped, nil
		}
		select {
		case <-ctx.Done():
			return dropped, fmt.Errorf("a reflection of %s is still running: %w", user, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
