package reflector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Waiting is a turn the reflector has not turned into memory: journaled
// and waiting for its run, or given up on after MaxAttempts failed runs.
type Waiting struct {
	User, TaskID, Platform string
	ChannelKey             string    // the channel it was said in ("" in a DM)
	Time                   time.Time // when it was said
	Attempts               int       // failed runs that covered it
	GivenUp                bool
	Cause                  string // why it was given up (the last run's error); "" while waiting
	File                   string // the file that holds it
}

// Owns reports whether w belongs to owner: a person's turns, or a
// channel's (mnemo.ChannelKey) turns said in it.
func (w Waiting) Owns(owner string) bool {
	if mnemo.IsChannel(owner) {
		return w.ChannelKey == owner
	}
	return w.User == owner
}

// ListWaiting reads the turns journaled in stateDir and those given up on,
// of owner (a user or a channel; everyone's when ""), oldest first. It only
// reads, so it is safe beside a running process (a turn it lists may be
// reflected a moment later).
func ListWaiting(stateDir, owner string) ([]Waiting, error) {
	j := newJournal(filepath.Join(stateDir, "reflector"), nil)
	des, err := os.ReadDir(j.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reflector: list the journal: %w", err)
	}
	var out []Waiting
	for _, de := range des {
		user, ok := strings.CutSuffix(de.Name(), journalExt)
		if !ok || !de.Type().IsRegular() || isTemp(de.Name()) || validUser(user) != nil {
			continue
		}
		p := j.path(user)
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // reflected and removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("reflector: read %s: %w", p, err)
		}
		entries, _, _ := parseJournal(user, p, data, j.log)
		out = appendWaiting(out, entries, owner, p, false, "")
	}
	failed, err := FailedTurns(stateDir)
	if err != nil {
		return nil, fmt.Errorf("reflector: list the turns given up on: %w", err)
	}
	for _, f := range failed {
		entries, cause, err := readFailed(f)
		if err != nil {
			return nil, err
		}
		out = appendWaiting(out, entries, owner, f.Path, true, cause)
	}
	slices.SortStableFunc(out, func(a, b Waiting) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func appendWaiting(out []Waiting, entries []entry, owner, file string, givenUp bool, cause string) []Waiting {
	for _, e := range entries {
		t := e.turn
		w := Waiting{User: t.User, TaskID: t.TaskID, Platform: t.Platform, ChannelKey: t.ChannelKey, Time: t.Time,
			Attempts: e.attempts, GivenUp: givenUp, Cause: cause, File: file}
		if owner == "" || w.Owns(owner) {
			out = append(out, w)
		}
	}
	return out
}

// readFailed reads a file of turns given up on: its turns and why.
func readFailed(f Failed) (entries []entry, cause string, err error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil // retried or dropped since the listing
	}
	if err != nil {
		return nil, "", fmt.Errorf("reflector: read %s: %w", f.Path, err)
	}
	entries, _, _ = parseJournal(f.User, f.Path, data, slog.New(slog.DiscardHandler))
	durable.Scan(data, func(line []byte) error {
		var rec failedRecord
		if json.Unmarshal(line, &rec) == nil && rec.Kind == "failed" {
			cause = rec.Error
		}
		return nil
	}, func(int, bool, error) {})
	return entries, cause, nil
}

// RetryGivenUp puts the turns given up on of user (everyone's when "")
// back into the journal, their attempts counted afresh, so the next start
// reflects them; it returns how many. Call it only while no process runs a
// Reflector on stateDir (the data folder's lock held): the journal is
// rewritten. A crash in between leaves the turns in both places, so they
// may be reflected twice, never lost.
func RetryGivenUp(stateDir, user string) (int, error) {
	if user != "" {
		if err := validUser(user); err != nil {
			return 0, err
		}
	}
	failed, err := FailedTurns(stateDir)
	if err != nil {
		return 0, fmt.Errorf("reflector: list the turns given up on: %w", err)
	}
	j := newJournal(filepath.Join(stateDir, "reflector"), nil)
	n := 0
	for _, f := range failed {
		if user != "" && f.User != user || validUser(f.User) != nil {
			continue
		}
		retried, _, err := readFailed(f)
		if err != nil {
			return n, err
		}
		for i := range retried {
			retried[i].attempts = 0
		}
		// After the turns journaled now: a run in progress covers the
		// first of those, and stays valid.
		entries, run, err := j.load(f.User, j.log)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		if err := j.rewrite(f.User, append(entries, retried...), run); err != nil {
			return n, err
		}
		if err := os.Remove(f.Path); err != nil {
			return n, fmt.Errorf("reflector: the turns of %s are journaled again, but %s could not be removed (delete it, or they are reflected twice): %w", f.User, f.Path, err)
		}
		n += len(retried)
	}
	j.closeAll()
	return n, nil
}

// closeAll closes the journal files opened by an offline operation.
func (j *journal) closeAll() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, jf := range j.files {
		_ = jf.log.Close()
	}
}
