package recallbench

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRecallReport prints the recall report of the generated set and of
// each set folder named in RECALL_DATA (comma-separated; see LoadDir);
// RECALL_SEEDS=2,3 adds generated sets of other seeds; RECALL_MISSES=1 lists the questions mnemo misses or ranks below the
// textbook. It asserts nothing about the figures: `make bench-recall`.
func TestRecallReport(t *testing.T) {
	report := func(s Set) {
		r := Evaluate(s)
		t.Log("\n" + r.String())
		if os.Getenv("RECALL_MISSES") != "" {
			t.Log("\n" + r.Misses(s, 5))
		}
	}
	seeds := os.Getenv("RECALL_SEEDS") // more generated sets: "2,3,4"
	report(Generate(1))
	for _, f := range strings.Split(seeds, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil && n != 1 {
			report(Generate(n))
		}
	}
	for _, dir := range strings.Split(os.Getenv("RECALL_DATA"), ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		s, err := LoadDir(dir)
		if err != nil {
			t.Errorf("RECALL_DATA: %v", err)
			continue
		}
		report(s)
	}
}
