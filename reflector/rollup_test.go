package reflector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/memory"
)

// fakeRollupStore is one owner's files in memory; failures are injected.
type fakeRollupStore struct {
	mu                      sync.Mutex
	files                   map[string]string
	listErr, readErr, wrErr error
	writes                  int
}

func (s *fakeRollupStore) Episodes(string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p := range s.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, s.listErr
}

func (s *fakeRollupStore) Read(_, p string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.files[p]
	if !ok {
		return "", "", s.readErr
	}
	return t, fmt.Sprint(len(t), t), s.readErr
}

func (s *fakeRollupStore) WriteRollup(_, p, text, base string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrErr != nil {
		return s.wrErr
	}
	cur := ""
	if t, ok := s.files[p]; ok {
		cur = fmt.Sprint(len(t), t)
	}
	if cur != base {
		return fmt.Errorf("%s %w", p, memory.ErrConflict)
	}
	s.files[p] = text
	s.writes++
	return nil
}

func newRollupJob(t *testing.T, store *fakeRollupStore, model *llmtest.Script, tweak func(*RollupConfig)) (*Rollups, *[]string) {
	t.Helper()
	var outcomes []string
	cfg := RollupConfig{Model: model, Store: store, StateDir: t.TempDir(), After: 3, Clock: newClock(),
		OnOutcome: func(o string) { outcomes = append(outcomes, o) }, OnTokens: func(string, int) {}}
	if tweak != nil {
		tweak(&cfg)
	}
	return NewRollups(cfg), &outcomes
}

const fakeJan = "# 2026-01 Episodes\n> Summary: s\n\n## Logger fix: part 2!\n- Summary: reopen\n- Date: 2026-01-02\n"

func TestRollupFileShape(t *testing.T) {
	refs := []ref{{label: "2026-01 § A", link: "2026-01.md#a"}, {label: "2026-01 § B", link: "2026-01.md#b"}}
	p := Period{Path: "episodes/2026-Q1.md", hash: "ff"}
	long := strings.Repeat("- x [1]\n", 40)
	got, err := rollupFile(p, []string{"2026-01.md"}, refs, "- first [1, 1, 2, x]\n- no brackets\n- empty [] \n-  [1]\n"+long)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "> Summary: roll-up of 2026-Q1\n") || !strings.Contains(got, "- first ([2026-01 § A](2026-01.md#a), [2026-01 § B](2026-01.md#b))\n") {
		t.Errorf("file:\n%s", got)
	}
	if n := strings.Count(got, "\n- "); n != maxRollupLines {
		t.Errorf("%d lines; want at most %d", n, maxRollupLines)
	}
	if _, err := rollupFile(p, nil, refs, "Summary: s\nno lines"); err == nil {
		t.Error("an answer without lines was taken")
	}
	if a := anchor("Logger fix: part 2! (été)_x"); a != "logger-fix-part-2-été_x" {
		t.Errorf("anchor = %q", a)
	}
	in := rollupInput("episodes/2026-Q1.md", []ref{{label: "a", body: strings.Repeat("x", 10)}, {label: "b", body: strings.Repeat("y", 10)}}, 15)
	if !strings.Contains(in, "[2] b\n(listed by heading only") || !strings.Contains(in, "1 record(s) past the 15-byte input bound") {
		t.Errorf("input:\n%s", in)
	}
	if old("20x6-01", time.Now(), 3) {
		t.Error("a bad month is old")
	}
}

