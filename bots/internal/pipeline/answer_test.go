package pipeline

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
)

// handlerFunc adapts a function to mnemo.Handler.
type handlerFunc func(context.Context, mnemo.Task) (mnemo.Reply, error)

func (f handlerFunc) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) { return f(ctx, t) }

func TestAnswerFailures(t *testing.T) {
	for _, c := range []struct {
		name    string
		reply   mnemo.Reply
		err     error
		panic   any
		want    string
		failed  bool
		logWant string
	}{
		{name: "reply", reply: mnemo.Reply{Text: "hi"}, want: "hi"},
		{name: "apology", reply: mnemo.Reply{Text: mnemo.ApologyText, Failed: true, TaskID: "t1"}, want: mnemo.ApologyText, failed: true,
			logWant: "answering with the agent's apology"},
		{name: "empty", reply: mnemo.Reply{Text: " \n"}, want: mnemo.ApologyText, failed: true, logWant: "no answer"},
		{name: "error", reply: mnemo.Reply{Text: "ignored"}, err: context.Canceled, want: ErrorReplyText, failed: true,
			logWant: "did not run"},
		{name: "panic", panic: "boom", want: ErrorReplyText, failed: true, logWant: "task panicked"},
		{name: "panic error", panic: errors.New("bad"), want: ErrorReplyText, failed: true, logWant: "stack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := handlerFunc(func(_ context.Context, task mnemo.Task) (mnemo.Reply, error) {
				if task.Text != "q" {
					t.Errorf("task %+v", task)
				}
				if c.panic != nil {
					panic(c.panic)
				}
				return c.reply, c.err
			})
			a := Answer(t.Context(), h, mnemo.Task{Text: "q"}, slog.New(slog.NewTextHandler(&buf, nil)))
			text, failed := a.Text, a.Failed
			if text != c.want || failed != c.failed {
				t.Errorf("Answer = %q, %v; want %q, %v", text, failed, c.want, c.failed)
			}
			if !strings.Contains(buf.String(), c.logWant) || (c.logWant == "") != (buf.Len() == 0) {
				t.Errorf("log %q; want %q", buf.String(), c.logWant)
			}
		})
	}
	// A nil logger discards.
	if a := Answer(t.Context(), handlerFunc(func(context.Context, mnemo.Task) (mnemo.Reply, error) { panic("x") }),
		mnemo.Task{}, nil); a.Text != ErrorReplyText || !a.Failed {
		t.Errorf("nil log: %q %v", a.Text, a.Failed)
	}
}
