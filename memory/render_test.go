package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 320: "320B", 1023: "1023B", 1024: "1KB", 1229: "1.2KB", 2048: "2KB", 1048575: "1024KB", 1 << 20: "1MB", 3<<20 + 1<<19: "3.5MB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q; want %q", n, got, want)
		}
	}
}

// The index is exactly the form the model is shown, one line a file
// ("- facts/user.md (320B): summary"); testdata/index.golden holds it.
func TestRenderIndexGolden(t *testing.T) {
	files := []FileInfo{
		{Path: "facts/user.md", Summary: "user name, language, role", Size: 320},
		{Path: "episodes/2026-02.md", Summary: "logger fix, short ID, config refactor", Size: 1229},
	}
	got := RenderIndex(files, 0)
	want, err := os.ReadFile(filepath.Join("testdata", "index.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.TrimSuffix(string(want), "\n") {
		t.Errorf("index:\n%s\nwant:\n%s", got, want)
	}
	if got := RenderIndex(nil, 100); got != "Available memory: none yet." {
		t.Errorf("empty index = %q", got)
	}
}

func TestRenderIndexBudget(t *testing.T) {
	var files []FileInfo
	for i := 0; i < 5; i++ {
		files = append(files, FileInfo{Path: fmt.Sprintf("facts/f%d.md", i), Summary: "fact " + strings.Repeat("x", 40), Size: 100})
	}
	for m := 12; m >= 1; m-- {
		files = append(files, FileInfo{Path: fmt.Sprintf("episodes/2025-%02d.md", m), Summary: "month", Size: 2000})
	}
	full := RenderIndex(files, 1<<20)
	if strings.Count(full, "\n- ") != len(files) || strings.Contains(full, "not shown") {
		t.Fatalf("unbudgeted index:\n%s", full)
	}
	for _, budget := range []int{200, 300, 500, 700} {
		got := RenderIndex(files, budget)
		if len(got) > budget {
			t.Errorf("budget %d: index is %d bytes", budget, len(got))
		}
		lines := strings.Split(got, "\n")
		shown := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "- facts/") || strings.HasPrefix(l, "- episodes/") {
				if !strings.HasPrefix(full, strings.Join(lines[:shown+2], "\n")) {
					t.Errorf("budget %d: line %q out of order (facts first, then newest episodes)", budget, l)
				}
				shown++
			}
		}
		want := fmt.Sprintf("- (%d more files not shown; see memory_list)", len(files)-shown)
		if !strings.Contains(got, want) {
			t.Errorf("budget %d: no count of left-out files (%q):\n%s", budget, want, got)
		}
		if !strings.HasSuffix(got, "\nUse memory_read to load relevant files before responding.") || !strings.HasPrefix(got, "Available memory:\n") {
			t.Errorf("budget %d: header or footer missing:\n%s", budget, got)
		}
	}
	one := RenderIndex(files[:2], len(indexHeader)+len(indexFooter)+len(IndexLine(files[0]))+1+len(omittedLine(1)))
	if !strings.Contains(one, "- (1 more file not shown;") {
		t.Errorf("singular: %s", one)
	}
}

func TestOmittedLen(t *testing.T) {
	for _, n := range []int{0, 1, 2, 9, 10, 11, 99, 100, 999, 1000, 12345} {
		if got, want := omittedLen(n), len(omittedLine(n)); got != want {
			t.Errorf("omittedLen(%d) = %d, want %d", n, got, want)
		}
	}
}
