package logtest

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "x\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
}

// OnWrite runs after every write, and what was written is readable by then.
func TestOnWriteSeesTheWrite(t *testing.T) {
	var b Buffer
	var seen []string
	b.OnWrite = func() { seen = append(seen, b.String()) }
	b.Write([]byte("a"))
	b.Write([]byte("b"))
	if got := strings.Join(seen, "|"); got != "a|ab" {
		t.Errorf("OnWrite saw %q, want \"a|ab\"", got)
	}
}