func TestRollupJobFailures(t *testing.T) {
	store := &fakeRollupStore{files: map[string]string{"episodes/2020-01.md": fakeJan}}
	model := llmtest.New()
	job, outcomes := newRollupJob(t, store, model, nil)
	ctx := context.Background()

	store.listErr = errors.New("disk gone")
	if _, err := job.Run(ctx, "alice", false); err == nil {
		t.Error("a failed listing: no error")
	}
	store.listErr, store.readErr = nil, errors.New("unreadable")
	if _, err := job.Run(ctx, "alice", false); err == nil {
		t.Error("a failed read: no error")
	}
	store.readErr = nil
	// A write refused by a person's edit is a conflict, kept.
	store.wrErr = fmt.Errorf("x %w", memory.ErrConflict)
	model.Add(llmtest.Text("Summary: s\n- a [1]"))
	if rep, err := job.Run(ctx, "alice", false); err != nil || len(rep.Failed) != 1 || (*outcomes)[0] != "conflict" {
		t.Errorf("conflict: %+v, %v, %v", rep, err, *outcomes)
	}
	// A cancelled context stops before any call.
	job, _ = newRollupJob(t, store, model, nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := job.Run(cctx, "alice", false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// A state folder that cannot be written: no call at all.
	blocked := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocked, nil, 0o600)
	job, _ = newRollupJob(t, store, model, func(c *RollupConfig) { c.StateDir = blocked })
	before := len(model.Requests())
	if _, err := job.Run(ctx, "alice", false); err == nil || len(model.Requests()) != before {
		t.Errorf("an unwritable state: %v, %d calls", err, len(model.Requests())-before)
	}
	job.AfterReflection(ctx, "alice") // logged, no call
	if len(model.Requests()) != before {
		t.Error("AfterReflection called the model without its state")
	}
	if NewRollups(RollupConfig{After: 3, Store: store}) != nil {
		t.Error("a job without a model")
	}
}

// A damaged state file counts every period as tried today; a write
// failure is a failure, tried another day; a source changed between the
// plan and the call is not written.
func TestRollupStateAndChanges(t *testing.T) {
	store := &fakeRollupStore{files: map[string]string{"episodes/2020-01.md": fakeJan}}
	model := llmtest.New()
	job, _ := newRollupJob(t, store, model, nil)
	dir := job.state.dir
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "alice.json"), []byte("{torn"), 0o600)
	if rep, _ := job.Run(context.Background(), "alice", false); rep.Calls != 0 || !rep.Periods[0].Tried {
		t.Errorf("a damaged state: %+v", rep)
	}
	job.AfterReflection(context.Background(), "alice")
	if len(model.Requests()) != 0 {
		t.Error("a call on the day the state was found damaged")
	}
	os.Remove(filepath.Join(dir, "alice.json"))
	os.Mkdir(filepath.Join(dir, "bob.json"), 0o700)
	if _, err := job.Run(context.Background(), "bob", false); err == nil {
		t.Error("an unreadable state: no error")
	}
	store.wrErr = errors.New("disk full")
	model.Add(llmtest.Text("Summary: s\n- a [1]"))
	if rep, _ := job.Run(context.Background(), "alice", false); len(rep.Failed) != 1 || store.writes != 0 {
		t.Errorf("a failed write: %+v", rep)
	}
	// The source changes after the plan: caught before the call.
	store.wrErr = nil
	p := Period{Path: "episodes/2020-Q1.md", Sources: []string{"episodes/2020-01.md"}, hash: "stale"}
	if outcome, err := job.make(context.Background(), "alice", p); outcome != "failed" || err == nil {
		t.Errorf("a stale plan: %s, %v", outcome, err)
	}
	store.readErr = errors.New("gone")
	if outcome, err := job.make(context.Background(), "alice", p); outcome != "failed" || err == nil {
		t.Errorf("an unreadable source: %s, %v", outcome, err)
	}
	os.WriteFile(filepath.Join(dir, "plain"), nil, 0o600)
	if err := ForgetRollups(filepath.Join(dir, "plain"), "x"); err == nil {
		t.Error("ForgetRollups in a file: no error")
	}
}

// The reflector calls AfterRun after a successful run, with its scope,
// before the person's next run; not after a failed one.
func TestAfterRunHook(t *testing.T) {
	var mu sync.Mutex
	var scopes []mnemo.Scope
	e := newEnv(t, func(c *Config) {
		c.AfterRun = func(_ context.Context, s mnemo.Scope) {
			mu.Lock()
			scopes = append(scopes, s)
			mu.Unlock()
		}
	})
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	e.add(turn("alice", "t1", "hello"))
	e.clock.Advance(2 * time.Minute)
	e.drain("the reflection")
	mu.Lock()
	if len(scopes) != 1 || scopes[0].User != "alice" {
		t.Errorf("AfterRun scopes: %+v", scopes)
	}
	mu.Unlock()
	// An explicit turn's run ("Remember this") is answered at its end:
	// no roll-up look delays it.
	e.srv.Enqueue(openaitest.Text("nothing to remember"))
	tr := turn("alice", "t2", "remember this: I like tea")
	tr.Explicit = true
	e.add(tr)
	e.clock.Advance(2 * time.Minute)
	e.drain("the explicit reflection")
	mu.Lock()
	defer mu.Unlock()
	if len(scopes) != 1 {
		t.Errorf("AfterRun after an explicit turn: %+v", scopes)
	}
}

