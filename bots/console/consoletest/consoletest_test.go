package consoletest

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// What is written on the terminal's side is on the screen; keys typed
// reach it; a hang-up makes its reads fail.
func TestTTY(t *testing.T) {
	tt := Open(t)
	tt.Slave.WriteString("one two")
	if got := tt.WaitFor(t, "one"); got != "one" {
		t.Errorf("WaitFor = %q", got)
	}
	if got := tt.WaitFor(t, "two"); got != " two" {
		t.Errorf("WaitFor after a match = %q", got)
	}
	tt.Type(t, "keys\n")
	b := make([]byte, 64)
	n, err := tt.Slave.Read(b)
	if err != nil || !strings.HasPrefix(string(b[:n]), "keys") {
		t.Errorf("read %q, %v", b[:n], err)
	}
	tt.HangUp()
	if _, err := tt.Slave.Read(b); err == nil {
		t.Error("read after hang-up succeeded")
	}
	if !strings.HasPrefix(tt.Screen(), "one two") {
		t.Errorf("screen %q", tt.Screen())
	}
}

// A wait for what never comes fails the test, saying what was shown.
func TestWaitForFails(t *testing.T) {
	tt := Open(t)
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { recover() }()
		tt.waitFor(ft, "never", 0)
	}()
	<-done
	if !strings.Contains(ft.msg, `never showed "never"`) {
		t.Errorf("failure message %q", ft.msg)
	}
}

type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
