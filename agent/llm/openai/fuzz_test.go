package openai

import (
	"net/http"
	"testing"
	"time"
)

// FuzzRetryAfter: any Retry-After / retry-after-ms a server sends gives a
// non-negative wait or none — never a panic, never a negative sleep.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "1.5", "-3", "NaN", "Inf", "1e308", "Wed, 21 Oct 2015 07:28:00 GMT", "", "soon"} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, after, afterMs string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", afterMs)
		d, ok := retryAfter(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("retryAfter(%q, %q) = %v, %v", after, afterMs, d, ok)
		}
	})
}
