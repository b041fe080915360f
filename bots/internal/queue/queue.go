package queue

import (
	"context"
	"sync"
)

// Limits of the queue every adapter answers through.
const (
	MaxInFlight     = 256 // tasks running at once, all conversations together
	PerConversation = 8   // tasks one conversation may hold (running + waiting)
)

// Queue orders work per conversation with a bounded work queue. Tasks
// submitted with the same key run one after another in submission order;
// tasks of different keys run concurrently, at most maxInFlight at once
// in total (a key waiting for a slot gets one in the order keys became
// ready). Each key holds at most perKey tasks (running + waiting). Submit
// never blocks. It is safe for concurrent use.
//
// A panic in a task is not recovered (it ends the process, as in any
// goroutine); wrap what may panic (pipeline.Answer does).
type Queue struct {
	mu          sync.Mutex
	maxInFlight int
	perKey      int
	lanes       map[string]*lane
	ready       []*lane // lanes whose first task waits for a slot, in order
	running     int
	pending     int // accepted and not finished
	closed      bool
	idle        chan struct{} // closed once closed and nothing is pending
	idleClosed  bool
}

// lane is one key's tasks: tasks[0] is running or waiting for a slot.
type lane struct {
	key   string
	tasks []func()
}

// New returns a Queue running at most maxInFlight tasks at once and
// holding at most perKey tasks per key (each at least 1).
func New(maxInFlight, perKey int) *Queue {
	return &Queue{maxInFlight: max(maxInFlight, 1), perKey: max(perKey, 1), lanes: map[string]*lane{}, idle: make(chan struct{})}
}

// Submit queues fn under key and reports true, or reports false without
// running fn when key already holds perKey tasks (the adapter then says
// it is busy) or after Close began.
func (q *Queue) Submit(key string, fn func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	l := q.lanes[key]
	if l == nil {
		l = &lane{key: key}
		q.lanes[key] = l
	}
	if len(l.tasks) >= q.perKey {
		return false
	}
	l.tasks = append(l.tasks, fn)
	q.pending++
	if len(l.tasks) == 1 {
		q.readyLocked(l)
	}
	return true
}

// readyLocked starts l's first task, or lines l up for a slot.
func (q *Queue) readyLocked(l *lane) {
	if q.running < q.maxInFlight {
		q.running++
		go q.run(l, l.tasks[0])
		return
	}
	q.ready = append(q.ready, l)
}

func (q *Queue) run(l *lane, fn func()) {
	defer q.finish(l)
	fn()
}

// finish retires l's first task and starts what may start now.
func (q *Queue) finish(l *lane) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	q.pending--
	l.tasks[0] = nil
	l.tasks = l.tasks[1:]
	if len(l.tasks) == 0 {
		delete(q.lanes, l.key)
	} else {
		q.ready = append(q.ready, l)
	}
	for q.running < q.maxInFlight && len(q.ready) > 0 {
		next := q.ready[0]
		q.ready[0] = nil
		q.ready = q.ready[1:]
		q.readyLocked(next)
	}
	if len(q.ready) == 0 {
		q.ready = nil // let the array go
	}
	q.idleLocked()
}

func (q *Queue) idleLocked() {
	if q.closed && q.pending == 0 && !q.idleClosed {
		q.idleClosed = true
		close(q.idle)
	}
}

// Close stops accepting tasks and waits until every accepted task has
// finished, or until ctx ends (it then returns ctx.Err(); the tasks still
// run). It may be called more than once.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	q.idleLocked()
	q.mu.Unlock()
	select {
	case <-q.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Len is the number of tasks accepted and not finished (running or
// waiting).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending
}
