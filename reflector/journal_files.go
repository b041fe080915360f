package reflector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// The journal's files as a whole: atomic rewrites, and reading them back
// at start (journal.go appends to them and makes them durable).

// rewrite replaces user's file by entries and the records of run (nil: no
// run open), atomically (durable.Log.Replace); nothing left removes it.
// The next append goes to the new file.
func (j *journal) rewrite(user string, entries []entry, run *runLog) error {
	jf := j.file(user)
	if len(entries) == 0 {
		if err := jf.log.Remove(); err != nil {
			return fmt.Errorf("reflector: remove journal: %w", storage(err))
		}
		jf.setBroken(nil)
		return nil
	}
	buf, err := encodeJournal(entries, run)
	if err != nil {
		return err
	}
	if err := jf.log.Replace(buf.Bytes()); err != nil {
		return fmt.Errorf("reflector: rewrite journal of %s: %w", user, storage(err))
	}
	jf.setBroken(nil)
	return nil
}

// encodeJournal is the text of a journal file holding entries and the
// records of run (nil: none), one line each.
func encodeJournal(entries []entry, run *runLog) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	for _, e := range entries {
		line, err := encodeLine(e)
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	for _, rec := range run.records() {
		line, _ := json.Marshal(rec) // strings, ints and a decoded message: cannot fail
		buf.Write(append(line, '\n'))
	}
	return &buf, nil
}

// install puts data at name (in the journal folder) atomically
// (durable.WriteFile); disk failures are wrapped with mnemo.ErrStorage.
func (j *journal) install(name string, data []byte) error {
	return storage(durable.WriteFile(j.fs, name, data, durable.WriteOptions{Hook: j.fault}))
}

// isTemp reports whether a journal folder entry is a temp file of a
// rewrite (durable's, or ".<user>.jsonl<random>" of older mnemos).
func isTemp(name string) bool {
	return durable.IsTemp(name) || strings.HasPrefix(name, ".") && strings.Contains(name, journalExt) && !strings.HasSuffix(name, journalExt)
}

// replay reads every journal file: the pending turns by user. Leftover temp
// files are removed; unreadable lines are skipped with a warning and their
// file rewritten without them.
func (j *journal) replay(log *slog.Logger) (map[string]pending, error) {
	des, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("reflector: read journal folder: %w", err)
	}
	out := map[string]pending{}
	for _, de := range des {
		name := de.Name()
		if isTemp(name) {
			_ = os.Remove(filepath.Join(j.dir, name)) // a rewrite that crashed before its rename
			continue
		}
		user, ok := strings.CutSuffix(name, journalExt)
		if !ok {
			continue
		}
		if err := validUser(user); err != nil || !de.Type().IsRegular() {
			log.Warn("reflector: ignoring a stray file in the journal folder", "file", filepath.Join(j.dir, name))
			continue
		}
		entries, run, err := j.load(user, log)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			out[user] = pending{entries: entries, run: run}
		}
	}
	return out, nil
}

// pending is what a user's journal holds: the turns, and the run that
// was in progress over the first of them, if any.
type pending struct {
	entries []entry
	run     *runLog
}

// load reads one user's file, rewriting it when it had bad lines or
// reflected ones.
func (j *journal) load(user string, log *slog.Logger) ([]entry, *runLog, error) {
	p := j.path(user)
	data, err := durable.ReadFile(j.fs, user+journalExt)
	if err != nil {
		return nil, nil, fmt.Errorf("reflector: read journal: %w", err)
	}
	entries, run, dirty := parseJournal(user, p, data, log)
	if dirty {
		if err := j.rewrite(user, entries, run); err != nil {
			return nil, nil, err
		}
	}
	return entries, run, nil
}

// parseJournal reads the content of user's file p: the pending turns, the
// run open over them, and whether the file holds more than those (bad or
// reflected lines), so a rewrite would make it smaller.
func parseJournal(user, p string, data []byte, log *slog.Logger) (entries []entry, run *runLog, dirty bool) {
	var recs []record
	dirty = len(data) == 0 || data[len(data)-1] != '\n'
	durable.Scan(data, func(line []byte) error {
		var probe struct {
			Kind string `json:"kind"`
		}
		err := json.Unmarshal(line, &probe)
		if err == nil && probe.Kind == "failed" {
			return nil // a failed file moved back by an admin: its note on why
		}
		if err == nil && probe.Kind == kindReflected {
			var rec record
			if rec, err = parseRecord(line); err == nil && rec.Turns > len(entries) {
				err = fmt.Errorf("%d turns reflected but %d are journaled", rec.Turns, len(entries))
			}
			if err == nil {
				// The run over the first Turns turns succeeded: they and
				// its records are done.
				entries, recs, dirty = entries[rec.Turns:], nil, true
				return nil
			}
		}
		if err == nil && probe.Kind != "" && probe.Kind != kindReflected {
			var rec record
			if rec, err = parseRecord(line); err == nil {
				recs = append(recs, rec)
				return nil
			}
		}
		var e entry
		if err == nil {
			e, err = parseLine(line)
		}
		if err == nil && e.turn.User != user {
			err = fmt.Errorf("the turn belongs to %q", e.turn.User)
		}
		if err == nil {
			entries = append(entries, e)
		}
		return err
	}, func(n int, torn bool, err error) {
		dirty = true
		log.Warn("reflector: skipping an unreadable journal line (a crash while it was written?)",
			"file", p, "line", n, "err", err, "torn", torn)
	})
	run, problem := assembleRun(recs, len(entries))
	if problem != "" {
		dirty = true
		log.Warn("reflector: "+problem+"; the turns are reflected afresh", "file", p)
	}
	return entries, run, dirty
}
