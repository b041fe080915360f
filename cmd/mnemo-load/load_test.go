package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/logtest"
)

// testHooks are the hooks runLoad runs with; a test sets them with setHook.
var testHooks hooks

// runLoad calls run with args (and testHooks) and returns stdout, stderr
// and the error.
func runLoad(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr logtest.Buffer // a timed-out run's abandoned tasks may log after it returns
	err := runWith(ctx, args, &stdout, &stderr, testHooks)
	return stdout.String(), stderr.String(), err
}

// wantParts fails t for each of wants that text lacks; what names the
// text in the message.
func wantParts(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

func runJSON(t *testing.T, args ...string) Report {
	t.Helper()
	out, errOut, err := runLoad(t, context.Background(), append([]string{"-json"}, args...)...)
	if err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json output does not parse: %v\n%s", err, out)
	}
	if errOut != "" {
		t.Errorf("stderr of a clean run: %s", errOut)
	}
	return rep
}

func TestSmallRunJSONIsConsistent(t *testing.T) {
	rep := runJSON(t, "-users", "3", "-messages", "4", "-files", "4", "-concurrency", "2")
	if rep.Users != 3 || rep.MessagesPerUser != 4 || rep.FilesPerUser != 4 || rep.Concurrency != 2 || rep.Conversations != 2 {
		t.Errorf("settings echoed wrong: %+v", rep)
	}
	if rep.Tasks != 12 || rep.FailedTasks != 0 {
		t.Errorf("tasks = %d (failed %d), want 12 (0)", rep.Tasks, rep.FailedTasks)
	}
	if rep.Reflections < 3 || int64(rep.EntriesWritten) != rep.Reflections || rep.AppendErrors != 0 {
		t.Errorf("reflections %d, entries written %d, append errors %d: want ≥ 3, equal, 0", rep.Reflections, rep.EntriesWritten, rep.AppendErrors)
	}
	if rep.TurnsReflected != 12 {
		t.Errorf("turns reflected = %d, want 12", rep.TurnsReflected)
	}
	// Each task: read facts/user.md, then answer; each reflection: append, then answer.
	if rep.ThinkerCalls != 24 || rep.ReflectorCalls != 2*rep.Reflections || rep.ModelCalls != rep.ThinkerCalls+rep.ReflectorCalls {
		t.Errorf("model calls %d = Thinker %d + reflector %d; want 24 + 2×%d", rep.ModelCalls, rep.ThinkerCalls, rep.ReflectorCalls, rep.Reflections)
	}
	if rep.MemoryReads != 12 || rep.RepliesQuoting != 12 {
		t.Errorf("reads %d, quoting replies %d; want 12, 12", rep.MemoryReads, rep.RepliesQuoting)
	}
	if rep.Retries != 0 || rep.ModelFailures != 0 || rep.Connections < 1 {
		t.Errorf("retries %d, failures %d, connections %d", rep.Retries, rep.ModelFailures, rep.Connections)
	}
	// 2 facts + 2 episode months each (this month among them, where the entries go).
	if rep.Files != 12 || rep.MemoryBytes <= 0 {
		t.Errorf("files = %d (%d bytes), want 12", rep.Files, rep.MemoryBytes)
	}
	l := rep.LatencyMS
	if !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max && l.Mean > 0 && l.Mean <= l.Max) {
		t.Errorf("latency not ordered: %+v", l)
	}
	if rep.WallSeconds <= 0 || rep.TasksPerSecond <= 0 || rep.DrainSeconds < 0 {
		t.Errorf("wall %v s, %v tasks/s, drain %v s", rep.WallSeconds, rep.TasksPerSecond, rep.DrainSeconds)
	}
	if rep.HeapPeak <= 0 || rep.HeapLive <= 0 || rep.MaxRSS <= 0 || rep.CPUUserSeconds+rep.CPUSysSeconds <= 0 || rep.GOMAXPROCS < 1 {
		t.Errorf("resources: heap %d/%d, rss %d, cpu %v+%v, GOMAXPROCS %d", rep.HeapPeak, rep.HeapLive, rep.MaxRSS, rep.CPUUserSeconds, rep.CPUSysSeconds, rep.GOMAXPROCS)
	}
	if rep.Problems == nil || len(rep.Problems) != 0 {
		t.Errorf("problems = %#v, want []", rep.Problems)
	}
	if rep.Kept {
		t.Error("the temp folder is reported kept without -keep")
	}
	if _, err := os.Stat(rep.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp folder %s not removed: %v", rep.Dir, err)
	}
}

