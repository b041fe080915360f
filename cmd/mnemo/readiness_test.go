package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// /readyz turns 503 naming the cause and its fix while the intake
// journal's folder cannot take a durable write (a failing fsync, a full
// or read-only disk), and 200 again once the disk is back, through serve
// with the disk faults every crash test injects.
func TestReadyzWhenTheDiskFails(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	env, logs := serveEnv(w)
	var fault atomic.Pointer[[2]any] // op, errno
	env.faults = func(op, name string) error {
		if f := fault.Load(); f != nil && op == f[0].(string) && strings.Contains(name, "intake") {
			return f[1].(syscall.Errno)
		}
		return nil
	}
	intake := filepath.Join(w.dir, "data", "state", "intake")
	if err := os.MkdirAll(intake, 0o700); err != nil { // as the adapters' journal makes it
		t.Fatal(err)
	}
	fa := &fakeAdapter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := goServe(t, ctx, env, cfg, adapters(namedAdapter{"fake", fa}))
	<-fa.started
	base := "http://" + addr
	if code, body := get(t, base+"/readyz"); code != 200 || !strings.HasPrefix(body, "ready") {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	for _, tc := range []struct {
		op    string
		errno syscall.Errno
		want  []string
	}{
		{"fsync", syscall.EIO, []string{"intake journal: fsync failed: fsync ", "input/output error", "; free disk space or check the disk"}},
		{"write", syscall.ENOSPC, []string{"intake journal: write failed: ", "no space left on device; free disk space\n"}},
		{"create", syscall.EROFS, []string{"intake journal: create failed: ", "read-only file system; make " + intake + " writable"}},
		{"create", syscall.EMFILE, []string{"too many open files: ", "raise LimitNOFILE="}},
	} {
		fault.Store(&[2]any{tc.op, tc.errno})
		code, body := get(t, base+"/readyz")
		if code != 503 {
			t.Errorf("%s failing with %v: /readyz = %d %q", tc.op, tc.errno, code, body)
		}
		for _, want := range tc.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s failing with %v: /readyz body %q lacks %q", tc.op, tc.errno, body, want)
			}
		}
	}
	fault.Store(nil)
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz once the disk is back = %d %q", code, body)
	}
	if left, _ := filepath.Glob(filepath.Join(intake, ".*")); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"level=ERROR msg=\"serve: not ready: intake journal: fsync failed", "serve: ready again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// /readyz turns 503 before the open files run out (at 90% of
// RLIMIT_NOFILE: at the limit itself the request could not be accepted)
// and 200 once files are closed. The test lowers this process's soft
// limit to a few files above what it holds, opens files until the
// warning, then closes them.
func TestReadyzWhenFilesRunOut(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Skipf("no RLIMIT_NOFILE: %v", err)
	}
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	env, _ := serveEnv(w)
	fa := &fakeAdapter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := goServe(t, ctx, env, cfg, adapters(namedAdapter{"fake", fa}))
	<-fa.started
	base := "http://" + addr
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	open, _, err := openFiles()
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	limit := open + 40
	low := syscall.Rlimit{Cur: uint64(limit), Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower RLIMIT_NOFILE: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig)
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for n, _, _ := openFiles(); n*10 < limit*9; n++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	code, body := get(t, base+"/readyz")
	if code != 503 || !strings.Contains(body, "too many open files: ") || !strings.Contains(body, " of "+strconv.Itoa(limit)+" in use (RLIMIT_NOFILE); raise LimitNOFILE=") {
		t.Errorf("/readyz near the open files limit = %d %q", code, body)
	}
	for _, f := range held {
		f.Close()
	}
	held = nil
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz once files were closed = %d %q", code, body)
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
