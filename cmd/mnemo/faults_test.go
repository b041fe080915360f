package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// chatFaults runs `mnemo chat --user zhangsan` in w with a disk-fault hook.
func (w *chatWorld) chatFaults(t *testing.T, input string, faults func(op, name string) error) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runWith(stopOn(context.Background()), []string{"chat", "--user", "zhangsan"}, cliEnv{
		getenv: func(k string) string { return w.env[k] }, stdin: strings.NewReader(input),
		stdout: &out, stderr: &errOut, faults: faults})
	return cliResult{exitCode(err, &errOut), out.String(), errOut.String()}
}

// failOn fails every disk operation op whose name contains part with err.
func failOn(op, part string, err error) func(string, string) error {
	return func(o, name string) error {
		if o == op && strings.Contains(name, part) {
			return err
		}
		return nil
	}
}

// TestChatDiskFaultsAreFailures: a memory write that meets a full,
// read-only or failing disk is not a success. The chat exits 1 and says
// what failed and why; the turn stays journaled and is reflected once the
// disk is back.
func TestChatDiskFaultsAreFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     string
		err    error
		errMsg string
	}{
		{"full disk", "write", syscall.ENOSPC, "no space left on device"},
		{"read-only", "create", syscall.EROFS, "read-only file system"},
		{"I/O error", "fsync", syscall.EIO, "input/output error"},
		{"rename failure", "rename", syscall.EIO, "rename into facts/user.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newChatWorld(t)
			r := w.chatFaults(t, "Hello, I'm Zhang San.\n", failOn(tc.op, "user.md", tc.err))
			r.want(t, 1, "Noted.\n", tc.errMsg)
			for _, want := range []string{"the reflection failed: ", "facts/user.md", "not everything was saved", "stay journaled"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "zhangsan", "facts", "user.md")); err == nil {
				t.Fatal("the fact file exists though its write failed")
			}
			if j, _ := os.ReadFile(filepath.Join(w.dir, "data", "state", "reflector", "zhangsan.jsonl")); !strings.Contains(string(j), "Zhang San") {
				t.Fatalf("the turn left the journal: %q", j)
			}
			// The disk is back: the next start reflects the journaled turn.
			w.chatFaults(t, "", nil).want(t, 0, "", "")
			if got := w.file(t, "zhangsan/facts/user.md"); !strings.Contains(got, "- Name: Zhang San") {
				t.Fatalf("facts/user.md after recovery = %q", got)
			}
		})
	}
}

// TestChatJournalFaultIsAFailure: a turn that cannot be written to the
// journal is lost, and the chat says so and exits 1. A journal that cannot
// be fsynced (at exit: turns are fsynced off the reply path) fails the chat
// too, saying why.
func TestChatJournalFaultIsAFailure(t *testing.T) {
	w := newChatWorld(t)
	r := w.chatFaults(t, "Hello, I'm Zhang San.\n", failOn("write", "zhangsan.jsonl", syscall.EIO))
	r.want(t, 1, "Noted.\n", "1 turn(s) could not be saved to the reflection journal")
	if !strings.Contains(r.stderr, "input/output error") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	w = newChatWorld(t)
	r = w.chatFaults(t, "Hello, I'm Zhang San.\n", failOn("fsync", "zhangsan.jsonl", syscall.EIO))
	r.want(t, 1, "Noted.\n", "not everything was saved")
	if !strings.Contains(r.stderr, "could not make the journal durable") || !strings.Contains(r.stderr, "input/output error") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
}

// TestCheckReportsFailedReflections: turns the reflector gave up on are a
// problem `memory check` reports (exit 1), by user.
func TestCheckReportsFailedReflections(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Zhang San.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	cli(t, w.env, "memory", "check").want(t, 0, "ok: 1 user, 1 file checked", "")
	failed := filepath.Join(w.dir, "data", "state", "reflector", "failed")
	putFile(t, filepath.Join(failed, "slack-T1-U2-20260305T150000Z-0a1b2c.jsonl"), `{"kind":"failed"}`+"\n")
	putFile(t, filepath.Join(failed, ".tmp"), "")
	r := cli(t, w.env, "memory", "check")
	r.want(t, 1, "reflection of slack-T1-U2's turns failed 3 times", "1 problem")
	if !strings.Contains(r.stdout, "mnemo memory pending slack-T1-U2 --retry") {
		t.Errorf("no way to retry given:\n%s", r.stdout)
	}
	cli(t, w.env, "memory", "check", "zhangsan").want(t, 0, "ok: 1 user, 1 file checked", "")
	putFile(t, filepath.Join(w.dir, "data", "state", "reflector", "failed2"), "")
	os.RemoveAll(failed)
	putFile(t, failed, "not a folder")
	cli(t, w.env, "memory", "check").want(t, 1, "", "read the failed reflections")
}
