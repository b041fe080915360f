package clock

import (
	"context"
	"time"
)

// Sleep waits d (a retry's backoff, a server's Retry-After) on the system
// clock, or until ctx ends, and says which: nil, or ctx's error. A
// cancelled ctx always wins, even over a zero d, so a cancelled caller
// never makes another attempt.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
