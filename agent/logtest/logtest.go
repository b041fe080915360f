// Package logtest is a log sink for tests: a buffer that the goroutines
// under test may write to (through a slog handler, say) while the test
// reads it. One copy for every package's tests.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads. Its zero
// value is ready to use.
type Buffer struct {
	// OnWrite, when set, is called after each write, once what was written
	// can be read: a test that waits for a log line wakes up at each one.
	OnWrite func()

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.b.Write(p)
	l.mu.Unlock()
	if l.OnWrite != nil {
		l.OnWrite()
	}
	return n, err
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
