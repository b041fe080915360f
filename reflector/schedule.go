package reflector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// userState is one user's reflection state. Every operation on it (Add,
// Forget, Close, its timer firing, a run ending, a run's journal records)
// runs with mu held, one at a time, on the caller's goroutine, so the
// user's journal file is written in order. A user waiting for its idle
// timer holds no goroutine and no open file (see bounds.go); its state
// leaves the users map once it has nothing pending.
type userState struct {
	r    *Reflector
	name string
	mu   sync.Mutex // held while an op runs
	refs int        // guarded by Reflector.mu: ops promised and not yet run

	// Guarded by mu.
	queued  []entry // journaled, waiting for the next run
	running []entry // covered by the run in progress
	// runningForgotten are files forgotten while the run in progress ran:
	// its turns are marked with them when it ends (the run reads them).
	runningForgotten []string
	run              *runLog // the open run: running, or cut short and to be resumed first
	cancel           context.CancelFunc
	done             chan struct{} // closed once the running run's outcome is recorded
	busy             bool
	due              bool            // a trigger came while busy: run again as soon as the run ends
	closing          bool            // Close was called: no timers; what is pending runs now
	armed            bool            // the idle or retry timer is armed, for deadline
	failures         int             // failed runs in a row, for the backoff
	ended            []chan struct{} // done channels of runs whose outcome this op recorded: closed once the op settled

	// Guarded by Reflector.timers' mu.
	deadline time.Time
	hidx     int // index in the timers' heap, -1 when not armed
}

// acquire returns name's state with an op promised to it, making the
// state when create is set and there is none; nil when there is none.
// r.mu held.
func (r *Reflector) acquire(name string, create bool) *userState {
	u := r.users[name]
	if u == nil {
		if !create {
			return nil
		}
		u = &userState{r: r, name: name, hidx: -1}
		r.users[name] = u
	}
	u.refs++
	return u
}

// exec runs f as u's next op; the caller promised it with acquire. A
// timer that is due fires first, so an op after it sees it.
func (u *userState) exec(f func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.r.mu.Lock()
	u.refs--
	u.r.mu.Unlock()
	if u.armed && !u.r.clock.Now().Before(u.deadlineNow()) {
		u.armed = false
		u.r.timers.remove(u)
		u.trigger()
	}
	f()
	u.settle()
}

// do runs f on the state of a user whose run is in progress (so the state
// stays), and waits for it.
func (u *userState) do(f func()) {
	u.r.mu.Lock()
	u.refs++
	u.r.mu.Unlock()
	u.exec(f)
}

// deadlineNow is when u's armed timer fires.
func (u *userState) deadlineNow() time.Time {
	u.r.timers.mu.Lock()
	defer u.r.timers.mu.Unlock()
	return u.deadline
}

// fireTimer is the timers' call for u, whose deadline passed: exec fires
// it, unless an op disarmed or re-armed it meanwhile.
func (r *Reflector) fireTimer(u *userState) {
	r.mu.Lock()
	if r.users[u.name] != u {
		r.mu.Unlock()
		return // retired: nothing pending
	}
	r.acquire(u.name, false)
	r.mu.Unlock()
	u.exec(func() {})
}

// settle ends every op: a broken file is rewritten; a user with nothing
// pending has its file closed and leaves the map; a user waiting for its
// timer has its file closed once what was written is durable (the
// flusher pokes it then), or at once when maxOpenJournals files are open,
// so waiting users hold no descriptor.
func (u *userState) settle() {
	u.repair()
	switch {
	case u.quiet():
		// Make the file durable and close it before the state may go.
		if err := u.r.j.release(u.name); err != nil {
			u.repair() // rewritten whole, then closed; else it stays open for the next try
			_ = u.r.j.release(u.name)
		}
		u.retire()
	case !u.busy && u.r.j.clean(u.name):
		_ = u.r.j.release(u.name) // clean: closing it writes nothing
	case !u.busy && u.r.j.crowded():
		// More files wait for the flusher than it fsyncs in time: this
		// one is made durable here, on the caller's time (back-pressure),
		// so the open files stay bounded whatever the disk's pace.
		if err := u.r.j.release(u.name); err != nil {
			u.repair() // rewritten whole, then closed at the next op
		}
	}
	for _, c := range u.ended {
		close(c)
	}
	u.ended = nil
}

