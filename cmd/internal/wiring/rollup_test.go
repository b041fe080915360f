package wiring

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"

	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

const (
	rollJan = "# 2026-01 Episodes\n\n> Summary: logger fix\n\n## Logger fix <!-- src: slack · dm · 2026-01-12 · https://acme.slack.com/archives/D01/p1 -->\n- Summary: log rotation lost lines → reopen on SIGHUP\n- Date: 2026-01-12\n\n## Short ID\n- Summary: 8-character task IDs\n- Date: 2026-01-20\n"
	rollFeb = "# 2026-02 Episodes\n\n> Summary: CI cache\n\n## CI build cache not restored\n- Summary: cache keyed on go.sum\n- Date: 2026-02-24\n"
	rollNov = "# 2026-11 Episodes\n\n> Summary: new work\n\n## New work\n- Summary: recent\n- Date: 2026-11-02\n"
)

// rollupFixture is a store with alice's months and a roll-up job on a
// scripted model, on 2026-11-29.
type rollupFixture struct {
	store   *memory.Store
	dir     string // the memory folder
	state   string
	model   *llmtest.Script
	clock   *clocktest.Fake
	job     *reflector.Rollups
	commits []memory.Commit
	out     []string
}

func newRollupFixture(t *testing.T, files map[string]string) *rollupFixture {
	t.Helper()
	m, dir := newMemory(t)
	f := &rollupFixture{store: m.Store, dir: dir, state: t.TempDir(), model: llmtest.New(),
		clock: clocktest.New(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))}
	for p, text := range files {
		full := filepath.Join(dir, "alice", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.job = f.open()
	return f
}

// open makes the job again on the same state folder (a restart).
func (f *rollupFixture) open() *reflector.Rollups {
	return reflector.NewRollups(reflector.RollupConfig{Model: f.model, Store: RollupStore{Store: f.store, OnCommit: func(c memory.Commit) { f.commits = append(f.commits, c) }},
		StateDir: f.state, After: 3, Clock: f.clock, OnOutcome: func(o string) { f.out = append(f.out, o) }})
}

func (f *rollupFixture) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "alice", p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot is every file of alice's, by path.
func (f *rollupFixture) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(filepath.Join(f.dir, "alice"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(filepath.Join(f.dir, "alice"), p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return out
}

// A roll-up removes nothing: every month file is byte for byte what it
// was; the roll-up links each line to the entries it summarises, without
// the months' provenance; a second run with nothing changed makes no call.
func TestRollupDeletesNothing(t *testing.T) {
	f := newRollupFixture(t, map[string]string{"episodes/2026-01.md": rollJan, "episodes/2026-02.md": rollFeb, "episodes/2026-11.md": rollNov, "facts/user.md": "# User\n> Summary: x\n- Name: A\n"})
	before := f.snapshot(t)
	f.model.Add(llmtest.Text("Summary: logger fix and CI cache\n- Fixed log rotation by reopening on SIGHUP [1]\n- Task IDs cut to 8 characters, CI cache keyed on go.sum [2, 3]\n- A line citing nothing\n- A line citing a record that is not there [9]"))
	rep, err := f.job.Run(context.Background(), "alice", false)
	if err != nil || len(rep.Written) != 1 || rep.Written[0] != "episodes/2026-Q1.md" || rep.Calls != 1 {
		t.Fatalf("Run = %+v, %v", rep, err)
	}
	after := f.snapshot(t)
	for p, text := range before {
		if after[p] != text {
			t.Errorf("%s changed:\n%s\nwas\n%s", p, after[p], text)
		}
	}
	if len(after) != len(before)+1 {
		t.Errorf("files after: %d; want the %d before and the roll-up", len(after), len(before))
	}
	q1 := f.read(t, "episodes/2026-Q1.md")
	for _, want := range []string{"# 2026-Q1 Roll-up\n", "> Summary: logger fix and CI cache\n", "<!-- mnemo-rollup: sources=2026-01.md,2026-02.md sha256=",
		"- Fixed log rotation by reopening on SIGHUP ([2026-01 § Logger fix](2026-01.md#logger-fix))\n",
		"- Task IDs cut to 8 characters, CI cache keyed on go.sum ([2026-01 § Short ID](2026-01.md#short-id), [2026-02 § CI build cache not restored](2026-02.md#ci-build-cache-not-restored))\n"} {
		if !strings.Contains(q1, want) {
			t.Errorf("the roll-up lacks %q:\n%s", want, q1)
		}
	}
	for _, no := range []string{"citing", "src:", "slack.com"} {
		if strings.Contains(q1, no) {
			t.Errorf("the roll-up holds %q:\n%s", no, q1)
		}
	}
	if len(f.commits) != 1 || f.commits[0].Path != "episodes/2026-Q1.md" || len(f.out) != 1 || f.out[0] != "written" {
		t.Errorf("commits %v, outcomes %v", f.commits, f.out)
	}
	// The request: the months' entries, numbered, without stamps; the
	// recent month is not there.
	req := f.model.Requests()[0]
	in := req.Messages[1].Content
	for _, want := range []string{"[1] 2026-01 § Logger fix", "[3] 2026-02 § CI build cache not restored", "reopen on SIGHUP"} {
		if !strings.Contains(in, want) {
			t.Errorf("the request lacks %q:\n%s", want, in)
		}
	}
	if strings.Contains(in, "New work") || strings.Contains(in, "slack.com") {
		t.Errorf("the request holds a recent month or a stamp:\n%s", in)
	}
	// The index shows the roll-up in place of the months.
	idx, err := memory.NewView(mustUserOf(t, f.store, "alice"), false, nil).Index(0)
	if err != nil || strings.Contains(idx, "2026-01.md") || !strings.Contains(idx, "episodes/2026-Q1.md") || !strings.Contains(idx, "2026-11.md") {
		t.Errorf("index:\n%s", idx)
	}

	// Nothing changed: no call, on this day or a later one, after a restart.
	for _, job := range []*reflector.Rollups{f.job, f.open()} {
		f.clock.Advance(48 * time.Hour)
		rep, err := job.Run(context.Background(), "alice", false)
		if err != nil || rep.Calls != 0 || len(f.model.Requests()) != 1 {
			t.Errorf("second run: %+v, %v, %d requests", rep, err, len(f.model.Requests()))
		}
	}
}

func mustUserOf(t *testing.T, s *memory.Store, name string) *memory.User {
	t.Helper()
	u, err := s.User(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// editingModel is a model that lets a person save a month file while it
// is asked, then answers.
type editingModel struct {
	*llmtest.Script
	edit func()
}

func (m editingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.edit()
	return m.Script.Complete(ctx, req)
}

// A hand edit to a month made while its roll-up is written is kept (the
// job never writes a month); the roll-up is then stale and made again on
// a later day. A hand edit to the roll-up meanwhile is kept too.
func TestRollupKeepsHandEdits(t *testing.T) {
	f := newRollupFixture(t, map[string]string{"episodes/2026-01.md": rollJan, "episodes/2026-02.md": rollFeb})
	edited := rollFeb + "\n## Added by hand\n- Summary: typed in vim\n- Date: 2026-02-28\n"
	f.model.Add(llmtest.Text("Summary: s\n- Logger [1]"))
	job := reflector.NewRollups(reflector.RollupConfig{Model: editingModel{f.model, func() {
		if err := os.WriteFile(filepath.Join(f.dir, "alice/episodes/2026-02.md"), []byte(edited), 0o600); err != nil {
			t.Error(err)
		}
	}}, Store: RollupStore{Store: f.store}, StateDir: f.state, After: 3, Clock: f.clock})
	if _, err := job.Run(context.Background(), "alice", false); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "episodes/2026-02.md"); got != edited {
		t.Errorf("the hand edit was lost:\n%s", got)
	}
	due, err := reflector.Due(RollupStore{Store: f.store}, "alice", f.clock.Now(), 3, false)
	if err != nil || len(due) != 1 || !due[0].Due {
		t.Errorf("after an edit of its month the roll-up is not due: %+v, %v", due, err)
	}
	// Today the period had its call: none again, whatever changed.
	if rep, _ := f.job.Run(context.Background(), "alice", false); rep.Calls != 0 || !rep.Periods[0].Tried {
		t.Errorf("a second call the same day: %+v", rep)
	}
	// Tomorrow it is made again, from the edited month.
	f.clock.Advance(24 * time.Hour)
	f.model.Add(llmtest.Text("Summary: s2\n- Typed by hand [4]"))
	if rep, err := f.job.Run(context.Background(), "alice", false); err != nil || len(rep.Written) != 1 {
		t.Fatalf("the next day: %+v, %v", rep, err)
	}
	if q1 := f.read(t, "episodes/2026-Q1.md"); !strings.Contains(q1, "[2026-02 § Added by hand](2026-02.md#added-by-hand)") {
		t.Errorf("the roll-up was not made from the edited month:\n%s", q1)
	}

	// A person edits the roll-up while it is made again: their text stays.
	if err := os.WriteFile(filepath.Join(f.dir, "alice/episodes/2026-01.md"), []byte(rollJan+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(24 * time.Hour)
	mine := "# My own roll-up\n> Summary: mine\n"
	f.model.Add(llmtest.Text("Summary: s3\n- Logger [1]"))
	job = reflector.NewRollups(reflector.RollupConfig{Model: editingModel{f.model, func() {
		if err := os.WriteFile(filepath.Join(f.dir, "alice/episodes/2026-Q1.md"), []byte(mine), 0o600); err != nil {
			t.Error(err)
		}
	}}, Store: RollupStore{Store: f.store}, StateDir: f.state, After: 3, Clock: f.clock})
	if rep, _ := job.Run(context.Background(), "alice", false); len(rep.Failed) != 1 {
		t.Errorf("a roll-up over a hand edit: %+v", rep)
	}
	if got := f.read(t, "episodes/2026-Q1.md"); got != mine {
		t.Errorf("the hand edit of the roll-up was overwritten:\n%s", got)
	}
}

// One call per period per day, whatever fails, across restarts; a failed
// call leaves nothing; an answer naming no record writes nothing.
func TestRollupBoundedCalls(t *testing.T) {
	f := newRollupFixture(t, map[string]string{"episodes/2026-01.md": rollJan, "episodes/2025-05.md": strings.ReplaceAll(rollFeb, "2026-02", "2025-05")})
	f.model.Add(llmtest.Fail(errors.New("model down")), llmtest.Text("no lines at all"))
	rep, err := f.job.Run(context.Background(), "alice", false)
	if err != nil || rep.Calls != 2 || len(rep.Failed) != 2 || len(rep.Written) != 0 {
		t.Fatalf("Run = %+v, %v", rep, err)
	}
	for _, p := range []string{"episodes/2026-Q1.md", "episodes/2025-Q2.md", "episodes/2025.md"} {
		if _, err := os.Stat(filepath.Join(f.dir, "alice", p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a failed call", p)
		}
	}
	for i := range 3 {
		job := f.job
		if i > 0 {
			job = f.open() // a restart
		}
		if rep, _ := job.Run(context.Background(), "alice", false); rep.Calls != 0 {
			t.Errorf("run %d the same day made %d calls", i, rep.Calls)
		}
	}
	// The next day: the quarters, then the year from its quarter.
	f.clock.Advance(24 * time.Hour)
	f.model.Add(llmtest.Text("Summary: q2\n- CI [1]"), llmtest.Text("Summary: q1\n- Logger [1]"), llmtest.Text("Summary: the year\n- CI work [1]"))
	rep, err = f.job.Run(context.Background(), "alice", false)
	if err != nil || rep.Calls != 3 || len(rep.Written) != 3 {
		t.Fatalf("the next day: %+v, %v", rep, err)
	}
	if y := f.read(t, "episodes/2025.md"); !strings.Contains(y, "- CI work ([2025-Q2](2025-Q2.md))") || !strings.Contains(y, "sources=2025-Q2.md") {
		t.Errorf("year roll-up:\n%s", y)
	}
	// The year is not made before its December is old enough.
	if due, _ := reflector.Due(RollupStore{Store: f.store}, "alice", f.clock.Now(), 3, true); len(due) != 1 || due[0].Path != "episodes/2025.md" || due[0].Due {
		t.Errorf("years due: %+v", due)
	}
	if st, err := os.ReadFile(filepath.Join(f.state, "rollup", "alice.json")); err != nil || !strings.Contains(string(st), "2026-11-30") {
		t.Errorf("state: %s, %v", st, err)
	}
}

// After a reflection the job looks at most once a day per owner; the
// dry run only says what is due; roll-ups off is no job.
func TestRollupAfterReflection(t *testing.T) {
	f := newRollupFixture(t, map[string]string{"episodes/2026-01.md": rollJan})
	rep, err := f.job.Run(context.Background(), "alice", true)
	if err != nil || rep.Calls != 0 || len(rep.Periods) != 1 || !rep.Periods[0].Due {
		t.Errorf("dry run: %+v, %v", rep, err)
	}
	f.job.AfterReflection(context.Background(), "alice") // the model has no reply: the call fails
	if os.WriteFile(filepath.Join(f.dir, "alice/episodes/2026-02.md"), []byte(rollFeb), 0o600) != nil {
		t.Fatal("write")
	}
	f.clock.Advance(time.Hour)
	f.job.AfterReflection(context.Background(), "alice") // looked today already
	if n := len(f.model.Requests()); n != 1 {
		t.Errorf("%d calls after two reflections on one day; want 1", n)
	}
	f.clock.Advance(24 * time.Hour)
	f.model.Add(llmtest.Text("Summary: s\n- x [1]"))
	f.job.AfterReflection(context.Background(), "alice")
	if n := len(f.model.Requests()); n != 2 {
		t.Errorf("%d calls after the next day's reflection; want 2", n)
	}
	var nilJob *reflector.Rollups
	nilJob.AfterReflection(context.Background(), "alice") // off: nothing
	if reflector.NewRollups(reflector.RollupConfig{Model: f.model, Store: RollupStore{Store: f.store}}) != nil {
		t.Error("a job with After 0")
	}
	if err := reflector.ForgetRollups(f.state, "alice"); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(f.state, "rollup", "alice.json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the state stays after ForgetRollups")
	}
}

// The core rolls up a person's old months after their reflection, and a
// channel's memory from its own months after a reflection in it, on the
// reflector's model; with rollupAfter 0 there is no job.
func TestCoreRollsUpAfterReflection(t *testing.T) {
	model := llmtest.New()
	o := coreOptions(t, model)
	o.Rollup = reflector.RollupConfig{After: 3}
	var authored []string
	o.RollupCommit = func(c memory.Commit) { authored = append(authored, c.User+" "+c.Path) }
	for owner, text := range map[string]string{"ann": rollJan, "#slack-T1-C1": rollFeb} {
		p := filepath.Join(o.Store.Dir, owner, "episodes", strings.Split(strings.TrimPrefix(text, "# "), " ")[0]+".md")
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(text), 0o600)
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rollups == nil {
		t.Fatal("no roll-up job")
	}
	model.Add(llmtest.Text("nothing to remember"), llmtest.Text("Summary: ann\n- Logger [1]"), llmtest.Text("Summary: channel\n- CI [1]"))
	if err := c.Reflector.Add(mnemo.Turn{TaskID: "t1", User: "ann", ChannelKey: "#slack-T1-C1", Channel: true, Platform: "slack", UserText: "hi", ReplyText: "hello"}); err != nil {
		t.Fatal(err)
	}
	closeCore(t, c)
	if !slices.Equal(authored, []string{"ann episodes/2026-Q1.md", "#slack-T1-C1 episodes/2026-Q1.md"}) {
		t.Errorf("roll-ups written: %v", authored)
	}
	reqs := model.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[1].Messages[1].Content, "Logger fix") || strings.Contains(reqs[1].Messages[1].Content, "CI build") ||
		!strings.Contains(reqs[2].Messages[1].Content, "CI build") || strings.Contains(reqs[2].Messages[1].Content, "Logger") {
		t.Errorf("the roll-ups mixed owners: %d requests", len(reqs))
	}
	o.Rollup.After = 0
	if c, err = Open(o); err != nil || c.Rollups != nil {
		t.Errorf("roll-ups off: %v, %v", c.Rollups, err)
	}
	closeCore(t, c)
}

// The store adapter's errors: a bad owner, an unreadable file, a roll-up
// changed since it was planned.
func TestRollupStoreErrors(t *testing.T) {
	m, dir := newMemory(t)
	r := RollupStore{Store: m.Store}
	if _, err := r.Episodes("../x"); err == nil {
		t.Error("Episodes of a bad owner")
	}
	if _, _, err := r.Read("../x", "episodes/2026-01.md"); err == nil {
		t.Error("Read of a bad owner")
	}
	if err := r.WriteRollup("../x", "episodes/2026-Q1.md", "x", ""); err == nil {
		t.Error("WriteRollup of a bad owner")
	}
	os.WriteFile(filepath.Join(dir, "bob"), []byte("x"), 0o600) // a folder that is a file
	if _, err := r.Episodes("bob"); err == nil {
		t.Error("Episodes of a folder that is a file")
	}
	if _, _, err := r.Read("bob", "episodes/2026-01.md"); err == nil {
		t.Error("Read in a folder that is a file")
	}
	if err := r.WriteRollup("bob", "episodes/2026-Q1.md", "x", ""); err == nil {
		t.Error("WriteRollup in a folder that is a file")
	}
	os.MkdirAll(filepath.Join(dir, "ann", "episodes"), 0o700)
	os.WriteFile(filepath.Join(dir, "ann", "episodes", "2026-Q1.md"), []byte("mine"), 0o600)
	if err := r.WriteRollup("ann", "episodes/2026-Q1.md", "x", ""); !errors.Is(err, memory.ErrConflict) {
		t.Errorf("a roll-up made by hand since the plan: %v", err)
	}
}
