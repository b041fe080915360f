package remember

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Wait bounds how long Keep waits for the reflection of a kept message:
// past it the person is told it is still being written (their message
// stays journaled and is written all the same). Slack's response_url
// takes answers for 30 minutes, a Discord interaction's token 15.
const Wait = 5 * time.Minute

// Message, Kept and Service are the platform package's (the app
// satisfies Service).
type (
	Message = platform.KeepMessage
	Kept    = platform.Kept
	Service = platform.Keeper
)

// Errors a Service wraps.
var (
	ErrNotYours     = platform.ErrNotYours
	ErrUndoGone     = platform.ErrUndoGone
	ErrChangedSince = platform.ErrChangedSince
	ErrStillWriting = platform.ErrStillWriting
)

// Flow is "Remember this" on one platform.
type Flow struct {
	Service  Service
	Access   *access.Gate      // nil: everyone may
	Budget   pipeline.Budget   // nil: no limits
	Refusals pipeline.Refusals // nil: not counted
	Platform string
	Log      *slog.Logger // nil: discard
}

// Answer is what the person is told: Text (Markdown), and Undo, the token
// of the Undo button to show with it ("" for none).
type Answer struct {
	Text string
	Undo string
	// Kept: something was written.
	Kept bool
}

// Keep keeps m for the person who (who says, for the access rules) chose
// it: refused as a message would be (access, messages a minute, tokens a
// day), else written and confirmed, naming the files.
func (f *Flow) Keep(ctx context.Context, m Message, who access.Who) Answer {
	log := defaults.Logger(f.Log).With("user", m.User)
	if f.Access != nil {
		if ok, reply := f.Access.CheckCommand(ctx, who); !ok {
			log.Info(f.Platform + ": Remember this refused: not let in")
			return Answer{Text: reply}
		}
	}
	if f.Budget != nil {
		reason, _ := f.Budget.Message(m.User)
		held := 0
		if reason == "" {
			held, reason, _ = f.Budget.Reserve(m.User, m.Text)
		}
		if reason != "" {
			if f.Refusals != nil {
				f.Refusals.Refused(f.Platform, reason)
			}
			log.Info(f.Platform+": Remember this refused: over a budget", "reason", reason)
			return Answer{Text: pipeline.RefusalText(reason)}
		}
		// The reflection's tokens are charged to the person as it runs
		// (reflector.Config.OnTokens): the hold only checked the budget.
		defer f.Budget.Settle(m.User, held, 0)
	}
	if strings.TrimSpace(m.Text) == "" {
		return Answer{Text: "That message has no text I can keep (only attachments or embeds?): nothing was written."}
	}
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	k, err := f.Service.Keep(ctx, m)
	switch {
	case errors.Is(err, ErrStillWriting) || errors.Is(err, context.DeadlineExceeded):
		return Answer{Text: "I'm still writing that to your memory; it will be there shortly. `/memory` shows it."}
	case err != nil:
		log.Warn(f.Platform+": Remember this: could not keep the message", "err", err)
		return Answer{Text: "Sorry, I couldn't write that to your memory just now (" + plain(err) + "). It is kept in my journal and written when I can; `/memory` shows it once it is there."}
	case len(k.Paths) == 0:
		return Answer{Text: "There was nothing new to keep: your memory already has it."}
	}
	log.Info(f.Platform+": Remember this: kept", "paths", k.Paths)
	return Answer{Text: KeptText(k.Paths), Undo: k.Undo, Kept: true}
}

// KeptText confirms what was written.
func KeptText(paths []string) string {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = "`" + p + "`"
	}
	return "Kept in your private memory: " + strings.Join(quoted, ", ") + "."
}

// Undo undoes the keeping token names, for user (who pressed it); the
// answer says what happened.
func (f *Flow) Undo(user, token string) (text string, done bool) {
	paths, err := f.Service.Undo(user, token)
	switch {
	case err == nil:
		return "Undone: " + strings.Join(paths, ", ") + " is as it was before.", true
	case errors.Is(err, ErrNotYours):
		return "Only the person who kept this message can undo it.", false
	case errors.Is(err, ErrUndoGone):
		return "This Undo has expired (or was used already): nothing was changed. `/memory forget FILE` deletes a file of your memory.", false
	case errors.Is(err, ErrChangedSince):
		return "Nothing was undone: " + strings.TrimPrefix(plain(err), ErrChangedSince.Error()+": ") + ". Your memory was changed after this was kept, and an Undo never overwrites a later change; `/memory` shows what is there now.", false
	}
	defaults.Logger(f.Log).Warn(f.Platform+": Remember this: undo failed", "user", user, "err", err)
	return "Sorry, I couldn't undo that (" + plain(err) + "); nothing was changed.", false
}

// plain is err's text on one line, for a person.
func plain(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
