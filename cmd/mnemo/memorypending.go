package main

// `mnemo memory pending [USER] [--retry | --drop]`: the turns waiting to be
// reflected into memory and those the reflector gave up on, with their age
// and cause; --retry puts the given-up ones back in the journal for the
// next start, --drop deletes a person's waiting and given-up turns. Listing
// only reads (safe beside a running process); the changes take the data
// folder's lock, as forget does offline, and ask for a stop otherwise: the
// running reflector owns the journal.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/reflector"
)

// pending lists (or, with retry or drop, changes) the turns waiting for
// reflection of owner ("" for everyone).
func (m *memoryCmd) pending(owner string, retry, drop bool, now time.Time) error {
	switch {
	case retry && drop:
		return usageError("memory pending takes --retry or --drop, not both")
	case drop && owner == "":
		return usageError("memory pending --drop needs a user: mnemo memory pending USER --drop (it deletes what they said that is not in memory yet)")
	case (retry || drop) && mnemo.IsChannel(owner):
		return usageError("the turns said in a channel are their speakers': list them with mnemo memory pending %s, and retry or drop them by the speaker's name", shellName(owner))
	case retry || drop:
		return m.changePending(owner, retry)
	}
	list, err := reflector.ListWaiting(m.cfg.State.Dir, owner)
	if err != nil {
		return failure(err)
	}
	var b strings.Builder
	waiting, givenUp := 0, 0
	for _, w := range list {
		fmt.Fprintf(&b, "%s  %s  %s  %s\n", pendingAge(w.Time, now), w.User, orDash(w.Platform), pendingState(w))
		if w.GivenUp {
			givenUp++
		} else {
			waiting++
		}
	}
	switch {
	case len(list) == 0:
		b.WriteString("nothing is waiting to be reflected into memory\n")
	default:
		fmt.Fprintf(&b, "%d turn%s waiting to be reflected, %d given up on", waiting, plural(waiting), givenUp)
		if givenUp > 0 {
			b.WriteString("; try those again with mnemo memory pending --retry (at the next start), or delete a person's with mnemo memory pending USER --drop")
		}
		b.WriteString("\n")
	}
	if err := m.rollupsDue(&b, owner, now); err != nil {
		return failure(err)
	}
	_, err = fmt.Fprint(m.env.stdout, b.String())
	return err
}

// rollupsDue adds the roll-ups due of owner ("" for everyone) to b: the
// periods the roll-up job would make (memory.rollupAfter). It only reads.
func (m *memoryCmd) rollupsDue(b *strings.Builder, owner string, now time.Time) error {
	after := m.cfg.Memory.RollupAfter
	if after == 0 {
		return nil
	}
	owners := []string{owner}
	if owner == "" {
		var err error
		if owners, err = m.store.Owners(); err != nil {
			return err
		}
	} else if !m.hasFolder(owner) {
		return nil
	}
	n := 0
	store := wiring.RollupStore{Store: m.store}
	for _, o := range owners {
		for _, years := range []bool{false, true} {
			periods, err := reflector.Due(store, o, now, after, years)
			if err != nil {
				return err
			}
			for _, p := range periods {
				if p.Due {
					fmt.Fprintf(b, "roll-up due  %s  %s  (from %d file%s)\n", o, p.Path, len(p.Sources), plural(len(p.Sources)))
					n++
				}
			}
		}
	}
	if n > 0 {
		fmt.Fprintf(b, "%d roll-up%s due; a running mnemo makes them after the person's next reflection, or mnemo memory rollup USER now\n", n, plural(n))
	}
	return nil
}

// changePending retries or drops owner's turns, holding the data folder's
// lock.
func (m *memoryCmd) changePending(owner string, retry bool) error {
	lock, err := lockData(m.env, m.cfg, "mnemo memory pending")
	if held := (*lockHeldError)(nil); errors.As(err, &held) {
		return failure(fmt.Errorf("the reflection journal belongs to %s while it runs; stop it, then run this again", held.holder))
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	who := "everyone"
	if owner != "" {
		who = owner
	}
	if retry {
		n, err := reflector.RetryGivenUp(m.cfg.State.Dir, owner)
		if err != nil {
			return failure(err)
		}
		if n == 0 {
			_, err = fmt.Fprintf(m.env.stdout, "no turns given up on for %s\n", who)
			return err
		}
		_, err = fmt.Fprintf(m.env.stdout, "%d turn%s of %s journaled again; the next mnemo chat or mnemo serve reflects them\n", n, plural(n), who)
		return err
	}
	list, err := reflector.ListWaiting(m.cfg.State.Dir, owner)
	if err != nil {
		return failure(err)
	}
	journaled, err := reflector.ForgetJournaled(m.cfg.State.Dir, owner)
	if err != nil {
		return failure(err)
	}
	gone := map[string]bool{}
	for _, w := range list {
		if w.GivenUp && !gone[w.File] {
			if err := os.Remove(w.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return failure(fmt.Errorf("memory pending --drop: %w", err))
			}
			gone[w.File] = true
		}
	}
	n := journaled
	for _, w := range list {
		if w.GivenUp {
			n++
		}
	}
	_, err = fmt.Fprintf(m.env.stdout, "dropped %d turn%s of %s that were not in memory yet\n", n, plural(n), owner)
	return err
}

// pendingState is what became of a waiting turn so far.
func pendingState(w reflector.Waiting) string {
	s := "waiting"
	if w.ChannelKey != "" {
		s = "waiting (said in " + w.ChannelKey + ")"
	}
	switch {
	case w.GivenUp:
		return fmt.Sprintf("given up after %d failed runs: %s", reflector.MaxAttempts, orDash(w.Cause))
	case w.Attempts > 0:
		return fmt.Sprintf("%s; %d failed run%s so far, retried at the next reflection", s, w.Attempts, plural(w.Attempts))
	}
	return s
}

// pendingAge is when t was, as an age a person reads at a glance.
func pendingAge(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
