package main

// One owner per data folder: every command that writes memory or the
// reflection journal (chat, serve, memory forget) holds an exclusive flock on
// mnemo.lock in the state folder for as long as it runs. A second writer is
// refused at once, naming the process that holds the lock (memory forget
// and access then ask that process to do it: control.go; a second chat
// talks through it: remoteclient.go); read-only admin commands
// take no lock. The kernel releases a flock when its file is closed
// or the process dies (kill -9 included), so a lock is never left stale.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/state"
)

// lockFileName is the lock's file in the state folder.
const lockFileName = "mnemo.lock"

// dataLock is a held lock on a data folder, with its state folder open
// (st: the files the holder keeps there are opened through it). Close
// releases it.
type dataLock struct {
	f  *os.File
	st *state.State
}

// Close releases the lock. The holder line stays in the file: only the
// flock counts, and the next holder rewrites it.
func (l *dataLock) Close() error {
	l.st.Close()
	return l.f.Close()
}

// lockData takes the exclusive lock of cfg's data folder for command (as
// shown to a second process: "mnemo serve"), opening the state folder
// (openState: made 0700 when missing, tightened when looser). It does not wait: when another process holds
// the lock it returns an error (exit 1) naming that process; any other
// problem is an error (exit 1) naming the lock file and the cause. Take it
// before opening the app, so that only the owner replays the journal.
// env.flock, when set, stands in for syscall.Flock (env may be nil).
func lockData(env *cliEnv, cfg *config.Config, command string) (*dataLock, error) {
	flock := syscall.Flock
	if env != nil && env.flock != nil {
		flock = env.flock
	}
	dir := cfg.State.Dir
	path := filepath.Join(dir, lockFileName)
	st, err := openState(env, dir)
	if err != nil {
		return nil, err
	}
	// Through the state folder's root: a link put there by someone else
	// must not make mnemo (perhaps run by root for an admin command) write
	// where it points.
	f, err := st.OpenFile(lockFileName, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, state.ErrLink) {
		st.Close()
		return nil, failure(err) // it names the link and the fix
	}
	if err != nil {
		st.Close()
		return nil, lockError(cfg, path, err)
	}
	locked := false
	defer func() {
		if !locked {
			st.Close()
		}
	}()
	err = flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder, ok := lockHolder(f)
		f.Close()
		if !ok {
			holder = "another mnemo process"
		}
		return nil, failure(&lockHeldError{dataDir: cfg.Memory.DataDir, holder: holder})
	}
	if err != nil {
		f.Close()
		return nil, lockError(cfg, path, fmt.Errorf("flock: %w", err))
	}
	// The lock is ours: say who holds it, for the next one who asks. Write,
	// then cut what is left of a longer line, so that a reader finds a whole
	// line, the last holder's or ours (none only before a first holder wrote).
	line := fmt.Sprintf("%d %s\n", os.Getpid(), command)
	if _, err := f.WriteAt([]byte(line), 0); err != nil {
		f.Close()
		return nil, lockError(cfg, path, err)
	}
	if err := f.Truncate(int64(len(line))); err != nil {
		f.Close()
		return nil, lockError(cfg, path, err)
	}
	locked = true
	return &dataLock{f: f, st: st}, nil
}

// lockHeldError is the refusal of a lock another process holds; holder is
// "process PID (COMMAND)" or "another mnemo process".
type lockHeldError struct{ dataDir, holder string }

func (e *lockHeldError) Error() string {
	return fmt.Sprintf("data folder %s is in use by %s; stop it or point --config / MNEMO_DATA_DIR elsewhere", e.dataDir, e.holder)
}

// lockHolder reads "PID COMMAND" from the lock file and returns it as
// "process PID (COMMAND)"; ok is false when the file holds no such line
// (unreadable, or the holder has not written it yet).
func lockHolder(f *os.File) (string, bool) {
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, 0)
	line, _, complete := strings.Cut(string(buf[:n]), "\n")
	pid, command, _ := strings.Cut(line, " ")
	if p, err := strconv.Atoi(pid); !complete || err != nil || p <= 0 || strings.TrimSpace(command) == "" {
		return "", false
	}
	return fmt.Sprintf("process %s (%s)", pid, strings.TrimSpace(command)), true
}

// lockError is a lock that could not be taken for a reason other than
// another holder: exit 1, naming the lock file and the cause.
func lockError(cfg *config.Config, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Path == path || pe.Path == lockFileName) {
		err = fmt.Errorf("%s: %w", pe.Op, pe.Err) // the path is named already
	}
	return failure(fmt.Errorf("cannot lock the data folder %s: lock file %s: %v (the state folder, state.dir or \"state\" beside memory.dataDir, holds the lock and the reflection journal and must be a writable folder)", cfg.Memory.DataDir, path, err))
}
