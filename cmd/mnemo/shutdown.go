package main

// Shutdown in two stages. The first SIGTERM or SIGINT stops intake (the
// adapters stop taking messages, chat stops reading) and starts
// shutdown.grace: running tasks and reflections may finish within it. When
// it is over, the model calls still running are cancelled: a task answers
// with its apology, a reflection stops and its turns stay journaled for the
// next start; then the process exits 0. A second signal ends the grace at
// once and the process exits 130 within a second (main gives up waiting for
// the command past abortWait).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// exitAborted is the exit status after a second signal (128 + SIGINT, as a
// shell reports an interrupted command; the same for SIGTERM).
const exitAborted = 130

// abortWait bounds how long main waits for the command to return after a
// second signal. Cancelling takes milliseconds; this only guards against
// something that does not heed its context.
const abortWait = 750 * time.Millisecond

// signals is how a command learns that it should stop: stop is done at the
// first SIGTERM or SIGINT (stop taking work, finish within shutdown.grace),
// abort is closed at the second (stop now). A nil abort never closes.
type signals struct {
	stop  context.Context
	abort <-chan struct{}
}

// watchSignals turns what arrives on c into signals: the first value ends
// stop, the second closes abort; later ones are ignored. release stops
// watching (call it once the command has returned).
func watchSignals(c <-chan os.Signal) (sig signals, release func()) {
	stop, cancel := context.WithCancel(context.Background())
	abort := make(chan struct{})
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, next := range []func(){cancel, func() { close(abort) }} {
			select {
			case <-c:
				next()
			case <-quit:
				return
			}
		}
	}()
	return signals{stop: stop, abort: abort}, func() {
		close(quit)
		<-done
		cancel()
	}
}

// runToExit runs the command and returns its exit status. After a second
// signal it waits at most wait for the command to return; past that it
// says so on stderr and returns exitAborted, leaving the command behind for
// the process exit to end.
func runToExit(sig signals, wait time.Duration, stderr io.Writer, run func() error) int {
	done := make(chan error, 1)
	go func() { done <- run() }()
	select {
	case err := <-done:
		return exitCode(err, stderr)
	case <-sig.abort:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		return exitCode(err, stderr)
	case <-t.C:
		fmt.Fprintln(stderr, "mnemo: second signal: exiting without waiting for running work; turns not reflected stay journaled for the next start")
		return exitAborted
	}
}

// Causes of a shutdown's hard stop.
var (
	errGraceOver    = errors.New("shutdown.grace is over")
	errSecondSignal = errors.New("second signal")
	errFinished     = errors.New("the command finished")
)

// shutdown is one command's stop. begin (called at the first signal, or
// when the command stops for another reason) starts the grace; hard is
// done when the grace is over or at the second signal, and is what running
// work is bounded by.
type shutdown struct {
	grace  time.Duration
	log    *slog.Logger
	onHard func(cause error)
	hard   context.Context
	cancel context.CancelCauseFunc
	begun  atomic.Bool
	stopW  func() bool // stops watching the first signal

	mu       sync.Mutex // orders begin, end and release
	timer    *time.Timer
	released bool
}

// newShutdown starts watching sig: stop begins the grace, abort ends it.
// When hard ends before release, onHard runs first with the cause (cancel
// the model calls then). Call release when the command is done.
func newShutdown(sig signals, grace time.Duration, log *slog.Logger, onHard func(cause error)) *shutdown {
	s := &shutdown{grace: grace, log: log, onHard: onHard}
	s.hard, s.cancel = context.WithCancelCause(context.Background())
	s.stopW = context.AfterFunc(sig.stop, s.begin)
	if sig.abort != nil {
		go func() {
			select {
			case <-sig.abort:
				s.end(errSecondSignal)
			case <-s.hard.Done():
			}
		}()
	}
	return s
}

// begin starts the grace: from now running work has s.grace. Only the
// first call counts.
func (s *shutdown) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released || s.begun.Load() {
		return
	}
	s.begun.Store(true)
	s.log.Info(fmt.Sprintf("mnemo: stopping: no new messages are taken; running replies and reflections have up to %s (shutdown.grace) to finish; a second SIGTERM or SIGINT stops at once", s.grace))
	s.timer = time.AfterFunc(s.grace, func() { s.end(errGraceOver) })
}

// end ends the grace with cause: it says so, runs onHard, then ends hard.
// Only the first call counts, and none after release.
func (s *shutdown) end(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released || s.hard.Err() != nil {
		return
	}
	if cause == errGraceOver {
		s.log.Warn(fmt.Sprintf("mnemo: shutdown.grace (%s) is over: cancelling the model calls still running; unfinished reflections stay journaled for the next start", s.grace))
	} else {
		s.log.Warn("mnemo: second signal: cancelling running work now; unfinished reflections stay journaled for the next start")
	}
	s.onHard(cause)
	s.cancel(cause)
}

// stopping reports whether the shutdown has begun.
func (s *shutdown) stopping() bool { return s.begun.Load() }

// aborted reports whether a second signal ended the grace.
func (s *shutdown) aborted() bool { return context.Cause(s.hard) == errSecondSignal }

// release stops the timer and the watchers; hard ends without onHard.
func (s *shutdown) release() {
	s.stopW()
	s.mu.Lock()
	s.released = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.cancel(errFinished)
}

// abortError is what a command returns after a second signal.
func abortError() error {
	return &exitError{code: exitAborted, err: errors.New("stopped at a second signal: running work was cancelled; turns not reflected stay journaled for the next start")}
}
