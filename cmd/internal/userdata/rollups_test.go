package userdata

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// A forget of a month deletes the roll-ups that summarise it (its
// quarter's and its year's) and their history; the other months and
// roll-ups stay. A forget of a quarter's roll-up deletes its year's; a
// forget of everything deletes the roll-up job's state.
func TestForgetDeletesRollups(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	alice := filepath.Join(w.store.Dir(), "alice")
	files := map[string]string{
		"episodes/2025-02.md": "# 2025-02 Episodes\n> Summary: a\n\n## A\n- Summary: a\n- Date: 2025-02-01\n",
		"episodes/2025-05.md": "# 2025-05 Episodes\n> Summary: b\n\n## B\n- Summary: b\n- Date: 2025-05-01\n",
		"episodes/2025-Q1.md": "# 2025-Q1 Roll-up\n> Summary: a\n\n- A ([2025-02 § A](2025-02.md#a))\n",
		"episodes/2025-Q2.md": "# 2025-Q2 Roll-up\n> Summary: b\n\n- B ([2025-05 § B](2025-05.md#b))\n",
		"episodes/2025.md":    "# 2025 Roll-up\n> Summary: ab\n\n- A and B ([2025-Q1](2025-Q1.md), [2025-Q2](2025-Q2.md))\n",
	}
	for p, text := range files {
		put(t, filepath.Join(alice, p), text)
		if _, _, err := w.hist.Record("alice", p, []byte(text), "rollup"); err != nil {
			t.Fatal(err)
		}
	}
	put(t, filepath.Join(w.state, "rollup", "alice.json"), `{"checked":"2026-11-29"}`)
	rep, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2025-02.md"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.String(), "deleted 2 roll-ups summarising it") {
		t.Errorf("report: %q", rep.String())
	}
	for p := range files {
		gone := p == "episodes/2025-02.md" || p == "episodes/2025-Q1.md" || p == "episodes/2025.md"
		if exists(filepath.Join(alice, p)) == gone {
			t.Errorf("%s: exists %v after the forget of 2025-02", p, !gone)
		}
		if vs, _ := w.hist.List("alice", p); (len(vs) == 0) != gone {
			t.Errorf("%s: %d versions kept after the forget of 2025-02", p, len(vs))
		}
	}
	// The quarter roll-up that is left: its forget takes no year (gone).
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2025-Q2.md"}); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(alice, "episodes/2025.md"), files["episodes/2025.md"])
	put(t, filepath.Join(alice, "episodes/2025-Q2.md"), files["episodes/2025-Q2.md"])
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2025-Q2.md"}); err != nil || exists(filepath.Join(alice, "episodes/2025.md")) {
		t.Errorf("a quarter's forget left its year: %v", err)
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.state, "rollup", "alice.json")); !os.IsNotExist(err) {
		t.Errorf("the roll-up state stays after a forget of everything: %v", err)
	}
}

// A roll-up that cannot be deleted stops the forget with its name and the
// fix; a forget of a year's roll-up deletes nothing else.
func TestForgetRollupFailures(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	alice := filepath.Join(w.store.Dir(), "alice")
	put(t, filepath.Join(alice, "episodes/2025-02.md"), "# 2025-02 Episodes\n> Summary: a\n")
	put(t, filepath.Join(alice, "episodes/2025-Q1.md", "stuck"), "x") // a folder where the roll-up would be
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2025-02.md"}); err == nil || !strings.Contains(err.Error(), "episodes/2025-Q1.md") {
		t.Errorf("a roll-up that cannot be deleted: %v", err)
	}
	if _, err := (&rollups{store: w.store}).Forget(context.Background(), Request{Owner: "../x", Path: "episodes/2025-02.md"}); err == nil {
		t.Error("a bad owner: no error")
	}
	closed, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(t.TempDir(), "history")})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := (&rollups{store: w.store, hist: closed}).Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2023-02.md"}); err == nil || !strings.Contains(err.Error(), "not its history") {
		t.Errorf("a history that cannot be changed: %v", err)
	}
	put(t, filepath.Join(alice, "episodes/2024.md"), "# 2024 Roll-up\n> Summary: y\n")
	put(t, filepath.Join(alice, "episodes/2024-Q3.md"), "# 2024-Q3 Roll-up\n> Summary: q\n")
	rep, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2024.md"})
	if err != nil || rep.String() != "" || !exists(filepath.Join(alice, "episodes/2024-Q3.md")) {
		t.Errorf("a year's forget: %q, %v", rep.String(), err)
	}
}
