package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/memory"
)

// userName is the memory user name of the i-th simulated user (from 0).
func userName(i int) string { return fmt.Sprintf("load-%04d", i+1) }

// displayName is the name facts/user.md gives the i-th user; the Thinker's
// replies quote it.
func displayName(i int) string { return fmt.Sprintf("Load User %04d", i+1) }

// seed writes files memory files for each user straight to disk, as a
// person (or an earlier run of mnemo) would have left them: half fact files
// (facts/user.md first), half episode months (this month and the ones
// before, three entries each), written an hour before now: a memory left
// by a person or an earlier run, not one written a moment ago (which the
// index cache would not trust until racySlack has passed: every start
// would re-read it). The months old enough get the roll-ups the job
// would have written (seedRollups): a memory left by a running mnemo.
func seed(ctx context.Context, memDir string, users, files int, now time.Time) error {
	return seedMemory(ctx, memDir, users, files, now, true)
}

// seedMemory is seed, with the roll-ups or without them (the memory of a
// mnemo with memory.rollupAfter 0).
func seedMemory(ctx context.Context, memDir string, users, files int, now time.Time, rollups bool) error {
	episodes := files / 2
	facts := files - episodes
	for i := range users {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(memDir, userName(i))
		for _, sub := range []string{"facts", "episodes"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
				return fmt.Errorf("seed memory: %w", err)
			}
		}
		for k := range facts {
			name, text := "user", userFacts(i)
			if k > 0 {
				name, text = fmt.Sprintf("topic-%03d", k), topicFacts(k)
			}
			if err := writeSeed(filepath.Join(dir, "facts", name+".md"), text, now); err != nil {
				return err
			}
		}
		for k := range episodes {
			month := time.Date(now.Year(), now.Month()-time.Month(k), 1, 0, 0, 0, 0, time.UTC)
			if err := writeSeed(filepath.Join(dir, "episodes", month.Format("2006-01")+".md"), episodeMonth(month), now); err != nil {
				return err
			}
		}
		if rollups {
			if err := seedRollups(dir, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSeed writes one seeded file, modified an hour before now.
func writeSeed(name, text string, now time.Time) error {
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		return fmt.Errorf("seed memory: %w", err)
	}
	if err := os.Chtimes(name, now.Add(-time.Hour), now.Add(-time.Hour)); err != nil {
		return fmt.Errorf("seed memory: %w", err)
	}
	return nil
}

func userFacts(i int) string {
	return fmt.Sprintf("# User Facts\n\n> Summary: name, language, role, time zone\n\n"+
		"- Name: %s\n- Language: English, code comments in English\n- Role: backend developer\n"+
		"- Time zone: Europe/Berlin\n- Prefers: short answers with code\n", displayName(i))
}

func topicFacts(k int) string {
	return fmt.Sprintf("# Project %03d\n\n> Summary: project %03d stack, conventions, people\n\n"+
		"- Stack: Go services, PostgreSQL, Redis\n- Conventions: table-driven tests, no globals\n"+
		"- Deploy: blue-green, Fridays frozen\n- Owner: platform team\n", k, k)
}

func episodeMonth(month time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s Episodes\n\n> Summary: cache stampede fix, flaky test, slow query\n", month.Format("2006-01"))
	for d, e := range [][3]string{
		{"Cache stampede fix", "stampede on cold cache → singleflight", "singleflight around the loader, jittered TTL"},
		{"Flaky integration test", "race in test setup → wait for readiness", "poll /readyz before the first request"},
		{"Slow report query", "seq scan on events → composite index", "index on (account_id, created_at)"},
	} {
		fmt.Fprintf(&b, "\n## %s\n- Summary: %s\n- Date: %s\n- Solution: %s\n",
			e[0], e[1], month.AddDate(0, 0, 3+9*d).Format(time.DateOnly), e[2])
	}
	return b.String()
}

// verifyEntries reads every user's episode files and checks that each entry
// the reflector was told to append (id → user) is there exactly once, in
// that user's folder. It returns how many such entries it found and the
// problems, if any.
func verifyEntries(memDir string, issued map[string]string) (found int, problems []string, err error) {
	seen := make(map[string][]string) // entry id → users whose files hold it
	users, err := os.ReadDir(memDir)
	if err != nil {
		return 0, nil, fmt.Errorf("verify episode entries: %w", err)
	}
	for _, u := range users {
		files, err := filepath.Glob(filepath.Join(memDir, u.Name(), "episodes", "*.md"))
		if err != nil { // only a malformed pattern
			return 0, nil, err
		}
		for _, name := range files {
			text, err := os.ReadFile(name)
			if err != nil {
				return 0, nil, fmt.Errorf("verify episode entries: %w", err)
			}
			for line := range strings.Lines(string(text)) {
				plain, _ := memory.SplitStamp(strings.TrimRight(line, "\n")) // a heading carries where it was learned
				if id, ok := strings.CutPrefix(plain, entryMarker); ok {
					seen[id] = append(seen[id], u.Name())
					found++
				}
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(issued)) {
		want, got := issued[id], seen[id]
		switch {
		case len(got) == 0:
			problems = append(problems, fmt.Sprintf("episode entry %s of %s is missing from its files", id, want))
		case len(got) > 1:
			problems = append(problems, fmt.Sprintf("episode entry %s of %s is there %d times (%s)", id, want, len(got), strings.Join(got, ", ")))
		case got[0] != want:
			problems = append(problems, fmt.Sprintf("episode entry %s of %s is in the files of %s", id, want, got[0]))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		if _, ok := issued[id]; !ok {
			problems = append(problems, fmt.Sprintf("episode entry %s in the files of %s was never appended by a reflection", id, strings.Join(seen[id], ", ")))
		}
	}
	return found, problems, nil
}
