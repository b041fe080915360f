package app

import (
	"slices"
	"testing"
)

// The chat platforms' memory has the person's topics (for Slack's
// suggested prompts), from their own files; an Asker without them gives
// none.
func TestPlatformTopics(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", foodFact)
	w.putMemory(t, "ann/episodes/2026-11.md", "# Episodes 2026-11\n> Summary: x\n\n## Booked the venue\n- Date: 2026-11-02\n")
	a := w.open(t, "")
	recent, facts, err := a.Memory.Platform().Topics("ann", 2)
	if err != nil || !slices.Equal(recent, []string{"Booked the venue"}) || len(facts) != 1 {
		t.Errorf("Topics = %q, %q, %v", recent, facts, err)
	}
	if recent, facts, err := (PlatformMemory{}).Topics("ann", 2); recent != nil || facts != nil || err != nil {
		t.Errorf("Topics without an Asker that has them = %q, %q, %v", recent, facts, err)
	}
}