// Quarters first, then the year from them; a year whose quarter failed
// waits; AfterReflection looks once a day and survives a failed run.
func TestRollupQuartersThenYear(t *testing.T) {
	store := &fakeRollupStore{files: map[string]string{
		"episodes/2024-02.md": strings.ReplaceAll(fakeJan, "2026-01", "2024-02"),
		"episodes/2024-11.md": strings.ReplaceAll(fakeJan, "2026-01", "2024-11"),
		"episodes/2026-02.md": fakeJan, // not old on 2026-03-05
	}}
	model := llmtest.New(llmtest.Text("Summary: q1\n- a [1]"), llmtest.Fail(errors.New("down")))
	job, outcomes := newRollupJob(t, store, model, nil)
	rep, err := job.Run(context.Background(), "alice", false)
	if err != nil || !slices.Equal(rep.Written, []string{"episodes/2024-Q1.md"}) || !slices.Equal(rep.Failed, []string{"episodes/2024-Q4.md"}) || rep.Calls != 2 {
		t.Fatalf("first day: %+v, %v", rep, err)
	}
	if len(*outcomes) != 2 || (*outcomes)[1] != "failed" {
		t.Errorf("outcomes %v", *outcomes)
	}
	// The next day: Q4, then the year from Q1 and Q4, its input their lines.
	job.clock.(interface{ Advance(time.Duration) }).Advance(24 * time.Hour)
	model.Add(llmtest.Text("Summary: q4\n- b [1]"), llmtest.Text("Summary: the year\n- a and b [1, 2]"))
	if rep, err = job.Run(context.Background(), "alice", false); err != nil || len(rep.Written) != 2 {
		t.Fatalf("next day: %+v, %v", rep, err)
	}
	reqs := model.Requests()
	if in := reqs[len(reqs)-1].Messages[1].Content; !strings.Contains(in, "[1] 2024-Q1\n") || !strings.Contains(in, "- a ([2024-02 § Logger fix: part 2!](2024-02.md#logger-fix-part-2))") {
		t.Errorf("year input:\n%s", in)
	}
	if y := store.files["episodes/2024.md"]; !strings.Contains(y, "- a and b ([2024-Q1](2024-Q1.md), [2024-Q4](2024-Q4.md))") {
		t.Errorf("year:\n%s", y)
	}
	// AfterReflection: once a day, whatever happens.
	store.files["episodes/2024-03.md"] = fakeJan
	job.clock.(interface{ Advance(time.Duration) }).Advance(24 * time.Hour)
	store.listErr = errors.New("listing failed")
	job.AfterReflection(context.Background(), "alice") // logged
	store.listErr = nil
	job.AfterReflection(context.Background(), "alice") // looked today
	if n := len(model.Requests()); n != len(reqs) {
		t.Errorf("%d calls after the day's look had failed", n-len(reqs))
	}
}

// What a call cost is told with its owner; the state goes with a forget.
func TestRollupTokensAndForget(t *testing.T) {
	store := &fakeRollupStore{files: map[string]string{"episodes/2020-01.md": fakeJan}}
	reply := llmtest.Text("Summary: s\n- a [1]")
	reply.Response.Usage.TotalTokens = 42
	model := llmtest.New(reply)
	var charged []string
	job, _ := newRollupJob(t, store, model, func(c *RollupConfig) {
		c.OnTokens = func(owner string, n int) { charged = append(charged, fmt.Sprint(owner, n)) }
	})
	if rep, err := job.Run(context.Background(), "alice", false); err != nil || len(rep.Written) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if !slices.Equal(charged, []string{"alice42"}) {
		t.Errorf("charged %v", charged)
	}
	state := filepath.Dir(job.state.dir)
	if _, err := os.Stat(filepath.Join(job.state.dir, "alice.json")); err != nil {
		t.Fatal(err)
	}
	if err := ForgetRollups(state, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(job.state.dir, "alice.json")); !os.IsNotExist(err) {
		t.Errorf("the state stays: %v", err)
	}
}
