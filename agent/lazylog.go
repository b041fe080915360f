package agent

import (
	"context"
	"log/slog"
	"slices"
	"sync"
)

// withLazily is log.With(args...) whose attributes are given to log's
// handler (WithAttrs, which formats them) only when the first record is
// written: a task's logger carries its task id, platform, user and
// conversation, and a quiet chat (warnings only) writes no line for most
// of its messages, so formatting them per message was waste. The lines
// written are the same as log.With's. Enabled is the handler's own:
// whether a level is written does not depend on the attributes.
func withLazily(log *slog.Logger, args ...any) *slog.Logger {
	return slog.New(&lazyHandler{h: log.Handler(), attrs: slog.Group("", args...).Value.Group()})
}

// lazyHandler is h.WithAttrs(attrs), made at the first Handle.
type lazyHandler struct {
	h     slog.Handler
	attrs []slog.Attr
	once  sync.Once
	with  slog.Handler
}

func (l *lazyHandler) handler() slog.Handler {
	l.once.Do(func() { l.with = l.h.WithAttrs(l.attrs) })
	return l.with
}

func (l *lazyHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lazyHandler) Handle(ctx context.Context, r slog.Record) error {
	return l.handler().Handle(ctx, r)
}

// WithAttrs stays lazy: h.WithAttrs(a).WithAttrs(b) is h.WithAttrs(a+b).
func (l *lazyHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lazyHandler{h: l.h, attrs: append(slices.Clip(l.attrs), attrs...)}
}

func (l *lazyHandler) WithGroup(name string) slog.Handler {
	return l.handler().WithGroup(name)
}
