package reflector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/defaults"
)

// ForgetChannel detaches the channel key (an mnemo.ChannelKey) from every
// turn waiting to be reflected, in memory and in the journal, and waits
// (bounded by ctx) for a run that is reflecting that channel's turns to
// end — so that a channel's memory deleted after ForgetChannel returns is
// not written again from older conversations. The turns themselves stay:
// what each person said is still reflected into their own shared files,
// only no longer into the channel's memory. It returns how many turns it
// detached.
func (r *Reflector) ForgetChannel(ctx context.Context, key string) (int, error) {
	if err := mnemo.ValidateChannel(key); err != nil {
		return 0, fmt.Errorf("reflector: %w", err)
	}
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		// The loops end at Close, and turns whose run failed stay
		// journaled: detach them there.
		return forgetChannelFiles(r.j, key)
	}
	r.mu.Unlock()
	total := 0
	var errs []error
	// Each pass takes the users as they are then: a loop may have ended
	// (and a new one begun) between two.
	detachAll := func() []<-chan struct{} {
		r.mu.Lock()
		users := make([]*userState, 0, len(r.users))
		for name := range r.users {
			users = append(users, r.acquire(name, false))
		}
		r.mu.Unlock()
		var running []<-chan struct{}
		for _, u := range users {
			var n int
			var done <-chan struct{}
			var err error
			u.exec(func() { n, done, err = u.detach(key) })
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("forget the channel %s in the journaled turns of %s: %w", key, u.name, err))
			}
			if done != nil {
				running = append(running, done)
			}
		}
		return running
	}
	for _, done := range detachAll() {
		select {
		case <-done:
		case <-ctx.Done():
			return total, fmt.Errorf("a reflection of the channel %s is still running: %w", key, ctx.Err())
		}
	}
	detachAll() // what a run that ended meanwhile left queued again
	return total, errors.Join(errs...)
}

// detach removes key from the queued turns (a run open over one of them is
// restarted afresh, as it may have read the channel's memory) and returns
// the done channel of a running run whose turns are that channel's.
func (u *userState) detach(key string) (n int, running <-chan struct{}, err error) {
	if u.busy && len(u.running) > 0 && u.running[0].turn.ChannelKey == key {
		running = u.done
	}
	open := 0 // the queued turns a run not yet running is open over
	if !u.busy && u.run != nil {
		open = u.run.turns
	}
	n, overRun := detachKey(u.queued, key, open)
	if overRun {
		u.run = nil
	}
	if n == 0 {
		return 0, running, nil
	}
	u.r.log.Info("reflection: turns detached from a forgotten channel; they are reflected without its memory", "user", u.name, "channel", key, "turns", n)
	// The file holds the running run's turns too, before the queued ones.
	entries := u.queued
	if u.busy {
		entries = append(append([]entry(nil), u.running...), u.queued...)
	}
	return n, running, u.r.j.rewrite(u.name, entries, u.run)
}

// ForgetChannelJournaled detaches the channel key from every turn in the
// journal in stateDir, for a process that owns the data folder but runs
// no Reflector (`mnemo memory forget '#…'` while no chat or server runs).
// A running Reflector must use ForgetChannel instead.
func ForgetChannelJournaled(stateDir, key string) (int, error) {
	if err := mnemo.ValidateChannel(key); err != nil {
		return 0, fmt.Errorf("reflector: %w", err)
	}
	return forgetChannelFiles(newJournal(filepath.Join(stateDir, "reflector"), nil), key)
}

// forgetChannelFiles detaches key in every user's journal file; a run
// journaled over a detached turn is dropped (it restarts afresh).
func forgetChannelFiles(j *journal, key string) (int, error) {
	des, err := os.ReadDir(j.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reflector: read the journal folder: %w", err)
	}
	total := 0
	for _, de := range des {
		user, ok := strings.CutSuffix(de.Name(), journalExt)
		if !ok || validUser(user) != nil || !de.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(j.path(user))
		if err != nil {
			return total, fmt.Errorf("reflector: forget the channel %s in the journal of %s: %w", key, user, err)
		}
		entries, run, _ := parseJournal(user, j.path(user), data, defaults.Logger(nil))
		open := 0
		if run != nil {
			open = run.turns
		}
		n, overRun := detachKey(entries, key, open)
		if overRun {
			run = nil
		}
		if n == 0 {
			continue
		}
		if err := j.rewrite(user, entries, run); err != nil {
			return total, fmt.Errorf("reflector: forget the channel %s in the journal of %s: %w", key, user, err)
		}
		total += n
	}
	return total, nil
}

// detachKey removes the channel key from entries (in place) and says how
// many it changed and whether one of them is among the first open, which
// a run is open over: that run may have read the channel's memory, so it
// restarts afresh.
func detachKey(entries []entry, key string, open int) (n int, overRun bool) {
	for i := range entries {
		if entries[i].turn.ChannelKey == key {
			entries[i].turn.ChannelKey = ""
			overRun = overRun || i < open
			n++
		}
	}
	return n, overRun
}