func TestTextReport(t *testing.T) {
	out, errOut, err := runLoad(t, context.Background(), "-users", "2", "-messages", "3", "-files", "2")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	wantParts(t, "the report", out,
		"mnemo-load: 2 users × 3 messages, 2 memory files each, concurrency 16 (2 at most: one conversation per user), model latency 0s",
		"tasks          6 in ", " tasks/s (0 failed)",
		"latency        p50 ",
		"memory reads   6 by the Thinker, 6 replies quote them",
		"episode entries written, all found in the files: yes",
		"memory files   4 (", "Go heap", "max RSS", "CPU",
	)
	if strings.Contains(out, "data    ") {
		t.Errorf("a removed temp folder is named:\n%s", out)
	}
}

// With many messages per user the reflector runs during the load (every
// -reflect-turns turns), not only at the end; an odd number of files
// gives the odd one to the facts; no episode month is seeded, so the
// reflector creates this month's file.
func TestReflectsDuringTheLoad(t *testing.T) {
	rep := runJSON(t, "-users", "2", "-messages", "12", "-files", "1", "-concurrency", "1")
	if rep.Reflections < 4 || rep.ReflectTurns != 5 || rep.ReflectIdleMS != 0 { // at least 12/5 = 2 runs per user
		t.Errorf("reflections = %d (every %d turns, idle %v ms), want ≥ 4 (5, 0)", rep.Reflections, rep.ReflectTurns, rep.ReflectIdleMS)
	}
	if rep.TurnsReflected != 24 || int64(rep.EntriesWritten) != rep.Reflections {
		t.Errorf("turns %d, entries %d of %d reflections", rep.TurnsReflected, rep.EntriesWritten, rep.Reflections)
	}
	if rep.Files != 4 { // facts/user.md + the month the reflector created
		t.Errorf("files = %d, want 4", rep.Files)
	}
}

// A user with no memory: no read, a reply that quotes nothing.
func TestNoMemoryFiles(t *testing.T) {
	rep := runJSON(t, "-users", "2", "-messages", "2", "-files", "0")
	if rep.MemoryReads != 0 || rep.RepliesQuoting != 0 || rep.ThinkerCalls != 4 {
		t.Errorf("reads %d, quoting %d, Thinker calls %d; want 0, 0, 4", rep.MemoryReads, rep.RepliesQuoting, rep.ThinkerCalls)
	}
	if rep.Files != 2 || rep.EntriesWritten != 2 {
		t.Errorf("files %d, entries %d; want 2, 2", rep.Files, rep.EntriesWritten)
	}
}

// A user quiet for -reflect-idle is reflected then, not only at the end.
func TestReflectIdle(t *testing.T) {
	rep := runJSON(t, "-users", "1", "-messages", "3", "-files", "2",
		"-reflect-turns", "100", "-reflect-idle", "1ms", "-model-latency", "20ms")
	// Each task waits 40ms for the model, and the user is quiet while it
	// does: the turns are reflected before the end (where one run would
	// take them all), typically each on its own.
	if rep.Reflections < 2 || rep.TurnsReflected != 3 || rep.ReflectIdleMS != 1 || rep.ReflectTurns != 100 {
		t.Errorf("%d reflections over %d turns (idle %v ms, every %d); want ≥ 2 over 3 (1, 100)",
			rep.Reflections, rep.TurnsReflected, rep.ReflectIdleMS, rep.ReflectTurns)
	}
}

func TestModelLatency(t *testing.T) {
	rep := runJSON(t, "-users", "2", "-messages", "1", "-files", "2", "-model-latency", "30ms")
	if rep.ModelLatencyMS != 30 || rep.LatencyMS.P50 < 60 { // two model calls per task
		t.Errorf("latency setting %v ms, p50 %v ms; want 30, ≥ 60", rep.ModelLatencyMS, rep.LatencyMS.P50)
	}
}

func TestDirFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	rep := runJSON(t, "-users", "1", "-messages", "1", "-files", "2", "-dir", dir)
	if rep.Dir != dir || !rep.Kept {
		t.Errorf("dir %q kept %v; want %q, true", rep.Dir, rep.Kept, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory", "load-0001", "facts", "user.md")); err != nil {
		t.Errorf("the named folder was not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "reflector")); err != nil {
		t.Errorf("no journal folder: %v", err)
	}

	// It must be empty: a second run refuses it.
	_, _, err := runLoad(t, context.Background(), "-users", "1", "-messages", "1", "-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("second run in the same -dir: %v, want 'is not empty'", err)
	}
	// A folder that cannot be made.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runLoad(t, context.Background(), "-dir", filepath.Join(file, "sub")); err == nil {
		t.Error("a -dir under a file: no error")
	}
	if _, _, err := runLoad(t, context.Background(), "-dir", file); err == nil {
		t.Error("a -dir that is a file: no error")
	}
}

func TestKeepTempDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	out, _, err := runLoad(t, context.Background(), "-users", "1", "-messages", "1", "-files", "2", "-keep")
	if err != nil {
		t.Fatal(err)
	}
	_, dir, ok := strings.Cut(out, "data           ")
	dir = strings.TrimSpace(dir)
	if !ok || !strings.HasPrefix(filepath.Base(dir), "mnemo-load-") {
		t.Fatalf("report does not name the kept folder:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory", "load-0001")); err != nil {
		t.Errorf("kept folder: %v", err)
	}
}

func TestNoTempDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	if _, _, err := runLoad(t, context.Background(), "-users", "1"); err == nil {
		t.Error("no error without a temp folder")
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nope"}, "flag provided but not defined: -nope (see -h)"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-users", "0"}, "-users must be at least 1"},
		{[]string{"-users", "many"}, "invalid value"},
		{[]string{"-messages", "0"}, "-messages must be at least 1"},
		{[]string{"-files", "-1"}, "-files must not be negative"},
		{[]string{"-concurrency", "0"}, "-concurrency must be at least 1"},
		{[]string{"-model-latency", "-1s"}, "-model-latency must not be negative"},
		{[]string{"-model-latency", "200"}, "invalid value"},
		{[]string{"-timeout", "0s"}, "-timeout must be positive"},
		{[]string{"-reflect-turns", "0"}, "-reflect-turns must be at least 1"},
		{[]string{"-reflect-idle", "-1s"}, "-reflect-idle must not be negative"},
	} {
		out, errOut, err := runLoad(t, context.Background(), tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
		var stderr bytes.Buffer
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "mnemo-load: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the message", tc.args, code, stderr.String())
		}
		if out != "" || errOut != "" {
			t.Errorf("%v: printed %q / %q before failing", tc.args, out, errOut)
		}
	}
}

func TestHelp(t *testing.T) {
	out, _, err := runLoad(t, context.Background(), "-h")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	wantParts(t, "the help", out, "Usage: mnemo-load [flags]", "-users", "-model-latency", "-timeout", "-reflect-turns", "-reflect-idle")
	var stderr bytes.Buffer
	if code := exitCode(err, &stderr); code != 0 || stderr.Len() != 0 {
		t.Errorf("help: exit %d, stderr %q", code, stderr.String())
	}
}

func TestExitCode(t *testing.T) {
	var stderr bytes.Buffer
	if code := exitCode(nil, &stderr); code != 0 || stderr.Len() != 0 {
		t.Errorf("nil: %d %q", code, stderr.String())
	}
	if code := exitCode(errors.New("boom"), &stderr); code != 1 || stderr.String() != "mnemo-load: boom\n" {
		t.Errorf("failure: %d %q", code, stderr.String())
	}
}

