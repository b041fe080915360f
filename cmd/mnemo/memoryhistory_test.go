package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

func TestMemoryHistoryAndRestore(t *testing.T) {
	w := newEditWorld(t) // ann's facts/user.md in dir/memory; state is dir/state
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(w.dir, "state", "history"), Now: func() time.Time { return time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	v1, _, _ := h.Record("ann", "facts/user.md", []byte("# Ann\n> Summary: v1\n"), "reflector (task t1)")
	h.Close()
	h, _ = memhistory.Open(memhistory.Options{Dir: filepath.Join(w.dir, "state", "history"), Now: func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }})
	h.Record("ann", "facts/user.md", []byte("# Ann\n> Summary: v2\n- Team: search\n"), "hand edit")
	h.Record("ann", "facts/other.md", []byte("# O\n> Summary: o\n"), "reflector (task t2)")
	h.RecordDelete("ann", "facts/gone.md", nil, "forget")
	h.Close()

	out := cli(t, w.env, "memory", "history", "ann", "facts/user.md")
	out.want(t, 0, "ID                    TIME (UTC)           WHO                  SIZE  CHANGE\n", "")
	lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "2026-11-21 09:00:00  hand edit") || !strings.Contains(lines[1], "+2 −1 lines") ||
		!strings.HasPrefix(lines[2], v1.ID) || !strings.Contains(lines[2], "reflector (task t1)") || !strings.Contains(lines[2], "created, 2 lines") {
		t.Errorf("history:\n%s", out.stdout)
	}
	all := cli(t, w.env, "memory", "history", "ann")
	all.want(t, 0, "PATH", "")
	if !strings.Contains(all.stdout, "facts/gone.md") || !strings.Contains(all.stdout, "deleted") || !strings.Contains(all.stdout, "facts/other.md") || strings.Count(all.stdout, "\n") != 5 {
		t.Errorf("history of all files:\n%s", all.stdout)
	}
	cli(t, w.env, "memory", "history", "bob").want(t, 0, "no history of bob", "")
	cli(t, w.env, "memory", "history", "ann", "facts/nope.md").want(t, 0, "no history of facts/nope.md of ann", "")

	// Restore by id: the file is back, the text it replaced is kept, the restore is recorded.
	cli(t, w.env, "memory", "restore", "ann", "facts/user.md", "--at", v1.ID).want(t, 0, "restored facts/user.md of ann to version "+v1.ID+" (", "")
	if got := w.read(t, "facts/user.md"); got != "# Ann\n> Summary: v1\n" {
		t.Errorf("after restore: %q", got)
	}
	hist := cli(t, w.env, "memory", "history", "ann", "facts/user.md").stdout
	if !strings.Contains(hist, "restore of "+v1.ID) || !strings.Contains(hist, "before restore") {
		t.Errorf("restore not recorded:\n%s", hist)
	}

	// A version the store cannot write back (over memory.writeCap): nothing
	// changes, and the history's newest is the file as it is again.
	big, _ := memhistory.Open(memhistory.Options{Dir: filepath.Join(w.dir, "state", "history")})
	vBig, _, _ := big.Record("ann", "facts/user.md", []byte("# Ann\n> Summary: big\n"+strings.Repeat("x", 2000)), "test")
	big.Close()
	os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("memory:\n  writeCap: 1024\n"), 0o600)
	cli(t, w.env, "memory", "restore", "ann", "facts/user.md", "--at", vBig.ID).want(t, 1, "", "the limit is 1024")
	if got := w.read(t, "facts/user.md"); got != "# Ann\n> Summary: v1\n" {
		t.Errorf("a failed restore changed the file: %q", got)
	}
	if h := cli(t, w.env, "memory", "history", "ann", "facts/user.md").stdout; !strings.Contains(strings.Split(h, "\n")[1], "restore failed; as it is") {
		t.Errorf("history after a failed restore:\n%s", h)
	}
	os.Remove(filepath.Join(w.dir, "mnemo.yaml"))

	// Mistakes.
	cli(t, w.env, "memory", "restore", "ann", "facts/user.md").want(t, 2, "", "memory restore needs --at ID or --at TIME")
	cli(t, w.env, "memory", "restore", "ann", "facts/user.md", "--at", "2020-01-01").want(t, 1, "", "no such version at 2020-01-01T23:59:59Z: the oldest kept is "+v1.ID)
	cli(t, w.env, "memory", "restore", "ann", "facts/nope.md", "--at", v1.ID).want(t, 1, "", "facts/nope.md of ann: no such version: it has no history")
	cli(t, w.env, "memory", "restore", "ann", "facts/gone.md", "--at", "2026-11-22").want(t, 1, "", "records its deletion; restore an earlier one")
	cli(t, w.env, "memory", "history", "ann", "notes.txt").want(t, 2, "", "notes.txt")
	if _, err := os.Stat(filepath.Join(w.mem, "ann", "facts", "gone.md")); !os.IsNotExist(err) {
		t.Error("a failed restore wrote a file")
	}
}
