// Package intaketest holds what the chat adapters' intake tests share: the
// journal fault layer, and the checks of what every adapter promises about
// its journal, each run against an adapter through a Run.
package intaketest

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// wait bounds every wait of the shared checks, as the adapters' own tests do.
const wait = 10 * time.Second

// Run is an adapter started for one test, as the shared checks drive it.
type Run struct {
	Handler *bottest.Handler
	Logs    *bottest.LogBuffer
	Send    func(text string)    // sends a DM from the test's user and waits until the adapter took it
	Posts   func(n int) []string // waits for the bot's first n posts and returns their texts
}

// CheckReplyJournalError checks that a reply that cannot be journaled is
// posted anyway (answering matters more than the crash window it opens),
// and logged. start starts the adapter with faults as its journal's
// disk-fault hook.
func CheckReplyJournalError(t *testing.T, start func(faults durable.Hook) Run) {
	t.Helper()
	files := &FailingFiles{}
	r := start(files.Hook)
	release := r.Handler.Hold()
	r.Send("hi")
	r.Handler.WaitTasks(t, 1, wait)
	files.Fail.Store(true)
	release()
	if p := r.Posts(1); p[0] != "echo: hi" {
		t.Fatalf("posts %q", p)
	}
	bottest.WaitFor(t, "the log", wait, func() bool {
		l := r.Logs.String()
		return strings.Contains(l, "the reply could not be journaled; posting it anyway") && strings.Contains(l, "could not be marked done")
	})
	files.Fail.Store(false)
}

// CheckResumeUnreadable checks that when the conversation cannot be read,
// an interrupted reply is posted whole: twice is better than never. r was
// started with a journal holding a message whose reply "reply A" was being
// posted, and the conversation's history failing to read.
func CheckResumeUnreadable(t *testing.T, r Run) {
	t.Helper()
	if p := r.Posts(1); p[0] != "reply A" {
		t.Fatalf("posts %q", p)
	}
	if !strings.Contains(r.Logs.String(), "cannot read which parts of an interrupted reply were posted") {
		t.Error("not logged")
	}
}

// FailingFiles is a journal disk-fault hook (its Hook is a durable.Hook)
// whose fsyncs fail with EIO while Fail is set.
type FailingFiles struct{ Fail atomic.Bool }

// Hook fails the fsyncs of files while f.Fail is set.
func (f *FailingFiles) Hook(op, name string) error {
	if op == durable.Fsync && f.Fail.Load() {
		return syscall.EIO
	}
	return nil
}

// CheckOpenError checks that an adapter whose journal folder cannot be
// made stops Run with an error naming the platform's intake and the fix:
// run builds the adapter with intakeDir as its intake folder and runs it.
func CheckOpenError(t *testing.T, platform string, run func(intakeDir string) error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(filepath.Join(file, "intake"))
	if err == nil || !strings.Contains(err.Error(), platform+": intake: create the journal folder") ||
		!strings.Contains(err.Error(), "the state folder must be writable") {
		t.Fatalf("Run = %v", err)
	}
}
