package clock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Sleep really waits the whole delay (in a synctest bubble, so on a fake
// clock) and returns early when ctx ends.
func TestSleepWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(context.Background(), 90*time.Second); err != nil || time.Since(start) != 90*time.Second {
			t.Errorf("Sleep(90s) = %v after %v", err, time.Since(start))
		}
		if err := Sleep(context.Background(), 0); err != nil || time.Since(start) != 90*time.Second {
			t.Errorf("Sleep(0) = %v, or it waited", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Errorf("cancelled after 1s: %v after %v", err, time.Since(start))
		}
	})
}

// A cancelled context always wins over a zero or a long delay.
func TestSleepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 { // a select between two ready cases would pick the timer about half the time
		if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("zero wait on a cancelled context, try %d: %v", i, err)
		}
	}
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("long wait on a cancelled context: %v", err)
	}
}

// Or gives the system clock for nil, and its timers fire.
func TestOrReal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Or(nil)
		if _, ok := c.(Real); !ok || !c.Now().Equal(time.Now()) {
			t.Fatalf("Or(nil) = %#v", c)
		}
		tm := c.NewTimer(time.Minute)
		start := time.Now()
		if at := <-tm.C(); at.Sub(start) != time.Minute || tm.Stop() {
			t.Errorf("timer fired at +%v; Stop after firing = true", at.Sub(start))
		}
		if tm := c.NewTimer(time.Minute); !tm.Stop() {
			t.Error("Stop of a pending timer = false")
		}
	})
	if c := Or(Real{}); c != (Real{}) {
		t.Errorf("Or(c) = %#v, want c", c)
	}
}
