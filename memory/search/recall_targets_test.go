package search_test

import (
	"testing"

	"github.com/mnemo-agent/mnemo/memory/search/recallbench"
)

// The ranking meets the targets on the generated year of memory
// (tested here, beside the ranking, so that a mutation test of this
// package runs it), for several seeds: recall@5 at least 5 points over the textbook BM25,
// recall@10 at least 0.90, and no kind of question below the textbook at
// 5 or at 10. A change to the ranking that loses recall fails here.
func TestRecallTargets(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		r := recallbench.Evaluate(recallbench.Generate(seed))
		for _, row := range r.Rows {
			m, b := row.Mnemo, row.BM25
			if row.Kind == "all" {
				if m.At5 < b.At5+0.05 {
					t.Errorf("seed %d: recall@5 %.2f, not 5 points over the textbook's %.2f", seed, m.At5, b.At5)
				}
				if m.At10 < 0.90 {
					t.Errorf("seed %d: recall@10 %.2f, below 0.90", seed, m.At10)
				}
				continue
			}
			if m.At5 < b.At5 || m.At10 < b.At10 {
				t.Errorf("seed %d, %s questions: recall %.2f/%.2f below the textbook's %.2f/%.2f", seed, row.Kind, m.At5, m.At10, b.At5, b.At10)
			}
		}
	}
}
