package userdata

import (
	"context"
	"errors"
	"fmt"

	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
)

// rollups are the roll-ups of old episode months (memory.IsRollup) and
// the roll-up job's state: a forget of a month deletes the roll-ups that
// summarise it (its quarter's and its year's) with their history, so
// nothing of it stays in a summary; the job makes them again from the
// months that remain. A forget of everything deletes the job's state.
type rollups struct {
	store    *memory.Store
	hist     *memhistory.Store // nil: offline without the history, or kept
	stateDir string
}

func (r *rollups) Name() string { return "roll-ups of old episodes" }

func (r *rollups) Forget(_ context.Context, req Request) (Dropped, error) {
	if req.Path == "" {
		return Dropped{}, reflector.ForgetRollups(r.stateDir, req.Owner)
	}
	var covering []string
	if m, ok := memory.MonthOf(req.Path); ok {
		covering = []string{memory.QuarterPath(m[:4], (int(m[5]-'0')*10+int(m[6]-'0')-1)/3+1), memory.YearPath(m[:4])}
	} else if memory.IsRollup(req.Path) && len(req.Path) == len("episodes/2026-Q1.md") {
		covering = []string{memory.YearPath(req.Path[len("episodes/") : len("episodes/")+4])} // a year summarises its quarters
	}
	u, err := r.store.User(req.Owner)
	if err != nil {
		return Dropped{}, err
	}
	n := 0
	for _, p := range covering {
		if err := u.Remove(p); err != nil && !errors.Is(err, memory.ErrNotFound) {
			return Dropped{}, fmt.Errorf("forget %s: %s is forgotten, but not the roll-up %s that summarises it (%w); delete it by hand", req.Owner, req.Path, p, err)
		} else if err == nil {
			n++
		}
		_ = r.store.ForgetSearch(req.Owner, p) // fails only on a bad owner name, which User refused
		if r.hist != nil && !req.KeepHistory {
			if err := r.hist.Remove(req.Owner, p); err != nil {
				return Dropped{}, fmt.Errorf("forget %s: the roll-up %s is deleted, but not its history (%w)", req.Owner, p, err)
			}
		}
	}
	if n == 0 {
		return Dropped{}, nil
	}
	return Dropped{N: n, Noun: "roll-up", Rest: " summarising it", Verb: "deleted"}, nil
}
