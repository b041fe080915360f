package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// readiness is what /readyz checks besides the adapters' connections:
// that open files are not running out and that the intake journal's
// folder still takes a durable write. Either failing means a message
// could not be journaled (and so not taken) now: the answer is 503 with
// the cause and its fix, and 200 again once the cause is gone, since
// each request checks anew.
type readiness struct {
	intake string       // the intake journal's folder (state.dir/intake)
	hook   durable.Hook // env.faults: the tests' disk faults
	// files is the number of open files and the limit on them
	// (RLIMIT_NOFILE's soft limit); tests may stand in for it.
	files func() (open, limit int, err error)
	log   *slog.Logger

	mu   sync.Mutex // one probe at a time; guards last
	last string     // the cause last answered ("": ready), to log changes once
}

// probeName is the file the intake probe writes, fsyncs and removes.
const probeName = ".readyz-probe"

func newReadiness(intakeDir string, hook durable.Hook, log *slog.Logger) *readiness {
	return &readiness{intake: intakeDir, hook: hook, files: openFiles, log: log}
}

// openFiles counts /proc/self/fd against RLIMIT_NOFILE.
func openFiles() (open, limit int, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, err
	}
	return len(entries) - 1, int(min(rl.Cur, 1<<30)), nil // less ReadDir's own
}

// check returns why mnemo cannot take messages now, or nil; a change is
// logged (an error when it becomes unready), once.
func (r *readiness) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.probe()
	now := ""
	if err != nil {
		now = err.Error()
	}
	switch {
	case now == r.last:
	case now != "":
		r.log.Error("serve: not ready: "+now, "readyz", 503)
	default:
		r.log.Info("serve: ready again", "was", r.last)
	}
	r.last = now
	return err
}

func (r *readiness) probe() error {
	if open, limit, err := r.files(); err == nil && limit > 0 && open*10 >= limit*9 {
		// At the limit itself this answer could not be sent (accepting
		// the request needs a descriptor): 90% is the warning in time.
		return fmt.Errorf("too many open files: %d of %d in use (RLIMIT_NOFILE); raise LimitNOFILE= in the systemd unit or ulimit -n", open, limit)
	}
	if fi, err := os.Stat(r.intake); err != nil || !fi.IsDir() {
		return nil // not opened yet: the adapters are not connected either
	}
	dir := durable.Dir(r.intake)
	err := durable.WriteFile(dir, probeName, []byte("ok\n"), durable.WriteOptions{Hook: r.hook, NoDirSync: true})
	if err == nil {
		err = durable.RemoveFile(dir, probeName, r.hook)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return fmt.Errorf("too many open files: %v; raise LimitNOFILE= in the systemd unit or ulimit -n", err)
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("intake journal: %s failed: %v; free disk space", failedStep(err), err)
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return fmt.Errorf("intake journal: %s failed: %v; make %s writable by the user mnemo runs as", failedStep(err), err, r.intake)
	default:
		return fmt.Errorf("intake journal: %s failed: %v; free disk space or check the disk (dmesg)", failedStep(err), err)
	}
}

// failedStep names the disk operation err failed at ("fsync", "write").
func failedStep(err error) string {
	var de *durable.Error
	if errors.As(err, &de) {
		return de.Op
	}
	return "write"
}
