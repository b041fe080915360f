package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// The seeded memory's index, through the real store, shows the roll-ups
// in place of the months they cover (so the bench's chat rows measure a
// memory with roll-ups), and the job finds nothing due in it (no roll-up
// call in the middle of a measured chat). Without roll-ups the months
// show.
func TestSeedRollups(t *testing.T) {
	now := time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)
	index := func(rollups bool) (string, string) {
		t.Helper()
		dir := t.TempDir()
		if err := seedMemory(context.Background(), dir, 1, 40, now, rollups); err != nil { // 20 months: 2025-04 to 2026-11
			t.Fatal(err)
		}
		store, err := memory.Open(memory.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		u, err := store.User(userName(0))
		if err != nil {
			t.Fatal(err)
		}
		text, err := memory.NewView(u, false, nil).Index(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		return text, filepath.Join(dir, userName(0))
	}

	text, dir := index(true)
	for _, shown := range []string{"episodes/2026-11.md", "episodes/2026-07.md", "episodes/2026-Q2.md", "episodes/2026-Q1.md", "episodes/2025.md"} {
		if !strings.Contains(text, shown) {
			t.Errorf("the index does not show %s:\n%s", shown, text)
		}
	}
	for _, hidden := range []string{"episodes/2026-06.md", "episodes/2026-01.md", "episodes/2025-12.md", "episodes/2025-04.md", "episodes/2025-Q4.md"} {
		if strings.Contains(text, hidden) {
			t.Errorf("the index shows %s, which a roll-up covers:\n%s", hidden, text)
		}
	}
	for _, years := range []bool{false, true} {
		periods, err := reflector.Due(seedStore{dir: dir}, "", now, 3, years)
		if err != nil || len(periods) == 0 {
			t.Fatalf("Due (years %v): %v, %v", years, periods, err)
		}
		for _, p := range periods {
			if p.Due {
				t.Errorf("%s is due after the seed: the job would call the model", p.Path)
			}
		}
	}
	q, err := os.ReadFile(filepath.Join(dir, "episodes", "2026-Q2.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# 2026-Q2 Roll-up\n", "\n> Summary: cache stampedes", "\n" + memory.RollupFingerprint + "sources=2026-04.md,2026-05.md,2026-06.md sha256=",
		"[2026-04 § Cache stampede fix](2026-04.md#cache-stampede-fix), [2026-05 § Cache stampede fix]"} {
		if !strings.Contains(string(q), want) {
			t.Errorf("2026-Q2.md lacks %q:\n%s", want, q)
		}
	}

	text, _ = index(false)
	if !strings.Contains(text, "episodes/2025-04.md") || strings.Contains(text, "-Q") {
		t.Errorf("without roll-ups, the index:\n%s", text)
	}
}

// A month that cannot be read fails the seed, naming the roll-ups.
func TestSeedRollupsUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "episodes", "2020-01.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := seedRollups(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "seed roll-ups: ") {
		t.Errorf("seedRollups = %v", err)
	}
}
