// Package remembertest is a fake of the app's "Remember this"
// (platform.Keeper) for the adapters' tests: it records the messages it is
// asked to keep, answers with the files it is told to have written, and
// undoes like the app — once, for the person who kept it, not after a
// later keeping of the same file.
package remembertest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Keeper is a fake platform.Keeper. Its zero value writes
// episodes/2026-11.md for every message.
type Keeper struct {
	mu sync.Mutex
	// Paths are the files a keeping writes (nil: episodes/2026-11.md).
	Paths []string
	// Err, when set, is Keep's error.
	Err  error
	kept []platform.KeepMessage
	// undos: token → who kept it, and the keeping's number (a later
	// keeping makes earlier ones stale).
	undos  map[string]undo
	undone []string
	n      int
}

type undo struct {
	user string
	n    int
}

var _ platform.Keeper = (*Keeper)(nil)

// Keep records m.
func (k *Keeper) Keep(_ context.Context, m platform.KeepMessage) (platform.Kept, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept = append(k.kept, m)
	if k.Err != nil {
		return platform.Kept{}, k.Err
	}
	paths := k.Paths
	if paths == nil {
		paths = []string{"episodes/2026-11.md"}
	}
	if k.undos == nil {
		k.undos = map[string]undo{}
	}
	k.n++
	tok := fmt.Sprintf("undo-%d", k.n)
	k.undos[tok] = undo{m.User, k.n}
	return platform.Kept{Paths: slices.Clone(paths), Undo: tok}, nil
}

// Undo undoes token for user, as the app does.
func (k *Keeper) Undo(user, token string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	u, ok := k.undos[token]
	switch {
	case !ok:
		return nil, platform.ErrUndoGone
	case u.user != user:
		return nil, platform.ErrNotYours
	case u.n != k.n:
		return nil, fmt.Errorf("%w: episodes/2026-11.md was changed after it was kept", platform.ErrChangedSince)
	}
	delete(k.undos, token)
	k.undone = append(k.undone, token)
	return []string{"episodes/2026-11.md"}, nil
}

// Kept are the messages Keep was given, in order.
func (k *Keeper) Kept() []platform.KeepMessage {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.kept)
}

// Undone are the tokens undone, in order.
func (k *Keeper) Undone() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.undone)
}