// quiet reports whether nothing runs and nothing waits (or Close was
// called, which leaves what failed journaled).
func (u *userState) quiet() bool {
	return !u.busy && (u.closing || (len(u.queued) == 0 && !u.armed))
}

// retire drops the state from the users map, when quiet and nothing is
// promised.
func (u *userState) retire() {
	u.r.mu.Lock()
	defer u.r.mu.Unlock()
	if u.refs == 0 && u.r.users[u.name] == u {
		delete(u.r.users, u.name)
	}
}

// repair rewrites the user's file whole when an fsync of it failed (the
// kernel may have dropped what was written), unless a run is in progress:
// the run's records would race with it, and its next record fails the run,
// whose end rewrites the file anyway.
func (u *userState) repair() {
	r := u.r
	if u.busy || !r.j.broken(u.name) {
		return
	}
	if err := r.j.rewrite(u.name, u.queued, u.run); err != nil {
		r.j.markBroken(u.name, err)
		r.log.Error("reflector: could not rewrite the journal after a failed fsync; the turns are kept in memory and retried, but a crash of the machine may lose them",
			"user", u.name, "err", err)
		return
	}
	r.log.Info("reflector: journal rewritten after a failed fsync", "user", u.name, "turns", len(u.queued))
}

// add journals t (durable within the sync window), then schedules it.
func (u *userState) add(t Turn) error {
	if t.TaskID != "" && slices.ContainsFunc(u.queued, func(q entry) bool { return q.turn.TaskID == t.TaskID }) {
		// The same message answered again (a restart before the adapter
		// recorded its reply): its turn is already waiting.
		u.r.log.Info("reflector: turn already journaled; the message was answered again after a restart", "user", u.name, "task_id", t.TaskID)
		return nil
	}
	e := entry{turn: t}
	if err := u.r.j.append(e); err != nil {
		return err
	}
	u.queued = append(u.queued, e)
	u.r.pending.Add(1)
	if t.Explicit {
		u.trigger() // asked for: reflected now, not when the talk goes quiet
		return nil
	}
	u.schedule()
	return nil
}

// close disarms the timer and reflects what is pending now (after the run
// in progress).
func (u *userState) close() {
	u.closing = true
	u.disarm()
	if err := u.r.j.sync(u.name); err != nil {
		u.r.log.Error("reflector: could not make the journal durable at shutdown; it is rewritten whole", "user", u.name, "err", err)
		u.repair()
	}
	if !u.busy && len(u.queued) > 0 {
		u.start()
	}
}

// forget drops the queued turns from the journal and cancels the running
// run; running is that run's done channel (nil: none ran).
func (u *userState) forget() (dropped int, running <-chan struct{}, err error) {
	u.run = nil // a running run sees it is forgotten; a run cut short is not resumed
	if u.busy {
		running = u.done
		u.cancel()
	}
	u.disarm()
	dropped = len(u.queued) + len(u.running)
	u.r.pending.Add(-int64(len(u.queued))) // the running turns are counted off when their run ends
	u.queued, u.due = nil, false
	return dropped, running, u.r.j.rewrite(u.name, nil, nil)
}

// journal appends rec of run to the user's journal, unless the run was
// forgotten; the run's first record also journals the run line.
func (u *userState) journal(run *runLog, rec record) error {
	var err error
	u.do(func() {
		if u.run != run {
			err = errForgotten
			return
		}
		if !run.journaled {
			if err = u.r.j.appendRecord(u.name, record{Kind: kindRun, Run: run.id, Turns: run.turns}); err != nil {
				return
			}
			run.journaled = true
		}
		err = u.r.j.appendRecord(u.name, rec)
	})
	return err
}

// schedule decides when the queued turns are reflected: at once past
// MaxTurns or at Close (or after the running run), else when the user has
// been quiet for Idle.
func (u *userState) schedule() {
	if len(u.queued) >= u.r.cfg.MaxTurns || u.closing {
		u.trigger()
		return
	}
	u.arm(u.r.cfg.Idle)
}

