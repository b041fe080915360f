package defaults

import (
	"bytes"
	"log/slog"
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	if got := Positive(0, 8); got != 8 {
		t.Errorf("Positive(0, 8) = %d", got)
	}
	if got := Positive(-1, 8); got != 8 {
		t.Errorf("Positive(-1, 8) = %d", got)
	}
	if got := Positive(3, 8); got != 3 {
		t.Errorf("Positive(3, 8) = %d", got)
	}
	if got := Positive(time.Duration(0), time.Minute); got != time.Minute {
		t.Errorf("Positive(0s, 1m) = %s", got)
	}
	if got := Positive(time.Second, time.Minute); got != time.Second {
		t.Errorf("Positive(1s, 1m) = %s", got)
	}
	if got := Positive(0.5, 2); got != 0.5 {
		t.Errorf("Positive(0.5, 2) = %v", got)
	}
}

func TestLogger(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(slog.NewTextHandler(&b, nil))
	if Logger(l) != l {
		t.Error("a given logger is not kept")
	}
	d := Logger(nil)
	d.Error("dropped")
	if d == nil || d.Enabled(t.Context(), slog.LevelError) {
		t.Errorf("nil logger: got %v, want one that discards", d)
	}
}
