package clocktest

import (
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/clock"
)

var t0 = time.Date(2026, 3, 5, 14, 0, 0, 0, time.UTC)

func TestFakeFiresInOrderWhenAdvanced(t *testing.T) {
	f := New(t0)
	a, b := f.NewTimer(2*time.Second), f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	select {
	case <-b.C():
		t.Fatal("fired early")
	default:
	}
	if f.Armed() != 2 {
		t.Fatalf("armed %d", f.Armed())
	}
	f.Advance(2 * time.Second)
	if got := <-a.C(); !got.Equal(t0.Add(2999 * time.Millisecond)) {
		t.Fatalf("fired at %v", got)
	}
	<-b.C()
	if f.Armed() != 0 || a.Stop() {
		t.Fatal("a fired timer is still armed or stoppable")
	}
	if !f.Now().Equal(t0.Add(2999 * time.Millisecond)) {
		t.Fatalf("now %v", f.Now())
	}
}

func TestFakeStop(t *testing.T) {
	f := New(t0)
	s := f.NewTimer(time.Second)
	if !s.Stop() || s.Stop() {
		t.Fatal("Stop should succeed once")
	}
	f.Advance(time.Hour)
	select {
	case <-s.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	// Leaky: Stop fails and the timer still fires, as a real one on its way.
	f.SetLeaky(true)
	l := f.NewTimer(time.Second)
	if l.Stop() {
		t.Fatal("a leaky Stop succeeded")
	}
	f.Advance(time.Second)
	<-l.C()
}

func TestWaitArmed(t *testing.T) {
	f := New(t0)
	done := make(chan struct{})
	go func() {
		f.WaitArmed(1)
		close(done)
	}()
	f.NewTimer(time.Second)
	<-done
}

func TestReal(t *testing.T) {
	c := clock.Or(nil)
	if _, ok := c.(clock.Real); !ok {
		t.Fatalf("Or(nil) = %T", c)
	}
	if f := New(t0); clock.Or(f) != f {
		t.Fatal("Or replaced a given clock")
	}
	if time.Since(c.Now()) > time.Minute {
		t.Fatal("Real.Now is not now")
	}
	tm := c.NewTimer(0)
	<-tm.C()
	if tm.Stop() {
		t.Fatal("Stop of a fired timer succeeded")
	}
}
