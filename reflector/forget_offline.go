package reflector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ForgetJournaled drops user's journaled turns from the journal in
// stateDir, for a process that owns the data folder but runs no Reflector
// (`mnemo memory forget` while no chat or server runs), so that the next
// start does not reflect them back into a memory that was deleted. It
// returns how many turns were dropped; no journal is 0 and no error. A
// running Reflector must use Forget instead.
func ForgetJournaled(stateDir, user string) (int, error) {
	if err := validUser(user); err != nil {
		return 0, err
	}
	return newJournal(filepath.Join(stateDir, "reflector"), nil).forget(user)
}

// forget drops user's journaled turns and returns how many there were.
func (j *journal) forget(user string) (int, error) {
	data, err := os.ReadFile(j.path(user))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reflector: forget the journaled turns of %s: %w", user, err)
	}
	entries, _, _ := parseJournal(user, j.path(user), data, j.log) // reflected turns are not counted
	n := len(entries)
	if err := j.rewrite(user, nil, nil); err != nil {
		return 0, fmt.Errorf("reflector: forget the journaled turns of %s: %w", user, err)
	}
	return n, nil
}
