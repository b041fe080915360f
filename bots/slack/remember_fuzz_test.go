package slack

import (
	"testing"
	"time"
)

// FuzzSlackTime: any ts from a payload gives a time, never a panic; one
// that is not a positive Unix time gives now.
func FuzzSlackTime(f *testing.F) {
	for _, s := range []string{"1763636400.000100", "1763636400", "", ".", "x.1", "-1.5", "99999999999999999999.1", "1.1234567890"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ts string) {
		got := slackTime(ts, now)
		if got.IsZero() || got.Location() != time.UTC {
			t.Errorf("slackTime(%q) = %v", ts, got)
		}
	})
}