func TestTimeout(t *testing.T) {
	start := time.Now()
	_, _, err := runLoad(t, context.Background(), "-users", "4", "-messages", "3", "-files", "2",
		"-model-latency", "10s", "-timeout", "200ms")
	if err == nil || !strings.Contains(err.Error(), "load run stopped: timed out after 200ms (-timeout)") {
		t.Fatalf("err = %v, want the timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a 200ms timeout took %v to end the run", d)
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := runLoad(t, ctx, "-users", "2", "-messages", "2")
	if err == nil || !strings.Contains(err.Error(), "load run stopped: context canceled") {
		t.Fatalf("err = %v, want the cancellation", err)
	}
}

// A person editing a file the reflector appends to (a vim swap file next
// to it) makes the append fail: the report is printed, then the run fails.
func TestMissingEntryFailsTheRun(t *testing.T) {
	setHook(t, &testHooks.seeded, func(memDir string) {
		now := time.Now()
		for _, m := range []time.Time{now, now.Add(time.Hour)} { // the month may turn meanwhile
			swap := filepath.Join(memDir, "load-0002", "episodes", "."+m.Format("2006-01")+".md.swp")
			if err := os.WriteFile(swap, []byte("vim"), 0o600); err != nil {
				t.Error(err)
			}
		}
	})
	out, errOut, err := runLoad(t, context.Background(), "-users", "2", "-messages", "1", "-files", "2")
	if err == nil || !strings.Contains(err.Error(), "check(s) failed") ||
		!strings.Contains(err.Error(), "episode entry 000000") || !strings.Contains(err.Error(), "of load-0002 is missing from its files") ||
		!strings.Contains(err.Error(), "1 memory_append call(s) failed") {
		t.Fatalf("err = %v\nstderr:\n%s", err, errOut)
	}
	if !strings.Contains(out, "all found in the files: NO") {
		t.Errorf("the report does not show the mismatch:\n%s", out)
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestReflectorCannotOpen(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "state"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config{users: 1, messages: 1, files: 2, concurrency: 1, timeout: time.Minute}
	if _, err := load(context.Background(), cfg, dir, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a state folder that is a file: no error")
	}
}

func TestSeedErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := seed(context.Background(), file, 1, 2, time.Now()); err == nil {
		t.Error("seeding under a file: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := seed(ctx, t.TempDir(), 1, 2, time.Now()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled seed: %v", err)
	}
	// A fact or an episode name taken by a folder.
	for _, p := range []string{"facts/user.md", "episodes/" + time.Now().Format("2006-01") + ".md"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "load-0001", p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := seed(context.Background(), dir, 1, 2, time.Now()); err == nil {
			t.Errorf("%s is a folder: no error", p)
		}
	}
}

func TestSeededFilesAreValidMemory(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	if err := seed(context.Background(), dir, 1, 5, now); err != nil {
		t.Fatal(err)
	}
	// Written an hour before now, as a memory left earlier is.
	if fi, err := os.Stat(filepath.Join(dir, "load-0001", "facts", "user.md")); err != nil || !fi.ModTime().Equal(now.Add(-time.Hour)) {
		t.Errorf("a seeded file's time: %v (%v), want an hour before %v", fi, err, now)
	}
	var names []string
	for _, sub := range []string{"facts", "episodes"} {
		entries, err := os.ReadDir(filepath.Join(dir, "load-0001", sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			names = append(names, sub+"/"+e.Name())
		}
	}
	want := "facts/topic-001.md facts/topic-002.md facts/user.md episodes/2026-02.md episodes/2026-03.md"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("seeded %s, want %s", got, want)
	}
	text, err := os.ReadFile(filepath.Join(dir, "load-0001", "episodes", "2026-02.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "- Date: 2026-02-22\n") {
		t.Errorf("episode dates outside their month:\n%s", text)
	}
}

func TestVerifyEntries(t *testing.T) {
	dir := t.TempDir()
	write := func(user, month, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, user, "episodes"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, user, "episodes", month+".md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "2026-01", "# 2026-01 Episodes\n\n"+entryMarker+"1\n- Date: 2026-01-02\n\n"+entryMarker+"2\n")
	write("a", "2026-02", entryMarker+"2\n"+entryMarker+"9\n## Load reflection\n")
	write("b", "2026-01", entryMarker+"3\n")
	found, problems, err := verifyEntries(dir, map[string]string{"1": "a", "2": "a", "3": "a", "4": "b"})
	if err != nil {
		t.Fatal(err)
	}
	if found != 5 {
		t.Errorf("found = %d, want 5", found)
	}
	want := []string{
		"episode entry 2 of a is there 2 times (a, a)",
		"episode entry 3 of a is in the files of b",
		"episode entry 4 of b is missing from its files",
		"episode entry 9 in the files of a was never appended by a reflection",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}

	if _, _, err := verifyEntries(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("a missing memory folder: no error")
	}
	if err := os.MkdirAll(filepath.Join(dir, "c", "episodes", "2026-01.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := verifyEntries(dir, nil); err == nil {
		t.Error("an episode name that is a folder: no error")
	}
	bad := filepath.Join(t.TempDir(), "[a")
	if err := os.MkdirAll(filepath.Join(bad, "u"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := verifyEntries(bad, nil); err == nil {
		t.Error("a bad pattern: no error")
	}
}

func TestReportChecks(t *testing.T) {
	r := &Report{
		Tasks: 10, FailedTasks: 2, MemoryReads: 10, RepliesQuoting: 8, Reflections: 3, EntriesWritten: 2,
		TurnsReflected: 9, AppendErrors: 1, ModelCalls: 30, ThinkerCalls: 20, ReflectorCalls: 6,
	}
	r.check(4, 5)
	want := []string{
		"2 task(s) failed (the reply was the apology)",
		"8 replies quote facts/user.md, but the Thinker read it 10 times",
		"3 reflections appended an entry each, but 2 such entries are in the files",
		"reflections covered 9 turns, want one per task (10)",
		"1 memory_append call(s) failed",
		"the client made 30 model calls, the fake model answered 26",
		"the fake model got 4 request(s) it could not make sense of",
		"5 turn(s) could not be journaled for the reflector",
	}
	if got := strings.Join(r.Problems, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestReportWriteFails(t *testing.T) {
	for _, args := range [][]string{{"-json"}, {}} {
		err := run(context.Background(), append(args, "-users", "1", "-messages", "1", "-files", "2"), failWriter{}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%v: err = %v, want the write error", args, err)
		}
	}
}

func TestDistribution(t *testing.T) {
	if got := distribution(nil); got != (Latency{}) {
		t.Errorf("empty: %+v", got)
	}
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := distribution(ds)
	if want := (Latency{P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}); got != want {
		t.Errorf("1..100 ms: %+v, want %+v", got, want)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("distribution sorted its argument")
	}
	if got := distribution([]time.Duration{time.Second}); got.P50 != 1000 || got.P99 != 1000 {
		t.Errorf("one value: %+v", got)
	}
}

func TestFormatting(t *testing.T) {
	for ms, want := range map[float64]string{
		0.1234: "123µs", 1.23456: "1.23ms", 12.3456: "12.3ms", 123.456: "123ms", 1234.56: "1.23s", 0: "0s",
	} {
		if got := msText(ms); got != want {
			t.Errorf("msText(%v) = %q, want %q", ms, got, want)
		}
	}
	for n, want := range map[int64]string{512: "0.5 KiB", 3 << 20: "3.0 MiB"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
	var b bytes.Buffer
	if err := writeText(&b, &Report{Dir: "/x", Kept: true, ReflectTurns: 5, ReflectIdleMS: 50}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(0.00 ms per task") || !strings.Contains(b.String(), "data           /x\n") ||
		!strings.Contains(b.String(), "(every 5 turns of a user, idle 50ms)") {
		t.Errorf("empty report:\n%s", b.String())
	}
}

func TestMainCode(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := mainCode([]string{"-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Usage: mnemo-load") {
		t.Errorf("-h: exit %d, stdout %q", code, stdout.String())
	}
	if code := mainCode([]string{"-users", "x"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "mnemo-load: invalid value") {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr.String())
	}
	stdout.Reset()
	if code := mainCode([]string{"-users", "1", "-messages", "1", "-files", "2"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "tasks          1 in") {
		t.Errorf("a run: exit %d, stdout %q", code, stdout.String())
	}
}

func TestRSSBytes(t *testing.T) {
	if got := rssBytes(2048, "linux"); got != 2<<20 {
		t.Errorf("linux: %d", got)
	}
	if got := rssBytes(2048, "darwin"); got != 2048 {
		t.Errorf("darwin: %d", got)
	}
}

// The store cannot open: the error, not a report.
func TestStoreCannotOpen(t *testing.T) {
	setHook(t, &testHooks.seeded, func(memDir string) {
		if err := os.RemoveAll(memDir); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(memDir, nil, 0o600); err != nil {
			t.Error(err)
		}
	})
	out, _, err := runLoad(t, context.Background(), "-users", "1", "-messages", "1")
	if err == nil || strings.Contains(err.Error(), "load run stopped") || out != "" {
		t.Errorf("err = %v, stdout %q; want the store's error and no report", err, out)
	}
}

// The timeout may also strike while the last reflections run: a person's
// editor holds the episode file, so the append waits for it.
func TestTimeoutWhileDraining(t *testing.T) {
	setHook(t, &testHooks.seeded, func(memDir string) {
		now := time.Now()
		for _, m := range []time.Time{now, now.Add(time.Hour)} {
			swap := filepath.Join(memDir, "load-0001", "episodes", "."+m.Format("2006-01")+".md.swp")
			if err := os.WriteFile(swap, []byte("vim"), 0o600); err != nil {
				t.Error(err)
			}
		}
	})
	_, _, err := runLoad(t, context.Background(), "-users", "1", "-messages", "1", "-files", "2", "-timeout", "1500ms")
	if err == nil || !strings.Contains(err.Error(), "load run stopped: timed out after 1.5s (-timeout)") {
		t.Fatalf("err = %v, want the timeout", err)
	}
}
