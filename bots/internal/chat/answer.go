package chat

import (
	"context"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
)

// Handler answers one task; *agent.Agent satisfies it.
type Handler interface {
	Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error)
}

var _ Handler = (*agent.Agent)(nil)

// Memory is what /memory needs of the memory store; cmd satisfies it.
type Memory interface {
	// Show is a readable (Markdown) account of what is remembered about
	// user, each file marked private or shared, shown to them as it is
	// (converted to the platform's markup, cut with a note past what one
	// answer holds), so it should say what it is, how to share and how to
	// forget (/memory share|private <path>, /memory forget <path> | all).
	// When channel is a channel's memory name (mnemo.ChannelKey; "" in a
	// DM, or where channels use no memory) it also shows what is
	// remembered about that channel.
	Show(user, channel string) (string, error)
	// Forget deletes one file of user's memory (path as facts/<name>.md
	// or episodes/YYYY-MM.md), or all of it when path is "". cmd also
	// drops the user's turns from the agent's short-term history
	// (agent.Agent.ForgetUser).
	Forget(user, path string) error
	Visibility
}

// Visibility is what /memory share and /memory private need of the memory
// store (Memory has it; the terminal chat uses it alone).
type Visibility interface {
	// CheckPath says whether path is a memory file name at all, so that
	// /memory forget, share and private can answer with the rules before
	// anything is done.
	CheckPath(path string) error
	// SetShared marks user's file path shared with channels (shared) or
	// private, as a write of the store (its history and metrics see it);
	// changed is false when the file already was. A missing file is an
	// error wrapping fs.ErrNotExist. Nothing changes on an error.
	SetShared(user, path string, shared bool) (changed bool, err error)
}

// ErrorReplyText is posted when the handler returns an error instead of a
// reply (the agent does so only when it never started the task), or
// panics.
const ErrorReplyText = "Sorry, I couldn't answer that just now. Please try again in a moment."

// BusyReplyText is posted when a conversation's queue is full.
const BusyReplyText = "I'm still working on your earlier messages; please wait for my answer and try again."

// Answer runs one task through h and returns the text to post: h's reply;
// mnemo.ApologyText when the reply is empty; ErrorReplyText on an error or
// a panic (logged with the stack, never re-panicked). failed reports that
// the text is not a real answer (also when the agent itself answered with
// its apology, Reply.Failed). A nil log discards.
func Answer(ctx context.Context, h Handler, t mnemo.Task, log *slog.Logger) (text string, failed bool) {
	a := AnswerTask(ctx, h, t, log)
	return a.Text, a.Failed
}

// Answered is what AnswerTask says of a task.
type Answered struct {
	Text   string // what to post (as Answer's text)
	Failed bool   // not a real answer (as Answer's failed)
	// Streamed and Cut are the reply's (mnemo.Reply): Text went to
	// Task.Stream as it was written; it broke off after words were shown.
	Streamed, Cut bool
}

// AnswerTask is Answer with what a front end that streams needs besides.
func AnswerTask(ctx context.Context, h Handler, t mnemo.Task, log *slog.Logger) (a Answered) {
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
		return Answered{Text: ErrorReplyText, Failed: true}
	case strings.TrimSpace(reply.Text) == "":
		log.Warn("the task gave no answer; answering with the apology", "task_id", reply.TaskID)
		return Answered{Text: mnemo.ApologyText, Failed: true, Cut: reply.Cut}
	case reply.Failed:
		log.Warn("answering with the agent's apology", "task_id", reply.TaskID)
		return Answered{Text: reply.Text, Failed: true, Streamed: reply.Streamed, Cut: reply.Cut}
	}
	return Answered{Text: reply.Text, Streamed: reply.Streamed}
}
