package text

import (
	"sync"
	"testing"
)

func TestRegexpCompiledOnceOnFirstUse(t *testing.T) {
	r := NewRegexp(`^a(b+)$`)
	if r.re != nil {
		t.Fatal("compiled before its first use")
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() { got[i] = r.Get().FindStringSubmatch("abbb")[1] })
	}
	wg.Wait()
	for _, g := range got {
		if g != "bbb" {
			t.Fatalf("match = %q", g)
		}
	}
	if r.Get() != r.Get() {
		t.Error("compiled twice")
	}
}

func TestRegexpBadExprPanicsAtUse(t *testing.T) {
	r := NewRegexp(`(`)
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic")
		}
	}()
	r.Get()
}
