package openai

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestSleepCtxWaits: the default Sleep really waits the whole delay (in
// a synctest bubble, so on a fake clock), and a cancelled context always
// wins over a zero delay, so a cancelled call never makes another attempt.
func TestSleepCtxWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := sleepCtx(context.Background(), 90*time.Second); err != nil || time.Since(start) != 90*time.Second {
			t.Errorf("sleepCtx(90s) = %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		if err := sleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Errorf("cancelled after 1s: %v after %v", err, time.Since(start))
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 { // a select between two ready cases would pick the timer about half the time
		if err := sleepCtx(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("zero wait on a cancelled context, try %d: %v", i, err)
		}
	}
}

// TestLLMRedactsKeyOfMinimumLength: a key of exactly minRedactLen
// characters is a secret and is scrubbed; one character shorter is a
// placeholder and is left alone.
func TestLLMRedactsKeyOfMinimumLength(t *testing.T) {
	key := strings.Repeat("k", minRedactLen)
	if got := (&Client{apiKey: key}).redact(errors.New("bad key " + key)).Error(); got != "bad key [REDACTED]" {
		t.Errorf("%d-character key: %q", minRedactLen, got)
	}
	short := key[1:]
	if got := (&Client{apiKey: short}).redact(errors.New("bad key " + short)).Error(); got != "bad key "+short {
		t.Errorf("%d-character key: %q", len(short), got)
	}
}
