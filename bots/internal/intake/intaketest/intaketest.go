// Package intaketest holds the journal fault layer the chat adapters'
// tests share: each adapter answers a message it could not journal, or
// posts a reply it could not mark, in its own way, but the fault is the same.
package intaketest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/intake"
)

// FailingFiles is an intake file layer (its Open is an
// intake.OpenFileFunc) whose fsyncs fail with EIO while Fail is set.
type FailingFiles struct{ Fail atomic.Bool }

// Open opens name as os.OpenFile does, with Sync failing while f.Fail is set.
func (f *FailingFiles) Open(name string, flag int, perm fs.FileMode) (intake.File, error) {
	of, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return failingFile{of, f}, nil
}

type failingFile struct {
	*os.File
	f *FailingFiles
}

func (ff failingFile) Sync() error {
	if ff.f.Fail.Load() {
		return syscall.EIO
	}
	return ff.File.Sync()
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
