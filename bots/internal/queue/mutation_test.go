package queue

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"fmt"
	"testing"
)

// TestQueuePerKeyBoundIsExact: a key holds exactly perKey tasks (running
// + waiting): the perKey-th is taken, the next refused, and a slot freed
// by a finished task is taken again.
func TestQueuePerKeyBoundIsExact(t *testing.T) {
	q := New(4, 3)
	rec := newRecorder()
	release := make(chan struct{})
	for i := range 3 {
		if !q.Submit("k", rec.task(fmt.Sprint(i), release)) {
			t.Fatalf("task %d of 3 refused", i)
		}
	}
	if q.Submit("k", func() { t.Error("a refused task ran") }) {
		t.Fatal("a fourth task accepted for a key of three")
	}
	if !q.Submit("other", rec.task("other", release)) {
		t.Fatal("another key refused")
	}
	if n := q.Len(); n != 4 {
		close(release)
		t.Fatalf("Len %d; want 4", n) // Close might never return
	}
	close(release)
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(rec.started) != 4 {
		t.Errorf("started %v", rec.started)
	}
}
