package recallbench

import (
	"os"
	"strings"
	"testing"
)

// TestRecallReport prints the recall report of the generated set and of
// each set folder named in RECALL_DATA (comma-separated; see LoadDir);
// RECALL_MISSES=1 lists the questions mnemo misses or ranks below the
// textbook. It asserts nothing about the figures: `make bench-recall`.
func TestRecallReport(t *testing.T) {
	report := func(s Set) {
		r := Evaluate(s)
		t.Log("\n" + r.String())
		if os.Getenv("RECALL_MISSES") != "" {
			t.Log("\n" + r.Misses(s, 5))
		}
	}
	report(Generate(1))
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
