package reflector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/defaults"
)

// ForgetFile makes the memory file p of user (facts/food.md) a tombstone
// for every turn of user waiting to be reflected, in memory and in the
// journal: their reflections may not write p (nor its shared or private
// twin) again, while the turns themselves stay and are reflected into the
// rest of the memory. A turn added after ForgetFile returns may write p. A
// run not yet running over such turns restarts afresh; one running is
// waited for (bounded by ctx), so that p deleted after ForgetFile returns
// is not written again from an older conversation. It returns how many
// turns it marked.
func (r *Reflector) ForgetFile(ctx context.Context, user, p string) (int, error) {
	if err := validUser(user); err != nil {
		return 0, err
	}
	total := 0
	for {
		r.mu.Lock()
		u := r.acquire(user, false)
		closed := r.closing
		r.mu.Unlock()
		if u == nil && closed {
			return forgetFileIn(r.j, user, p) // the loops end at Close; failed runs' turns stay journaled
		}
		if u == nil {
			return total, nil // nothing (left) pending
		}
		var (
			n       int
			running <-chan struct{}
			err     error
		)
		u.exec(func() { n, running, err = u.tombstone(p) })
		total = max(total, n)
		if err != nil {
			return total, fmt.Errorf("forget %s in the journaled turns of %s: %w", p, user, err)
		}
		if running == nil {
			return total, nil
		}
		select {
		case <-running: // and again: its turns are marked now, and the journal is written
		case <-ctx.Done():
			return total, fmt.Errorf("a reflection of %s is still running: %w", user, ctx.Err())
		}
	}
}

// tombstone marks p forgotten in the queued turns. While a run is in
// progress it returns its done channel and writes nothing: the run reads
// its turns and journals its records, so its turns are marked when it
// ends (finish) and the journal is rewritten at the next call. With no
// run in progress, a run open over the turns is dropped (it restarts
// afresh) and the journal rewritten.
func (u *userState) tombstone(p string) (n int, running <-chan struct{}, err error) {
	n = markForgotten(u.queued, p)
	if u.busy {
		u.runningForgotten = append(u.runningForgotten, p)
		return n + len(u.running), u.done, nil
	}
	if n == 0 {
		return 0, nil, nil
	}
	u.run = nil
	u.r.log.Info("reflection: a forgotten file is kept out of the reflections of earlier turns", "user", u.name, "path", p, "turns", n)
	return n, nil, u.r.j.rewrite(u.name, u.queued, nil)
}

// ForgetFileJournaled marks p forgotten in user's journaled turns in
// stateDir, for a process that owns the data folder but runs no Reflector
// (`mnemo memory forget USER PATH` while no chat or server runs). A running
// Reflector must use ForgetFile instead.
func ForgetFileJournaled(stateDir, user, p string) (int, error) {
	if err := validUser(user); err != nil {
		return 0, err
	}
	return forgetFileIn(newJournal(filepath.Join(stateDir, "reflector"), nil), user, p)
}

// forgetFileIn marks p forgotten in user's journal file; a run journaled
// over its turns is dropped (it restarts afresh).
func forgetFileIn(j *journal, user, p string) (int, error) {
	data, err := os.ReadFile(j.path(user))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reflector: forget %s in the journal of %s: %w", p, user, err)
	}
	entries, _, _ := parseJournal(user, j.path(user), data, defaults.Logger(nil))
	n := markForgotten(entries, p)
	if n == 0 {
		return 0, nil
	}
	if err := j.rewrite(user, entries, nil); err != nil {
		return 0, fmt.Errorf("reflector: forget %s in the journal of %s: %w", p, user, err)
	}
	return n, nil
}

// markForgotten adds p to every entry's forgotten files (in place) and
// says how many entries there are.
func markForgotten(entries []entry, p string) int {
	for i := range entries {
		if !slices.Contains(entries[i].forgotten, p) {
			entries[i].forgotten = append(slices.Clip(entries[i].forgotten), p)
		}
	}
	return len(entries)
}

// forgottenIn is the files a batch's reflection may not write, by their
// plain name (plainName).
func forgottenIn(batch []entry) map[string]bool {
	var gone map[string]bool
	for _, e := range batch {
		for _, p := range e.forgotten {
			if gone == nil {
				gone = map[string]bool{}
			}
			gone[plainName(p)] = true
		}
	}
	return gone
}

// plainName is a memory path without ".shared" (facts/food.shared.md is
// facts/food.md's twin in channels): a file forgotten is forgotten in both.
func plainName(p string) string {
	if rest, ok := strings.CutSuffix(p, ".shared.md"); ok {
		return rest + ".md"
	}
	return p
}

// writeTools are the tools that change a file named by their "path".
var writeTools = map[string]bool{"memory_write": true, "memory_patch": true, "memory_append": true}

// refuseForgotten makes t refuse to change a file in gone, with a tool
// error that says why; t itself when there is nothing to refuse.
func refuseForgotten(t mnemo.Tool, gone map[string]bool) mnemo.Tool {
	if len(gone) == 0 || !writeTools[t.Name] {
		return t
	}
	inner := t.Call
	t.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(args, &a) == nil && gone[plainName(a.Path)] {
			return "", fmt.Errorf("%s was forgotten at the person's request after this conversation: nothing said in it may be written there again; leave it out", a.Path)
		}
		return inner(ctx, args)
	}
	return t
}
