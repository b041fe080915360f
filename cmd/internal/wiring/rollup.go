package wiring

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// RollupStore is reflector.RollupStore over a memory store: the roll-up
// job reads month files and writes roll-ups through the store's one
// write path (atomic, conflict-checked, told to the history).
type RollupStore struct {
	Store *memory.Store
	// OnCommit, when set, is told of each roll-up just before it is
	// written.
	OnCommit func(memory.Commit)
}

var _ reflector.RollupStore = RollupStore{}

// Episodes lists every episode file of owner, the covered months too.
func (r RollupStore) Episodes(owner string) ([]string, error) {
	u, err := r.Store.User(owner)
	if err != nil {
		return nil, err
	}
	files, err := u.List()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if strings.HasPrefix(f.Path, "episodes/") {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

// Read is the text of owner's file p and its version ("" when absent).
func (r RollupStore) Read(owner, p string) (string, string, error) {
	u, err := r.Store.User(owner)
	if err != nil {
		return "", "", err
	}
	d, err := u.Read(p)
	if errors.Is(err, memory.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return d.Text, versionID(d.Version), nil
}

// WriteRollup writes roll-up p if it is still at version base.
func (r RollupStore) WriteRollup(owner, p, text, base string) error {
	u, err := r.Store.User(owner)
	if err != nil {
		return err
	}
	cur, err := u.Version(p)
	if err != nil {
		return err
	}
	if versionID(cur) != base {
		return fmt.Errorf("%s %w since the roll-up was planned: the edit is kept, the roll-up made again next time", p, memory.ErrConflict)
	}
	_, err = u.WriteRollup(p, text, cur, func(c memory.Commit) error {
		if r.OnCommit != nil {
			r.OnCommit(c)
		}
		return nil
	})
	return err
}
