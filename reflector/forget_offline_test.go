package reflector

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Turns journaled by a process that has stopped are dropped for one user
// only, and the next Open replays the others but not them.
func TestForgetJournaled(t *testing.T) {
	e := envWithTwoUsers(t)
	e.r.cancel() // stop as a crash would: everything stays journaled
	e.r.Close(cancelled())

	n, err := ForgetJournaled(e.dir, "alice")
	if err != nil || n != 2 {
		t.Fatalf("ForgetJournaled = %d, %v; want 2", n, err)
	}
	if lines := e.journalLines("alice"); lines != nil {
		t.Errorf("alice's journal still holds %q", lines)
	}
	if lines := e.journalLines("bob"); len(lines) != 1 {
		t.Errorf("bob's journal holds %q", lines)
	}
	r, err := Open(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(cancelled())
	if r.Pending() != 1 {
		t.Errorf("after a restart %d turns are pending, want bob's 1", r.Pending())
	}

	if n, err := ForgetJournaled(e.dir, "alice"); n != 0 || err != nil {
		t.Errorf("second ForgetJournaled = %d, %v", n, err)
	}
	if n, err := ForgetJournaled(filepath.Join(e.dir, "none"), "alice"); n != 0 || err != nil {
		t.Errorf("ForgetJournaled without a journal folder = %d, %v", n, err)
	}
	if _, err := ForgetJournaled(e.dir, "../x"); err == nil {
		t.Error("ForgetJournaled accepted a bad user name")
	}
	// A journal that cannot be read is an error naming the user.
	if err := os.Mkdir(filepath.Join(e.dir, "reflector", "carol.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ForgetJournaled(e.dir, "carol"); err == nil || !strings.Contains(err.Error(), "forget the journaled turns of carol") {
		t.Errorf("ForgetJournaled of an unreadable journal = %v", err)
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
