package platform

import (
	"context"
	"errors"
	"time"

	"github.com/mnemo-agent/mnemo"
)

// KeepMessage is a message a person asked mnemo to keep ("Remember this":
// a Slack message shortcut, a Discord message command, the terminal's
// /memory remember).
type KeepMessage struct {
	// User is the memory user of the person who chose it (never its
	// author's, unless they wrote it); Speaker their display name.
	User, Speaker string
	Platform      string
	// Author is the display name of who wrote it; Own: the person did.
	Author string
	Own    bool
	Text   string
	// Time is when it was written; Origin where (its place and link).
	Time   time.Time
	Origin mnemo.Origin
}

// Kept is what keeping a message wrote.
type Kept struct {
	// Paths are the memory files written, in order.
	Paths []string
	// Undo names the change for Keeper.Undo ("" when there is nothing to
	// undo).
	Undo string
}

// Keeper is "Remember this" as the app runs it: Keep hands the message to
// the reflector as an explicit request, into the person's private memory,
// and waits for it (until ctx ends: ErrStillWriting); Undo brings the
// files it wrote back to their versions before, for user only (who kept
// it).
type Keeper interface {
	Keep(ctx context.Context, m KeepMessage) (Kept, error)
	Undo(user, token string) (paths []string, err error)
}

// Errors a Keeper wraps, each answered in words of its own.
var (
	// ErrNotYours: someone other than the person who kept it pressed Undo.
	ErrNotYours = errors.New("not yours to undo")
	// ErrUndoGone: the Undo is unknown (expired, used, or from before a restart).
	ErrUndoGone = errors.New("no such undo")
	// ErrChangedSince: a file was changed after it was kept; nothing was undone.
	ErrChangedSince = errors.New("changed since it was kept")
	// ErrStillWriting: the reflection did not end in time; it goes on.
	ErrStillWriting = errors.New("still being written")
)
