package bottest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
)

func TestHandlerHoldAndReply(t *testing.T) {
	h := NewHandler()
	release := h.Hold()
	done := make(chan mnemo.Reply, 1)
	go func() {
		r, _ := h.Handle(context.Background(), mnemo.Task{Text: "hi"})
		done <- r
	}()
	if got := h.WaitTasks(t, 1, time.Minute); got[0].Text != "hi" {
		t.Fatalf("tasks %+v", got)
	}
	select {
	case r := <-done:
		t.Fatalf("answered while held: %+v", r)
	default:
	}
	release()
	release() // twice is harmless
	if r := <-done; r.Text != "echo: hi" {
		t.Errorf("reply %+v", r)
	}
	h.SetReply(func(t mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{}, errors.New("down") })
	if _, err := h.Handle(context.Background(), mnemo.Task{}); err == nil || len(h.Tasks()) != 2 {
		t.Errorf("err %v, tasks %d", err, len(h.Tasks()))
	}
}

func TestMemory(t *testing.T) {
	m := &Memory{ShowText: "facts", Check: func(p string) error {
		if !strings.HasPrefix(p, "facts/") {
			return fmt.Errorf("bad %q", p)
		}
		return nil
	}}
	if s, err := m.Show("ada", "#slack-T1-C1"); s != "facts" || err != nil || m.Shown()[0] != "ada" || m.ShownChannels()[0] != "#slack-T1-C1" {
		t.Errorf("Show %q %v %v %v", s, err, m.Shown(), m.ShownChannels())
	}
	// Gate: Show answers once it is closed.
	gate := make(chan struct{})
	m.Gate = gate
	shown := make(chan string, 1)
	go func() { s, _ := m.Show("ada", ""); shown <- s }()
	select {
	case s := <-shown:
		t.Fatalf("Show answered %q before the gate opened", s)
	default:
	}
	close(gate)
	if s := <-shown; s != "facts" {
		t.Errorf("Show after the gate %q", s)
	}
	m.Gate = nil
	m.Files = map[string]bool{"ada:facts/a.md": false}
	if changed, err := m.SetShared("ada", "facts/a.md", true); !changed || err != nil || !m.IsShared("ada:facts/a.md") {
		t.Errorf("SetShared: %v, %v", changed, err)
	}
	if changed, err := m.SetShared("ada", "facts/a.md", true); changed || err != nil {
		t.Errorf("SetShared again: %v, %v", changed, err)
	}
	if _, err := m.SetShared("bob", "facts/a.md", true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetShared of a missing file: %v", err)
	}
	m.SetErr = errors.New("disk")
	if _, err := m.SetShared("ada", "facts/a.md", false); err != m.SetErr || !m.IsShared("ada:facts/a.md") {
		t.Errorf("SetShared with SetErr: %v", err)
	}
	if got := m.Sets(); len(got) != 2 || got[0] != "ada:facts/a.md:shared" {
		t.Errorf("sets %v", got)
	}
	if m.CheckPath("facts/a.md") != nil || m.CheckPath("x") == nil || (&Memory{}).CheckPath("x") != nil {
		t.Error("CheckPath")
	}
	m.Forget("ada", "facts/a.md")
	m.ForgetErr = errors.New("no")
	if m.Forget("ada", "") == nil || len(m.Forgotten()) != 1 || m.Forgotten()[0] != "ada:facts/a.md" {
		t.Errorf("forgotten %v", m.Forgotten())
	}
}

func TestLogBuffer(t *testing.T) {
	var b LogBuffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("hello")
	if !strings.Contains(b.String(), "msg=hello") {
		t.Errorf("%q", b.String())
	}
}

func TestStartStops(t *testing.T) {
	var r *Run
	var ready atomic.Bool
	t.Run("inner", func(t *testing.T) {
		r = Start(t, func(ctx context.Context) error {
			ready.Store(true)
			<-ctx.Done()
			ready.Store(false)
			return nil
		}, RunOptions{Ready: ready.Load, Logs: &LogBuffer{}, Secrets: []string{"tok"}, Timeout: time.Minute})
		WaitFor(t, "ready", time.Minute, ready.Load)
	})
	// The inner test's cleanup stopped Run: Stop returns its result again.
	if err := r.Stop(); err != nil || ready.Load() {
		t.Errorf("Stop %v, ready %v", err, ready.Load())
	}
}

func TestStartReportsAnError(t *testing.T) {
	var r *Run
	t.Run("fatal", func(t *testing.T) {
		r = Start(t, func(context.Context) error { return errors.New("refused") }, RunOptions{AllowErr: true, Timeout: time.Minute})
		err := <-r.Done
		r.Done <- err // for Stop
	})
	if err := r.Stop(); err == nil || err.Error() != "refused" {
		t.Errorf("Stop %v", err)
	}
}

// fatalTB records Fatal instead of ending the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestWaitN(t *testing.T) {
	var asked []int
	wait := func(n int, timeout time.Duration) ([]string, error) {
		asked = append(asked, n)
		if n > 2 {
			return []string{"a", "b"}, errors.New("2 of 3 records")
		}
		return []string{"a", "b"}, nil
	}
	if got := WaitN(t, wait, 2, time.Minute); strings.Join(got, ",") != "a,b" {
		t.Errorf("WaitN = %q", got)
	}
	f := &fatalTB{TB: t}
	WaitN(f, wait, 3, time.Minute)
	if f.fatal != "2 of 3 records" || fmt.Sprint(asked) != "[2 3]" {
		t.Errorf("fatal %q, asked %v", f.fatal, asked)
	}
}

// panicTB turns a Fatalf into a panic of its message, so that a test can
// see a helper fail without failing itself.
type panicTB struct{ testing.TB }

func (panicTB) Helper() {}

func (panicTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// WaitTasks fails the test when the tasks do not come in time.
func TestWaitTasksTimeout(t *testing.T) {
	defer func() {
		if got := recover(); got != "waited for 1 tasks, got 0" {
			t.Errorf("Fatalf %v", got)
		}
	}()
	NewHandler().WaitTasks(panicTB{t}, 1, time.Millisecond)
}

// fatalRecorder is a testing.TB whose Fatalf only records.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

func TestInOrder(t *testing.T) {
	for _, tc := range []struct {
		want []string
		fail string
	}{
		{want: []string{"a", "c"}},
		{want: []string{"c", "a"}, fail: `want "a" (in order)`},
		{want: []string{"b", "b"}, fail: `want "b" (in order)`},
	} {
		r := &fatalRecorder{TB: t}
		InOrder(r, "a b c", tc.want...)
		if tc.fail == "" && r.msg != "" || tc.fail != "" && !strings.Contains(r.msg, tc.fail) {
			t.Errorf("InOrder(%q): %q", tc.want, r.msg)
		}
	}
}
