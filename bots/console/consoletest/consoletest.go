// Package consoletest gives tests a pseudo-terminal to run the terminal
// chat on: keys are typed into it and its screen is read, as a person at
// a terminal would (cursor keys, pastes, Ctrl-C), without sleeps.
package consoletest

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/mnemo-agent/mnemo/bots/internal/fakewait"
)

// Wait bounds every wait on the screen; reached only when a test fails.
const Wait = 10 * time.Second

// TTY is a pseudo-terminal: run the chat on Slave, Type keys, WaitFor
// what the screen shows. It is closed when the test ends.
type TTY struct {
	Slave  *os.File
	master *os.File

	mu   sync.Mutex
	out  strings.Builder
	seen int // WaitFor has matched up to here
	ch   fakewait.Changes
}

// Open makes a 100×24 pseudo-terminal, or skips the test where there is
// none.
func Open(t testing.TB) *TTY {
	t.Helper()
	opened, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	// pty.Open leaves the master blocking (it calls Fd), so Close would
	// not end a read waiting on it: use a non-blocking copy.
	fd, err := unix.Dup(Fd(t, opened))
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	opened.Close()
	if err != nil {
		slave.Close()
		t.Fatal(err)
	}
	tt := &TTY{Slave: slave, master: os.NewFile(uintptr(fd), opened.Name())}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 4096)
		for {
			n, err := tt.master.Read(b)
			tt.mu.Lock()
			tt.out.Write(b[:n])
			tt.ch.NotifyLocked()
			tt.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		slave.Close()
		tt.master.Close()
		<-copied
	})
	return tt
}

// Fd is f's descriptor, got without f.Fd (which makes f's reads blocking).
func Fd(t testing.TB, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(u uintptr) { fd = int(u) })
	return fd
}

// Type sends keys as a person types (or pastes) them.
func (tt *TTY) Type(t testing.TB, keys string) {
	t.Helper()
	if _, err := tt.master.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

// HangUp closes the terminal's far end, as when its window is closed:
// reads of Slave fail.
func (tt *TTY) HangUp() { tt.master.Close() }

// WaitFor waits until text appears after what earlier waits matched, and
// returns what the screen showed up to its end.
func (tt *TTY) WaitFor(t testing.TB, text string) string {
	t.Helper()
	return tt.waitFor(t, text, Wait)
}

func (tt *TTY) waitFor(t testing.TB, text string, timeout time.Duration) string {
	t.Helper()
	var got string
	if !tt.ch.Wait(&tt.mu, timeout, func() bool {
		s := tt.out.String()
		i := strings.Index(s[tt.seen:], text)
		if i < 0 {
			return false
		}
		got = s[tt.seen : tt.seen+i+len(text)]
		tt.seen += i + len(text)
		return true
	}) {
		t.Fatalf("the terminal never showed %q; it shows:\n%q", text, tt.Screen())
	}
	return got
}

// Screen is everything written to the terminal so far.
func (tt *TTY) Screen() string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.out.String()
}
