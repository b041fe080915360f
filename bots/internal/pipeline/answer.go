package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/mnemo-agent/mnemo"
)

// ErrorReplyText is posted when the handler returns an error instead of a
// reply (the agent does so only when it never started the task), or
// panics.
const ErrorReplyText = "Sorry, I couldn't answer that just now. Please try again in a moment."

// BusyReplyText is posted when a conversation's queue is full.
const BusyReplyText = "I'm still working on your earlier messages; please wait for my answer and try again."

// Answered is what Answer says of a task.
type Answered struct {
	Text   string // what to post
	Failed bool   // not a real answer (also when the agent answered with its apology, Reply.Failed)
	// Streamed and Cut are the reply's (mnemo.Reply): Text went to
	// Task.Stream as it was written; it broke off after words were shown.
	Streamed, Cut bool
	// Cancelled: it failed because it was cancelled (a person's Ctrl-C,
	// shutdown's grace over), not for a fault of the model.
	Cancelled bool
}

// Answer runs one task through h and says what to post: h's reply;
// mnemo.ApologyText when the reply is empty; ErrorReplyText on an error or
// a panic (logged with the stack, never re-panicked). A nil log discards.
func Answer(ctx context.Context, h mnemo.Handler, t mnemo.Task, log *slog.Logger) (a Answered) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("task panicked", "panic", r, "stack", string(debug.Stack()))
			a = Answered{Text: ErrorReplyText, Failed: true}
		}
	}()
	reply, err := h.Handle(ctx, t)
	switch {
	case err != nil:
		log.Warn("the task did not run", "error", err)
		return Answered{Text: ErrorReplyText, Failed: true, Cancelled: errors.Is(err, context.Canceled)}
	case strings.TrimSpace(reply.Text) == "":
		log.Warn("the task gave no answer; answering with the apology", "task_id", reply.TaskID)
		return Answered{Text: mnemo.ApologyText, Failed: true, Cut: reply.Cut}
	case reply.Failed:
		log.Warn("answering with the agent's apology", "task_id", reply.TaskID)
		return Answered{Text: reply.Text, Failed: true, Streamed: reply.Streamed, Cut: reply.Cut, Cancelled: errors.Is(reply.Err, context.Canceled)}
	}
	return Answered{Text: reply.Text, Streamed: reply.Streamed}
}
