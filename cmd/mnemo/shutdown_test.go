package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

// The first signal ends stop, the second closes abort, later ones are
// ignored; release ends the watcher.
func TestWatchSignals(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := make(chan os.Signal, 3)
	sig, release := watchSignals(c)
	if sig.stop.Err() != nil {
		t.Fatal("stop is done before any signal")
	}
	c <- syscall.SIGTERM
	<-sig.stop.Done()
	select {
	case <-sig.abort:
		t.Fatal("one signal closed abort")
	default:
	}
	c <- os.Interrupt
	<-sig.abort
	c <- syscall.SIGTERM // a third: nobody listens, nothing breaks
	release()

	// Released before any signal: stop ends with it, abort stays open.
	sig, release = watchSignals(make(chan os.Signal))
	release()
	if sig.stop.Err() == nil {
		t.Error("stop is not done after release")
	}
	select {
	case <-sig.abort:
		t.Error("abort closed without a signal")
	default:
	}
}

func TestRunToExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stderr bytes.Buffer
		newSig := func() (signals, chan struct{}) {
			abort := make(chan struct{})
			return signals{stop: context.Background(), abort: abort}, abort
		}

		// A command that returns by itself: its status.
		sig, _ := newSig()
		if code := runToExit(sig, time.Second, &stderr, func() error { return failure(errors.New("boom")) }); code != 1 || stderr.String() != "mnemo: boom\n" {
			t.Errorf("failing command: exit %d, stderr %q", code, stderr.String())
		}

		// After a second signal, a command that returns within the wait:
		// its status, when it returns.
		stderr.Reset()
		sig, abort := newSig()
		start := time.Now()
		code := runToExit(sig, time.Second, &stderr, func() error {
			close(abort)
			time.Sleep(100 * time.Millisecond)
			return abortError()
		})
		if code != exitAborted || time.Since(start) != 100*time.Millisecond || !strings.HasPrefix(stderr.String(), "mnemo: stopped at a second signal") {
			t.Errorf("command stopping in time: exit %d after %v, stderr %q", code, time.Since(start), stderr.String())
		}

		// One that does not return: given up on after the wait, exactly.
		stderr.Reset()
		sig, abort = newSig()
		stuck := make(chan struct{})
		start = time.Now()
		code = runToExit(sig, time.Second, &stderr, func() error {
			close(abort)
			<-stuck
			return nil
		})
		if code != exitAborted || time.Since(start) != time.Second || !strings.Contains(stderr.String(), "second signal: exiting without waiting for running work") {
			t.Errorf("stuck command: exit %d after %v, stderr %q", code, time.Since(start), stderr.String())
		}
		close(stuck)
	})
}

// testShutdown is a shutdown watching its own stop and abort, recording
// onHard's causes.
type testShutdown struct {
	*shutdown
	stop   context.CancelFunc
	abort  chan struct{}
	causes chan error
	logs   *syncWriter
}

func newTestShutdown(grace time.Duration) *testShutdown {
	ctx, stop := context.WithCancel(context.Background())
	ts := &testShutdown{stop: stop, abort: make(chan struct{}), causes: make(chan error, 2), logs: &syncWriter{}}
	ts.shutdown = newShutdown(signals{stop: ctx, abort: ts.abort}, grace, slog.New(slog.NewTextHandler(ts.logs, nil)),
		func(cause error) { ts.causes <- cause })
	return ts
}

func TestShutdownGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first signal starts the grace; when it is over, hard ends
		// and the model calls are cancelled, exactly grace later.
		s := newTestShutdown(20 * time.Second)
		start := time.Now()
		s.stop()
		synctest.Wait()
		if !s.stopping() || s.hard.Err() != nil {
			t.Fatalf("after the first signal: stopping %v, hard %v", s.stopping(), s.hard.Err())
		}
		if !strings.Contains(s.logs.String(), "mnemo: stopping: no new messages are taken; running replies and reflections have up to 20s (shutdown.grace) to finish; a second SIGTERM or SIGINT stops at once") {
			t.Errorf("logs:\n%s", s.logs)
		}
		<-s.hard.Done()
		if time.Since(start) != 20*time.Second || <-s.causes != errGraceOver || s.aborted() {
			t.Errorf("hard ended after %v with %v (aborted %v)", time.Since(start), context.Cause(s.hard), s.aborted())
		}
		if !strings.Contains(s.logs.String(), "mnemo: shutdown.grace (20s) is over: cancelling the model calls still running; unfinished reflections stay journaled for the next start") {
			t.Errorf("logs:\n%s", s.logs)
		}
		// A second signal after the grace is over changes nothing.
		close(s.abort)
		s.end(errSecondSignal)
		synctest.Wait()
		if len(s.causes) != 0 || s.aborted() || strings.Contains(s.logs.String(), "second signal") {
			t.Errorf("second signal after the grace: %d more onHard calls, aborted %v", len(s.causes), s.aborted())
		}
		s.release()

		// A second signal ends the grace at once.
		s = newTestShutdown(20 * time.Second)
		start = time.Now()
		s.stop()
		time.Sleep(time.Second)
		close(s.abort)
		<-s.hard.Done()
		if time.Since(start) != time.Second || <-s.causes != errSecondSignal || !s.aborted() {
			t.Errorf("second signal: hard ended after %v with %v", time.Since(start), context.Cause(s.hard))
		}
		if !strings.Contains(s.logs.String(), "mnemo: second signal: cancelling running work now") {
			t.Errorf("logs:\n%s", s.logs)
		}
		s.release()

		// A command that finishes first: no cancelling, no timer left.
		s = newTestShutdown(20 * time.Second)
		s.begin()
		s.release()
		synctest.Wait()
		if context.Cause(s.hard) != errFinished || s.aborted() || len(s.causes) != 0 {
			t.Errorf("released: cause %v, aborted %v, %d onHard calls", context.Cause(s.hard), s.aborted(), len(s.causes))
		}
		s.stop() // a signal after the command returned: nothing happens
		synctest.Wait()
		if strings.Count(s.logs.String(), "mnemo: stopping") != 1 {
			t.Errorf("logs:\n%s", s.logs)
		}

		// Released before it began: a late begin starts no timer.
		s = newTestShutdown(time.Second)
		s.release()
		s.begin()
		time.Sleep(2 * time.Second)
		if len(s.causes) != 0 || s.logs.String() != "" {
			t.Errorf("begin after release: %d onHard calls, logs %q", len(s.causes), s.logs)
		}

		// Without a second stage (stopOn), only the grace ends it.
		ctx, stop := context.WithCancel(context.Background())
		causes := make(chan error, 1)
		sd := newShutdown(stopOn(ctx), time.Minute, slog.New(slog.DiscardHandler), func(c error) { causes <- c })
		stop()
		<-sd.hard.Done()
		if <-causes != errGraceOver {
			t.Error("stopOn: not ended by the grace")
		}
		sd.release()
	})
}
