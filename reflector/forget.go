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
	u := r.acquire(user, false)
	closed := r.closing
	r.mu.Unlock()
	if u == nil && closed {
		// The loops end at Close, and turns whose run failed stay
		// journaled: drop them there.
		n, err := r.j.forget(user)
		r.pending.Add(-int64(n))
		return n, err
	}
	if u == nil {
		return 0, nil
	}
	var (
		dropped int
		running <-chan struct{}
		err     error
	)
	u.exec(func() { dropped, running, err = u.forget() })
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
