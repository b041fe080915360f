package search

import "testing"

// A roll-up's lines are units of their own, dated the period's last day,
// one hit per file, after the month entry they summarise; its header and
// fingerprint are no units.
func TestRollupLines(t *testing.T) {
	files := map[string]string{
		"episodes/2026-02.md": episodes("2026-02", entry("CI build cache not restored", "cache keyed on go.sum", "2026-02-24")),
		"episodes/2026-Q1.md": "# 2026-Q1 Roll-up\n\n> Summary: CI cache\n\n<!-- mnemo-rollup: sources=2026-02.md sha256=ab -->\n\n## Lines\n- CI cache keyed on go.sum ([2026-02 § CI build cache not restored](2026-02.md#ci))\n- Release notes for the CI cache\n\n- ...\n",
	}
	x := indexOf(files)
	r := Search(Query{Text: "CI cache go.sum", Today: today, Limit: 5}, Part{Index: x})
	if len(r.Hits) != 2 || r.Hits[0].Path != "episodes/2026-02.md" || r.Hits[1].Path != "episodes/2026-Q1.md" {
		t.Fatalf("hits %+v; want the month entry, then one roll-up line", r.Hits)
	}
	if h := r.Hits[1]; h.Line != 8 || h.Date != "2026-03-31" || h.Episode {
		t.Errorf("roll-up hit %+v", h)
	}
	if r := Search(Query{Text: "sha256 mnemo-rollup", Today: today, Limit: 5}, Part{Index: x}); len(r.Hits) != 0 {
		t.Errorf("the fingerprint is a unit: %+v", r.Hits)
	}
	for p, want := range map[string]string{"episodes/2026.md": "2026-12-31", "channel/episodes/2025-Q4.md": "2025-12-31", "episodes/2026-Q2.md": "2026-06-30"} {
		if d, ok := rollupEnd(p); !ok || formatDay(d) != want {
			t.Errorf("rollupEnd(%q) = %s, %v", p, formatDay(d), ok)
		}
	}
	for _, p := range []string{"episodes/2026-02.md", "facts/2026.md", "myepisodes/2026.md", "episodes/20x6.md", "episodes/26.md", "episodes/2026-Q5.md", "episodes/2026"} {
		if _, ok := rollupEnd(p); ok {
			t.Errorf("rollupEnd(%q) is a roll-up", p)
		}
	}
}
