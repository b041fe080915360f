package pipeline

// What a platform implements for the pipeline: Platform, and the optional
// interfaces a platform adds when it can do more (Streamer, Canceller,
// Dropper, Attacher; Drafter is in draft.go), and the usual journal form
// of its messages (Wire, DecodeJSON).

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// Platform is what a chat platform does for the pipeline. M is its message
// type, a pointer embedding Message.
type Platform[M Incoming] interface {
	// Encode is m as the journal keeps it; Decode gives it back after a
	// restart (an error drops the entry, logged), logging to log.
	Encode(m M) []byte
	Decode(e intake.Entry, log *slog.Logger) (M, error)
	// Ack tells the platform that m was received (it is durable, or was
	// known already); a platform that needs no acknowledgement does nothing.
	Ack(ctx context.Context, m M)
	// Typing shows that the bot works on m until stop is called: before
	// the reply is posted, or after it with Options.TypingUntilPosted.
	Typing(ctx context.Context, m M) (stop func())
	// Prepare completes the task for m before the handler runs it: the
	// speaker, the channel's memory, the earlier messages of the thread.
	// A panic in it is answered politely, as one in the handler is.
	Prepare(ctx context.Context, m M, t *mnemo.Task)
	// Parts renders text as the messages of m's reply (at most the
	// platform's limit; never none).
	Parts(m M, text string) []string
	// PostPart posts part i of m's reply.
	PostPart(ctx context.Context, m M, i int, part string) error
	// Posted is how many of parts, m's reply, the platform shows already
	// (a crash interrupted the post); 0 when it cannot tell.
	Posted(ctx context.Context, m M, parts []string) int
}

// Streamer is a Platform that shows a reply itself while it is written
// (optional; the terminal, which prints the words as they come): the task's
// Stream is Stream(m), and the reply's Answered is handed to Answered
// before the reply is posted, so that the platform finishes what it showed
// (a cut note after a cut stream) rather than showing it again.
type Streamer[M Incoming] interface {
	Stream(m M) mnemo.Stream
	Answered(m M, a Answered)
}

// Canceller is a Platform whose person may cancel an answer while it is
// written (optional; the terminal's Ctrl-C): m's task runs under
// TaskContext(ctx, m), which ends when they do.
type Canceller[M Incoming] interface {
	TaskContext(ctx context.Context, m M) context.Context
}

// Dropper is a Platform told of a message that will not be answered
// because its person's memory was forgotten while it waited (optional;
// the terminal, whose person waits for every answer).
type Dropper[M Incoming] interface {
	Dropped(m M)
}

// Attacher is a Platform whose messages may carry files (optional; Slack,
// Discord): Attach returns what the model is given of m's files, added to
// its text before its budget is held, so the budget counts it. It runs
// when m is answered, after a restart too: the journal keeps the files'
// names and addresses, not their text.
type Attacher[M Incoming] interface {
	Attach(ctx context.Context, m M) string
}

// Wire is a message as a platform journals it (W, JSON) that gives back
// the message to answer (M): Valid checks the ids a reply is addressed
// with, Incoming rebuilds the message of entry e, logging to log.
type Wire[M any] interface {
	Valid() bool
	Incoming(e intake.Entry, log *slog.Logger) M
}

// DecodeJSON is the usual Platform.Decode: the entry's data as JSON into
// a W, which must be Valid, and the message it gives back.
func DecodeJSON[W Wire[M], M any](e intake.Entry, log *slog.Logger) (M, error) {
	var w W
	var zero M
	if err := json.Unmarshal(e.Data, &w); err != nil {
		return zero, err
	}
	if !w.Valid() {
		return zero, errors.New("malformed ids")
	}
	return w.Incoming(e, log), nil
}
