package reflector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// rollupState is where the roll-up job keeps, per owner, the day it last
// looked (at most one look a day after reflections) and the day of each
// period's last model call (at most one a day, whatever fails), in
// StateDir/rollup/<owner>.json: a restart resets neither.
type rollupState struct{ dir string }

type ownerRollups struct {
	Checked string            `json:"checked,omitempty"` // YYYY-MM-DD
	Tried   map[string]string `json:"tried,omitempty"`   // roll-up path → YYYY-MM-DD
	// All: every period counts as tried on this day (the file was found
	// damaged: which calls were made that day is unknown).
	All string `json:"all,omitempty"`
}

// tried reports whether period p had its call on day.
func (st ownerRollups) tried(p, day string) bool { return st.All == day || st.Tried[p] == day }

func rollupDir(stateDir string) string { return filepath.Join(stateDir, "rollup") }

func (s *rollupState) name(owner string) string { return owner + ".json" }

// load reads owner's state; a damaged file reads as a state where every
// period was tried today, so the daily bound holds whatever was lost.
func (s *rollupState) load(owner, today string) (ownerRollups, error) {
	var st ownerRollups
	data, err := os.ReadFile(filepath.Join(s.dir, s.name(owner)))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("rollup state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return ownerRollups{Checked: today, All: today}, nil
	}
	return st, nil
}

func (s *rollupState) save(owner string, st ownerRollups) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("rollup state: %w", err)
	}
	data, _ := json.Marshal(st) // strings only: cannot fail
	if err := durable.WriteFile(durable.Dir(s.dir), s.name(owner), data, durable.WriteOptions{}); err != nil {
		return fmt.Errorf("rollup state: %w", err)
	}
	return nil
}

// ForgetRollups deletes owner's roll-up state (a forget of everything
// they have): the next look starts afresh.
func ForgetRollups(stateDir, owner string) error {
	err := os.Remove(filepath.Join(rollupDir(stateDir), owner+".json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rollup state: %w", err)
	}
	return nil
}