// trigger reflects the queued turns now, or right after the running run.
func (u *userState) trigger() {
	u.disarm()
	if u.busy {
		u.due = true
		return
	}
	if len(u.queued) > 0 {
		u.start()
	}
}

// arm (re)starts the timer: it fires after d unless disarmed or re-armed.
func (u *userState) arm(d time.Duration) {
	u.armed = true
	u.r.timers.move(u, u.r.clock.Now().Add(d))
}

func (u *userState) disarm() {
	if u.armed {
		u.armed = false
		u.r.timers.remove(u)
	}
}

// start launches a run: the open run over its turns, or a new one over
// all the queued turns. Its outcome comes back to the loop.
func (u *userState) start() {
	r := u.r
	if u.run == nil {
		u.run = newRunLog(scopeRun(u.queued))
	}
	n := min(u.run.turns, len(u.queued))
	batch := u.queued[:n:n]
	u.queued = append([]entry(nil), u.queued[n:]...)
	// Turns of another scope, left for a run of their own, follow at once.
	cut := len(u.queued) > 0 && !sameRun(u.queued[0].turn, batch[0].turn)
	u.running, u.busy, u.due = batch, true, cut
	ctx, cancel := context.WithCancel(r.ctx)
	u.cancel, u.done = cancel, make(chan struct{})
	run := u.run
	r.wg.Add(1)
	r.runs.submit(func() {
		defer r.wg.Done()
		defer cancel()
		tasks := taskIDs(batch)
		r.log.Info("reflection: reflecting", "user", u.name, "tasks", tasks, "turns", len(batch), "run", run.id)
		start := time.Now() // the duration logged is the machine's, whatever the clock
		err := r.reflect(ctx, u, run, batch, tasks)
		if err == nil && r.cfg.AfterRun != nil && ctx.Err() == nil && !batch[0].turn.Explicit {
			// Still this person's run (busy): it never races their next
			// reflection, and a forget waits for it as for the run. Not
			// after an explicit turn: its answer waits for the run's end.
			r.cfg.AfterRun(ctx, batch[0].turn.Scope())
		}
		u.do(func() { u.finish(run, batch, tasks, start, err) })
	})
}

// scopeRun is how many of the first entries share the first one's scope:
// one run reflects one scope, so a DM's turns and a channel's are never
// shown to the model together (and neither are two channels'); an
// explicit turn is a run of its own (sameRun).
func scopeRun(entries []entry) int {
	for i := 1; i < len(entries); i++ {
		if !sameRun(entries[i].turn, entries[0].turn) {
			return i
		}
	}
	return len(entries)
}

// finish records the outcome of a run.
func (u *userState) finish(run *runLog, batch []entry, tasks []string, start time.Time, err error) {
	u.ended = append(u.ended, u.done)
	for _, p := range u.runningForgotten {
		markForgotten(batch, p) // the run is over: nothing reads them now
	}
	u.running, u.busy, u.runningForgotten = nil, false, nil
	var split *splitError
	outcome := "failed"
	switch {
	case u.run != run:
		outcome = "forgotten"
		u.forgotten(batch)
	case err == nil:
		outcome = "ok"
		u.succeeded(batch, tasks, start, run)
	case errors.As(err, &split):
		outcome = "split"
		u.split(batch, split)
	case u.r.ctx.Err() != nil:
		outcome = "canceled"
		u.interrupted(batch, tasks)
	default:
		u.failed(batch, tasks, err)
	}
	if u.r.cfg.OnRun != nil {
		u.r.cfg.OnRun(outcome)
	}
	u.r.told(batch, run, outcome, err)
}

