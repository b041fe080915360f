package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	mnemoconfig "github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/reflector"
)

// The answers the seed's roll-ups are made from, in the roll-up prompt's
// form: each line names the records it sums up (a quarter's: its months'
// three entries, 1–3, 4–6, 7–9; a year's: its quarters, 1–4); numbers past
// a period's records are dropped, as the job drops them.
const (
	quarterAnswer = "Summary: cache stampedes, flaky tests and slow queries, fixed each month\n" +
		"- Cache stampedes on cold caches fixed with singleflight and jittered TTLs [1, 4, 7]\n" +
		"- Flaky integration tests fixed by waiting for readiness [2, 5, 8]\n" +
		"- Slow report queries fixed with a composite index [3, 6, 9]\n"
	yearAnswer = "Summary: a year of cache, test and query fixes\n" +
		"- Cache stampedes fixed with singleflight every quarter [1, 2, 3, 4]\n" +
		"- Flaky tests and slow queries fixed as they came [1, 2, 3, 4]\n"
)

// seedRollups writes, in user folder dir, the roll-ups the job
// (reflector.Rollups, at the default memory.rollupAfter) would have
// written for its months on now: its plan (reflector.Due) and its file
// format (reflector.Period.File), quarters first, then the years made
// from them. The job then finds nothing due: no model call.
func seedRollups(dir string, now time.Time) error {
	after := mnemoconfig.Default().Memory.RollupAfter
	st := seedStore{dir: dir, now: now}
	for _, years := range []bool{false, true} {
		periods, err := reflector.Due(st, "", now, after, years)
		if err != nil {
			return fmt.Errorf("seed roll-ups: %w", err)
		}
		answer := quarterAnswer
		if years {
			answer = yearAnswer
		}
		for _, p := range periods {
			texts := make([]string, len(p.Sources))
			for i, src := range p.Sources {
				if texts[i], _, err = st.Read("", src); err != nil {
					return fmt.Errorf("seed roll-ups: %w", err)
				}
			}
			text, err := p.File(texts, answer)
			if err != nil {
				return fmt.Errorf("seed roll-ups: %w", err)
			}
			if err := st.WriteRollup("", p.Path, text, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// seedStore is reflector.RollupStore over one seeded user folder, on disk.
type seedStore struct {
	dir string
	now time.Time
}

func (s seedStore) Episodes(string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "episodes", "*.md"))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "episodes/" + filepath.Base(n)
	}
	return out, err
}

func (s seedStore) Read(_, p string) (string, string, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(p)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	return string(b), "", err
}

func (s seedStore) WriteRollup(_, p, text, _ string) error {
	return writeSeed(filepath.Join(s.dir, filepath.FromSlash(p)), text, s.now)
}
