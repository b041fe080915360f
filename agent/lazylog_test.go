package agent

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
)

// countingHandler counts its WithAttrs calls.
type countingHandler struct {
	slog.Handler
	with *int
}

func (c countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	*c.with++
	return countingHandler{c.Handler.WithAttrs(as), c.with}
}

func (c countingHandler) WithGroup(name string) slog.Handler {
	return countingHandler{c.Handler.WithGroup(name), c.with}
}

// TestWithLazilyWritesWhatWithWrites: the lines a lazy task logger
// writes are log.With's, through further With and WithGroup calls and at
// every level, and its attributes are formatted only once a line is
// written.
func TestWithLazilyWritesWhatWithWrites(t *testing.T) {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	write := func(lazy bool) (string, int) {
		var buf bytes.Buffer
		withs := 0
		base := slog.New(countingHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: noTime}), &withs})
		args := []any{"task_id", "T1", "platform", "console", slog.Int("n", 3)}
		var log *slog.Logger
		if lazy {
			log = withLazily(base, args...)
		} else {
			log = base.With(args...)
		}
		log.Debug("not written", "k", 1)
		if lazy && withs != 0 {
			t.Errorf("a record below the level formatted the attributes (%d WithAttrs)", withs)
		}
		log.Info("first", "k", "v")
		log.Warn("second")
		log.With("step", 2).Info("third", "x", true)
		log.WithGroup("g").Error("fourth", "y", 1)
		log.Log(context.Background(), slog.LevelInfo, "fifth", "z", "w")
		return buf.String(), withs
	}
	eager, _ := write(false)
	lazy, withs := write(true)
	if lazy != eager {
		t.Errorf("lazy logger wrote\n%s\nlog.With wrote\n%s", lazy, eager)
	}
	if withs != 2 { // the task's attributes once, then the step's with them
		t.Errorf("%d WithAttrs calls, want 2", withs)
	}
}
