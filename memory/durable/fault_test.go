package durable

import (
	"errors"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNilHookInjectsNothing(t *testing.T) {
	var h Hook
	if err := h.At(Write, "x"); err != nil {
		t.Fatalf("nil hook: %v", err)
	}
}

func TestHookGetsOpAndName(t *testing.T) {
	full := errors.New("no space left on device")
	var got []string
	h := Hook(func(op, name string) error {
		got = append(got, op+" "+name)
		if op == Fsync {
			return full
		}
		return nil
	})
	if err := h.At(Create, "a.tmp"); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := h.At(Fsync, "a.tmp"); !errors.Is(err, full) {
		t.Fatalf("fsync: got %v, want the hook's error", err)
	}
	if len(got) != 2 || got[0] != "create a.tmp" || got[1] != "fsync a.tmp" {
		t.Fatalf("calls %q", got)
	}
}
