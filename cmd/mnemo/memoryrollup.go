package main

// `mnemo memory rollup [--dry-run] USER`: rolls up USER's old episode
// months now (memory.rollupAfter), as a running mnemo does after a
// reflection of theirs, one model call per period due at most once a day.
// --dry-run only lists the periods and what is due, reading. A roll-up
// writes memory, so it takes the data folder's lock: while chat or serve
// runs, it is theirs to make.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
)

// noModel is the dry run's model: it is never asked.
type noModel struct{}

func (noModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("a dry run calls no model")
}

func (m *memoryCmd) rollup(ctx context.Context, owner string, dryRun bool) error {
	if m.cfg.Memory.RollupAfter == 0 {
		return failure(errors.New("roll-ups are off (memory.rollupAfter is 0); set it to a number of months, e.g. 3"))
	}
	if _, err := m.user(owner); err != nil {
		return err
	}
	store := wiring.RollupStore{Store: m.store}
	u, _ := m.store.User(owner)
	var hist historyRecorder
	var model llm.Model = noModel{}
	modelName := ""
	if !dryRun {
		lock, err := lockData(m.env, m.cfg, "mnemo memory rollup")
		if held := (*lockHeldError)(nil); errors.As(err, &held) {
			return failure(fmt.Errorf("%s runs on this data folder and rolls up after each reflection; stop it to roll up now, or see what is due with mnemo memory rollup --dry-run %s", held.holder, shellName(owner)))
		}
		if err != nil {
			return err
		}
		defer lock.Close()
		h, err := openHistory(m.cfg, time.Now)
		if err != nil {
			return err
		}
		defer h.Close()
		hist = h
		// Kept as the history keeps a running mnemo's roll-ups: the text
		// replaced first (when the history lacks it), then the new one.
		store.OnCommit = func(c memory.Commit) {
			if d, err := u.Read(c.Path); err == nil {
				h.Record(owner, c.Path, []byte(d.Text), "earlier text")
			}
		}
		if model, modelName, err = app.RollupModel(ctx, m.cfg, m.env.getenv("MNEMO_OLLAMA_URL"), m.env.logger); err != nil {
			return failure(err)
		}
	}
	job := reflector.NewRollups(reflector.RollupConfig{Model: model, ModelName: modelName, Store: store, StateDir: m.cfg.State.Dir,
		After: m.cfg.Memory.RollupAfter, Logger: m.env.logger, OnOutcome: func(string) {}})
	rep, err := job.Run(ctx, owner, dryRun)
	for _, p := range rep.Written {
		if d, rerr := u.Read(p); rerr == nil && hist != nil {
			if _, _, herr := hist.Record(owner, p, []byte(d.Text), "rollup (mnemo memory rollup)"); herr != nil {
				m.env.logger.Warn("history: could not keep a roll-up; the file itself is written", "user", owner, "path", p, "err", herr)
			}
		}
	}
	if err != nil {
		return failure(err)
	}
	_, err = fmt.Fprint(m.env.stdout, rollupReport(rep, dryRun, m.cfg.Memory.RollupAfter))
	if err == nil && len(rep.Failed) > 0 {
		return failure(fmt.Errorf("%d roll-up%s failed (see the errors logged); each is tried again on another day", len(rep.Failed), plural(len(rep.Failed))))
	}
	return err
}

// historyRecorder is the history as the command keeps roll-ups in it.
type historyRecorder interface {
	Record(user, p string, content []byte, who string) (memhistory.Version, bool, error)
}

// rollupReport is what `memory rollup` prints: one line per period old
// enough, then what was done.
func rollupReport(rep reflector.Report, dryRun bool, after int) string {
	var b strings.Builder
	if len(rep.Periods) == 0 {
		fmt.Fprintf(&b, "nothing to roll up: %s has no episode months older than %d month%s in a finished quarter\n", rep.Owner, after, plural(after))
		return b.String()
	}
	due := 0
	for _, p := range rep.Periods {
		state := "up to date"
		switch {
		case contains(rep.Written, p.Path):
			state = "written"
		case contains(rep.Failed, p.Path):
			state = "failed; tried again on another day"
		case p.Due && p.Tried:
			state = "due; its model call was made today, the next is tomorrow"
		case p.Due:
			state = "due"
		}
		if p.Due {
			due++
		}
		fmt.Fprintf(&b, "%s  %s  (from %s)\n", p.Path, state, strings.Join(trimEpisodes(p.Sources), ", "))
	}
	if dryRun {
		fmt.Fprintf(&b, "%d roll-up%s due; nothing written (--dry-run)\n", due, plural(due))
	} else {
		fmt.Fprintf(&b, "%d roll-up%s written, %d failed, %d model call%s\n", len(rep.Written), plural(len(rep.Written)), len(rep.Failed), rep.Calls, plural(rep.Calls))
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func trimEpisodes(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(p, "episodes/")
	}
	return out
}
