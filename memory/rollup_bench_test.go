package memory

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// rollupUser makes a user with n episode months (and, with rollups, a
// roll-up for each quarter and year of all but the newest year), each
// month an entry long.
func rollupUser(b testing.TB, n int, rollups bool) *User {
	s := newStore(b)
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(b, filepath.Join(dir, "facts/user.md"), userFact)
	last := 2026*12 - 1 // 2026-12, counted in months
	newestYear := last / 12
	for i := range n {
		m := last - i
		y, mm := m/12, m%12+1
		writeFile(b, filepath.Join(dir, fmt.Sprintf("episodes/%04d-%02d.md", y, mm)),
			fmt.Sprintf("# %04d-%02d Episodes\n\n> Summary: work of %04d-%02d\n\n## Work\n- Summary: work\n- Date: %04d-%02d-01\n", y, mm, y, mm, y, mm))
		if rollups && y < newestYear {
			if mm%3 == 0 {
				writeFile(b, filepath.Join(dir, QuarterPath(fmt.Sprintf("%04d", y), mm/3)), fmt.Sprintf("# %04d-Q%d Roll-up\n\n> Summary: quarter %d of %04d\n\n- Work ([x](x.md))\n", y, mm/3, mm/3, y))
			}
			if mm == 12 {
				writeFile(b, filepath.Join(dir, YearPath(fmt.Sprintf("%04d", y))), fmt.Sprintf("# %04d Roll-up\n\n> Summary: the year %04d\n\n- Work ([x](x.md))\n", y, y))
			}
		}
	}
	u := mustUser(b, s, "alice")
	if _, err := u.List(); err != nil {
		b.Fatal(err)
	}
	return u
}

// BenchmarkRollupIndex: the first request's index and the reflector's
// episode index at 0, 2,000 and 10,000 month files, without and with
// roll-ups. Both are bounded by their budgets either way; what roll-ups
// change is how far back the index reaches (index-years) and how many
// files it leaves out (omitted).
func BenchmarkRollupIndex(b *testing.B) {
	for _, n := range []int{0, 2000, 10000} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("months=%d/rollups=%v", n, on), func(b *testing.B) {
				u := rollupUser(b, n, on)
				v := NewView(u, false, nil)
				var idx, eps string
				for b.Loop() {
					var err error
					if idx, err = v.Index(0); err != nil {
						b.Fatal(err)
					}
					if _, eps, err = v.Preload(16384); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(idx)), "index-bytes")
				b.ReportMetric(float64(len(eps)), "preload-episodes-bytes")
				b.ReportMetric(float64(omitted(idx)), "omitted")
				b.ReportMetric(float64(reach(idx)), "index-years")
			})
		}
	}
}

// omitted is the count of the index's "(N more files not shown" line.
func omitted(idx string) int {
	n := 0
	if i := strings.Index(idx, "- ("); i >= 0 {
		fmt.Sscanf(idx[i+3:], "%d", &n)
	}
	return n
}

// reach is how many years the index's episode lines span.
func reach(idx string) int {
	first, last := 0, 0
	for _, l := range strings.Split(idx, "\n") {
		var y int
		if _, err := fmt.Sscanf(strings.TrimPrefix(l, "- episodes/"), "%4d", &y); err == nil && strings.HasPrefix(l, "- episodes/") {
			if first == 0 {
				first = y
			}
			last = y
		}
	}
	if first == 0 {
		return 0
	}
	return first - last + 1
}
