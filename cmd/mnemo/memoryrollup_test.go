package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// TestMemoryRollup: `mnemo memory rollup` against the fake OpenAI server
// writes a quarter's roll-up from its months, changes no month, keeps the
// roll-up in the history under "rollup", makes no call when nothing
// changed, and memory pending lists what is due; --dry-run calls nothing.
func TestMemoryRollup(t *testing.T) {
	dir := inTempDir(t)
	srv := openaitest.New(t)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-key-123456", "MNEMO_DATA_DIR": filepath.Join(dir, "data", "memory")}
	mem := filepath.Join(dir, "data", "memory", "alice", "episodes")
	jan := "# 2025-01 Episodes\n\n> Summary: logger\n\n## Logger fix\n- Summary: reopen on SIGHUP\n- Date: 2025-01-12\n"
	feb := "# 2025-02 Episodes\n\n> Summary: cache\n\n## CI cache\n- Summary: keyed on go.sum\n- Date: 2025-02-03\n"
	putFile(t, filepath.Join(mem, "2025-01.md"), jan)
	putFile(t, filepath.Join(mem, "2025-02.md"), feb)
	mine := "# My Q1\n\n> Summary: typed by hand, no fingerprint\n"
	putFile(t, filepath.Join(mem, "2025-Q1.md"), mine) // made by hand: redone, its text kept in the history

	cli(t, env, "memory", "pending", "alice").want(t, 0, "roll-up due  alice  episodes/2025-Q1.md  (from 2 files)", "")
	cli(t, env, "memory", "rollup", "--dry-run", "alice").want(t, 0, "episodes/2025-Q1.md  due  (from 2025-01.md, 2025-02.md)\nepisodes/2025.md  due  (from 2025-Q1.md)\n2 roll-ups due; nothing written (--dry-run)\n", "")
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("a dry run made %d model calls", n)
	}
	srv.Enqueue(openaitest.Text("Summary: logger and CI\n- Log rotation fixed [1]\n- CI cache keyed on go.sum [2]"),
		openaitest.Text("Summary: 2025\n- Logging and CI work [1]"))
	cli(t, env, "memory", "rollup", "alice").want(t, 0, "episodes/2025-Q1.md  written  (from 2025-01.md, 2025-02.md)\nepisodes/2025.md  written  (from 2025-Q1.md)\n2 roll-ups written, 0 failed, 2 model calls\n", "")
	q1, err := os.ReadFile(filepath.Join(mem, "2025-Q1.md"))
	if err != nil || !strings.Contains(string(q1), "- Log rotation fixed ([2025-01 § Logger fix](2025-01.md#logger-fix))") {
		t.Fatalf("roll-up: %s, %v", q1, err)
	}
	for name, want := range map[string]string{"2025-01.md": jan, "2025-02.md": feb} {
		if got, _ := os.ReadFile(filepath.Join(mem, name)); string(got) != want {
			t.Errorf("%s changed:\n%s", name, got)
		}
	}
	cli(t, env, "memory", "history", "alice", "episodes/2025-Q1.md").want(t, 0, "rollup (mnemo memory rollup)", "")
	cli(t, env, "memory", "history", "alice", "episodes/2025-Q1.md").want(t, 0, "earlier text", "")
	if y, _ := os.ReadFile(filepath.Join(mem, "2025.md")); !strings.Contains(string(y), "- Logging and CI work ([2025-Q1](2025-Q1.md))") {
		t.Errorf("year roll-up:\n%s", y)
	}
	cli(t, env, "memory", "rollup", "alice").want(t, 0, "episodes/2025-Q1.md  up to date", "")
	r := cli(t, env, "memory", "pending", "alice")
	r.want(t, 0, "nothing is waiting", "")
	if strings.Contains(r.stdout, "roll-up due") {
		t.Errorf("roll-ups due after they were made:\n%s", r.stdout)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d model calls; want 2", n)
	}
	cli(t, env, "memory", "rollup", "nobody").want(t, 1, "", "nobody")
	cli(t, env, "memory", "rollup").want(t, 2, "", "usage: mnemo memory rollup [--dry-run] USER")
	env["MNEMO_MEMORY_ROLLUP_AFTER"] = "0"
	cli(t, env, "memory", "rollup", "alice").want(t, 1, "", "roll-ups are off")
}

// The command's other answers: a running owner, a failed call (tried
// again another day, exit 1, nothing written), nothing old enough, and
// every owner's roll-ups due in pending.
func TestMemoryRollupRefusals(t *testing.T) {
	w := newChatWorld(t)
	mem := filepath.Join(w.dir, "data", "memory")
	putFile(t, filepath.Join(mem, "alice", "episodes", "2025-04.md"), "# 2025-04 Episodes\n\n> Summary: a\n\n## A\n- Summary: a\n- Date: 2025-04-01\n")
	putFile(t, filepath.Join(mem, "bob", "episodes", "2026-11.md"), "# 2026-11 Episodes\n\n> Summary: b\n\n## B\n- Summary: b\n- Date: 2026-11-01\n")
	cli(t, w.env, "memory", "rollup", "bob").want(t, 0, "nothing to roll up: bob has no episode months older than 3 months in a finished quarter\n", "")
	cli(t, w.env, "memory", "pending").want(t, 0, "roll-up due  alice  episodes/2025-Q2.md  (from 1 file)\n1 roll-up due;", "")

	lock, err := lockData(nil, lockConfig(t, w), "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	cli(t, w.env, "memory", "rollup", "alice").want(t, 1, "", "(mnemo serve) runs on this data folder and rolls up after each reflection")
	lock.Close()

	// The fake model answers nothing usable: the call fails, nothing is written.
	w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Text("no lines"), true })
	cli(t, w.env, "memory", "rollup", "alice").want(t, 1, "episodes/2025-Q2.md  failed; tried again on another day", "1 roll-up failed")
	if exists(filepath.Join(mem, "alice", "episodes", "2025-Q2.md")) {
		t.Error("a failed roll-up left a file")
	}
	cli(t, w.env, "memory", "rollup", "alice").want(t, 0, "episodes/2025-Q2.md  due; its model call was made today, the next is tomorrow", "")
	// No model server to be found: said, nothing written.
	noServer := map[string]string{"MNEMO_DATA_DIR": w.env["MNEMO_DATA_DIR"], "MNEMO_OLLAMA_URL": "http://127.0.0.1:1"}
	putFile(t, filepath.Join(mem, "alice", "episodes", "2024-04.md"), "# 2024-04 Episodes\n\n> Summary: a\n\n## A\n- Summary: a\n- Date: 2024-04-01\n")
	if r := cli(t, noServer, "memory", "rollup", "alice"); r.code != 1 || exists(filepath.Join(mem, "alice", "episodes", "2024-Q2.md")) {
		t.Errorf("without a model server: %+v", r)
	}
	// A state folder that cannot hold the roll-up state: no call.
	os.Remove(filepath.Join(w.dir, "data", "state", "rollup", "alice.json"))
	putFile(t, filepath.Join(w.dir, "data", "state", "rollup", "alice.json", "x"), "")
	before := len(w.srv.Requests())
	cli(t, w.env, "memory", "rollup", "alice").want(t, 1, "", "rollup state")
	if len(w.srv.Requests()) != before {
		t.Error("a call without its state")
	}
	if _, err := (noModel{}).Complete(context.Background(), llm.Request{}); err == nil {
		t.Error("the dry run's model answered")
	}
}