// succeeded removes the covered turns and the run from the journal: the
// file goes when nothing else is pending; else a "reflected" line marks
// them done, and the file is compacted once what is done passes
// compactBytes.
func (u *userState) succeeded(batch []entry, tasks []string, start time.Time, run *runLog) {
	r := u.r
	var err error
	if len(u.queued) > 0 {
		err = r.j.appendRecord(u.name, record{Kind: kindReflected, Run: run.id, Turns: len(batch)})
	}
	if len(u.queued) == 0 || err != nil || r.j.size(u.name)-pendingBytes(u.queued) > compactBytes {
		err = r.j.rewrite(u.name, u.queued, nil)
	}
	if err != nil {
		r.log.Error("reflection: could not remove reflected turns from the journal; the run is resumed at the next start and changes nothing twice",
			"user", u.name, "tasks", tasks, "err", err)
	}
	r.log.Info("reflection: done", "user", u.name, "tasks", tasks, "duration", time.Since(start).Round(time.Millisecond))
	r.pending.Add(-int64(len(batch)))
	u.run, u.failures = nil, 0
	if len(u.queued) > 0 && (u.due || u.closing || len(u.queued) >= r.cfg.MaxTurns) {
		u.start()
	}
}

// pendingBytes is the size of entries' journal lines.
func pendingBytes(entries []entry) int64 {
	n := int64(0)
	for _, e := range entries {
		line, _ := encodeLine(e) // they were encoded when journaled
		n += int64(len(line))
	}
	return n
}

// forgotten ends a run whose user's memory was forgotten meanwhile: Forget
// already emptied the journal.
func (u *userState) forgotten(batch []entry) {
	u.r.log.Info("reflection: stopped, the user's memory was forgotten", "user", u.name)
	u.r.pending.Add(-int64(len(batch)))
	if len(u.queued) > 0 {
		u.schedule()
	}
}

// interrupted keeps the turns and the run Close cancelled.
func (u *userState) interrupted(batch []entry, tasks []string) {
	u.r.log.Warn("reflection: interrupted by shutdown; the turns stay journaled and the run is resumed at the next start", "user", u.name, "tasks", tasks)
	u.queued = append(append([]entry(nil), batch...), u.queued...)
}

// failed counts the attempt on each covered turn and schedules a retry.
// A run that journaled nothing is retried afresh, over newer turns too, and
// a turn that reaches MaxAttempts moves to the failed folder; a run that
// journaled replies or changes is resumed as it is, and its turns move
// together, since they changed memory together.
func (u *userState) failed(batch []entry, tasks []string, err error) {
	r := u.r
	run := u.run
	all := make([]entry, len(batch))
	var kept, gaveUp []entry
	for i, e := range batch {
		e.attempts++
		all[i] = e
		if e.attempts >= MaxAttempts {
			gaveUp = append(gaveUp, e)
		} else {
			kept = append(kept, e)
		}
	}
	if !run.journaled {
		run = nil
	} else if len(gaveUp) > 0 {
		kept, gaveUp = nil, all
	}
	if len(gaveUp) > 0 {
		if ferr := r.j.moveFailed(u.name, gaveUp, run, err, r.clock.Now()); ferr != nil {
			r.log.Error("reflection: could not move the failed turns to the failed folder; they stay journaled", "user", u.name, "err", ferr)
			kept, gaveUp = all, nil
		} else {
			run = nil
		}
	}
	keep := append(kept, u.queued...)
	if werr := r.j.rewrite(u.name, keep, run); werr != nil {
		r.log.Error("reflection: could not record the failed attempt in the journal", "user", u.name, "err", werr)
	}
	u.failures++
	retry := r.cfg.Idle << min(u.failures-1, 10)
	if u.closing {
		r.log.Error("reflection: failed; the turns stay journaled for the next start", "user", u.name, "tasks", tasks, "err", err)
	} else {
		r.log.Error("reflection: failed; will retry", "user", u.name, "tasks", tasks, "err", err, "retry_in", retry)
	}
	if len(gaveUp) > 0 {
		r.log.Error(fmt.Sprintf("reflection: gave up on %d turn(s) after %d failed attempts; they are kept in %s and mnemo memory check lists them", len(gaveUp), MaxAttempts, r.j.failedDir()),
			"user", u.name, "count", len(gaveUp), "tasks", taskIDs(gaveUp), "err", err)
		r.pending.Add(-int64(len(gaveUp)))
	}
	u.queued, u.run = keep, run
	u.due = false
	if !u.closing && len(keep) > 0 {
		u.arm(retry)
	}
}
