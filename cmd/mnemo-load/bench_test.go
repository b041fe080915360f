package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/bots/registry"
	mnemoconfig "github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/memory"
)

// buildMnemo builds cmd/mnemo into a test folder: the bench measures the
// real binary.
func buildMnemo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mnemo")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/mnemo-agent/mnemo/cmd/mnemo").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/mnemo: %v\n%s", err, out)
	}
	return bin
}

// fakeGo writes a script standing in for the go command: it prints out
// and exits with code.
func fakeGo(t *testing.T, out string, code int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "go")
	text := "#!/bin/sh\necho \"$@\" > " + filepath.Join(dir, "args.txt") + "\ncat " + filepath.Join(dir, "out.txt") + "\necho oops >&2\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(script, []byte(text), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

const goBenchOut = `goos: linux
goarch: amd64
pkg: github.com/mnemo-agent/mnemo/memory
cpu: AMD EPYC
BenchmarkList/10-2       	  160966	      8459 ns/op	     456 B/op	       6 allocs/op
PASS
ok  	github.com/mnemo-agent/mnemo/memory	17.576s
pkg: github.com/mnemo-agent/mnemo/bots/internal/intake
BenchmarkAdd-2          	    1887	    655305 ns/op	         1.000 fsyncs/msg	    1824 B/op	      15 allocs/op
BenchmarkOdd-2 notanumber 5 ns/op
BenchmarkShort-2 12
BenchmarkNoMem-2 100 1500000 ns/op
`

// TestBenchSmallRun runs the whole bench on tiny sizes against the real
// binary and checks that every row is there with figures that make sense,
// and that the README's section is written between the markers.
func TestBenchSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mnemo binary")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	bin := buildMnemo(t)
	readme := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(readme, []byte("# x\n\n## Performance\n\nhand-written text\n\n## Next\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := fakeGo(t, goBenchOut, 0)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-bench", "-bin", bin, "-readme", readme, "-go", goCmd, "-benchtime", "10x",
		"-messages", "3", "-sizes", "0,3", "-users", "1,2", "-conc-messages", "2", "-edits", "2", "-starts", "2",
		"-stream-replies", "2", "-stream-words", "4", "-stream-every", "5ms", "-tool-sizes", "3",
		"-distinct", "3,6", "-distinct-conc", "2", "-distinct-idle", "50ms"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	wantParts(t, "the table", out,
		"| `mnemo chat`, 3-message chat, user with 0 files |",
		"| `mnemo chat`, 3-message chat, user with 3 files |",
		"| `echo hi \\| mnemo chat` start → exit, 0 files |",
		"| `mnemo chat`, 3-message chat, user with 0 files, `llm.stream: false` |",
		"| `echo hi \\| mnemo chat` start → exit, 0 files, `llm.stream: false` |",
		"| **`mnemo chat` per message, 3 ÷ 0 files** | ×",
		"| **`echo hi \\| mnemo chat`, 3 ÷ 0 files** | ×",
		"| console, 1 concurrent user(s) × 2 messages",
		"| console, 2 concurrent user(s) × 2 messages",
		"| Slack, 2 concurrent user(s) × 2 messages",
		"| Discord, 1 concurrent user(s) × 2 messages",
		"| `mnemo serve` start-up to ready",
		"idle |",
		"under load |",
		"| edit-to-index, in-place write",
		"| edit-to-index, sed -i",
		"| edit-to-index, mv",
		"| binary (`make build`",
		"Streaming: the scripted model streams a 4-word reply at one word per 5ms",
		"| `mnemo chat` (terminal, piped) | 2 | ",
		"| memory | BenchmarkList/10-2 | 8.46µs | 456 | 6 | – |",
		"| bots/internal/intake | BenchmarkAdd-2 | 655µs | 1824 | 15 | 1.000 fsyncs/msg |",
		"Command: `make bench BENCHFLAGS=\"-benchtime 10x -conc-messages 2 -distinct 3,6 -distinct-conc 2 -distinct-idle 50ms -edits 2 -messages 3 -sizes 0,3 -starts 2 -stream-every 5ms -stream-replies 2 -stream-words 4 -tool-sizes 3 -users 1,2\"`",
		"| `mnemo chat`: each message reads a file (`memory_read`), 3 messages, 3 text files (",
		"| `mnemo chat`: each message searches (`memory_search`), 3 messages, 3 text files (",
		"| `mnemo chat`: the first `memory_search` of that chat (builds the search index), 3 text files | ",
		"| **`mnemo chat` per message, `memory_search` − `memory_read`, 3 text files** | ",
		"`mnemo serve` as distinct people grow: each sends one Slack DM (2 at a time",
		"| people in all | open files: peak |",
	)
	// Every person's reflection wrote: one memory folder each.
	for _, row := range []string{"| 3 | ", "| 6 | "} {
		i := strings.Index(out, row)
		if i < 0 {
			t.Fatalf("no distinct-people row %q:\n%s", row, out)
		}
		cells := strings.Split(strings.SplitN(out[i:], "\n", 2)[0], " | ")
		if len(cells) != 8 || cells[6] != strings.Trim(row, "| ") {
			t.Errorf("row %q: memory folders %q, want one per person", row, cells)
		}
	}
	// The chat's requests went again through go-openai alone, streamed
	// and not, and came back.
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "| `mnemo chat`, ") && !strings.Contains(line, "; go-openai alone ") {
			t.Errorf("no go-openai replay in %s", line)
		}
	}
	// A casual message costs one model call: the reply.
	if n := strings.Count(out, "| 1.00 (+"); n != 6 {
		t.Errorf("%d chat and echo hi rows with 1.00 calls per message, want 6:\n%s", n, out)
	}
	// Every peak RSS is the child's own: above a Go program's floor and
	// below the bench's.
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "| `mnemo chat`, ") || strings.HasPrefix(line, "| `echo hi") {
			cells := strings.Split(line, " | ")
			var mib float64
			if _, err := fmt.Sscanf(cells[len(cells)-2], "%f MiB", &mib); err != nil || mib < 2 || mib > 64 {
				t.Errorf("peak RSS %q in %s", cells[len(cells)-2], line)
			}
		}
	}
	// A message that reads or searches costs two: the call, the answer.
	if n := strings.Count(out, "| – | 2.00 (+"); n != 2 {
		t.Errorf("%d tool chat rows with 2.00 calls per message, want 2:\n%s", n, out)
	}
	if n := strings.Count(out, "| 1.00 | "); n != 6 {
		t.Errorf("%d concurrent rows with 1.00 calls per message, want 6:\n%s", n, out)
	}
	args, _ := os.ReadFile(filepath.Join(filepath.Dir(goCmd), "args.txt"))
	if got := strings.TrimSpace(string(args)); got != "test -run ^$ -bench . -benchmem -benchtime 10x ./memory/ ./memory/search/ ./reflector/ ./bots/internal/intake/ ./bots/slack/ ./bots/discord/" {
		t.Errorf("go was run with %q", got)
	}
	text, _ := os.ReadFile(readme)
	if !strings.Contains(string(text), "## Performance\n\n"+benchBegin+"\n\n"+strings.TrimRight(out, "\n")+"\n\n"+benchEnd+"\n\nhand-written text\n\n## Next\n") {
		t.Errorf("README section:\n%s", text)
	}
	if !strings.Contains(stderr.String(), "bench: wrote the table into "+readme) {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestBenchFlags(t *testing.T) {
	c, err := parseBenchFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.bin != "bin/mnemo" || c.messages != 200 || len(c.sizes) != 4 || c.sizes[3] != 10000 || len(c.users) != 3 || c.users[2] != 100 ||
		c.commandLine != "make bench" || c.timeout != 30*time.Minute ||
		len(c.toolSizes) != 2 || c.toolSizes[0] != 200 || c.toolSizes[1] != 10000 ||
		len(c.distinct) != 3 || c.distinct[2] != 10000 || c.distinctConc != 64 || c.distinctIdle != 20*time.Second || c.distinctOnly {
		t.Errorf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-messages", "1"}, "-messages must be at least 2"},
		{[]string{"-conc-messages", "0"}, "-conc-messages must be at least 1"},
		{[]string{"-edits", "0"}, "-edits must be at least 1"},
		{[]string{"-starts", "0"}, "-starts must be at least 1"},
		{[]string{"-timeout", "0s"}, "-timeout must be positive"},
		{[]string{"-stream-replies", "-1"}, "-stream-replies must not be negative"},
		{[]string{"-stream-words", "0"}, "-stream-words must be at least 1"},
		{[]string{"-stream-every", "-1s"}, "-stream-every must not be negative"},
		{[]string{"-sizes", "1,x"}, `-sizes: "x" is not a whole number of at least 0`},
		{[]string{"-sizes", "-1"}, `-sizes: "-1" is not a whole number of at least 0`},
		{[]string{"-users", "0"}, `-users: "0" is not a whole number of at least 1`},
		{[]string{"-users", " , "}, "-users: give at least one number"},
		{[]string{"-tool-sizes", "0"}, `-tool-sizes: "0" is not a whole number of at least 1`},
		{[]string{"-distinct", "0"}, `-distinct: "0" is not a whole number of at least 1`},
		{[]string{"-distinct-conc", "0"}, "-distinct-conc must be at least 1"},
		{[]string{"-distinct-idle", "0s"}, "-distinct-idle must be positive"},
		{[]string{"-distinct", "", "-distinct-only"}, "-distinct-only needs -distinct"},
		{[]string{"-chat-only", "-distinct-only"}, "-chat-only and -distinct-only are two different parts"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope (see -bench -h)"},
	} {
		_, err := parseBenchFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, new(usageError)) {
			t.Errorf("%v: err %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	if c, err := parseBenchFlags([]string{"-tool-sizes", ""}, &bytes.Buffer{}); err != nil || len(c.toolSizes) != 0 {
		t.Errorf("-tool-sizes '': %v, %v", c.toolSizes, err)
	}
	var help bytes.Buffer
	if _, err := parseBenchFlags([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "Usage: mnemo-load -bench") || !strings.Contains(help.String(), "-gobench") {
		t.Errorf("-h: %v\n%s", err, help.String())
	}
	// Through run: a usage error is exit status 2.
	var stderr bytes.Buffer
	if code := exitCode(run(context.Background(), []string{"-bench", "-edits", "0"}, &bytes.Buffer{}, &stderr), &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

func TestBenchMissingBinary(t *testing.T) {
	err := run(context.Background(), []string{"-bench", "-bin", filepath.Join(t.TempDir(), "nope")}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "run make build first") {
		t.Errorf("err = %v", err)
	}
}

func TestBenchDirMustBeEmpty(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o600)
	err := run(context.Background(), []string{"-bench", "-bin", "/bin/true", "-dir", dir}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("err = %v", err)
	}
}

// A binary that answers nothing fails each part with what went wrong.
func TestBenchChildFails(t *testing.T) {
	ctx := context.Background()
	b := &bencher{bin: "/bin/true", dir: t.TempDir(), progress: func(string, ...any) {}}
	if _, err := b.chatAtSize(ctx, 0, 3, 1, false, false); err == nil || !strings.Contains(err.Error(), "mnemo chat: ") { // no reply, or no reader
		t.Errorf("chat: %v", err)
	}
	if _, err := b.toolChats(ctx, 2, 2); err == nil || !strings.Contains(err.Error(), "memory_read on each message: mnemo chat: ") {
		t.Errorf("tool chats: %v", err)
	}
	if _, err := b.consoleConcurrent(ctx, 2, 1); err == nil || !strings.Contains(err.Error(), "user 1: ") {
		t.Errorf("console: %v", err)
	}
	if _, _, _, err := echoHi(ctx, "/bin/true", t.TempDir(), nil, "u"); err == nil || !strings.Contains(err.Error(), "not the model's reply") {
		t.Errorf("echo hi: %v", err)
	}
	if _, _, _, err := echoHi(ctx, "/bin/false", t.TempDir(), nil, "u"); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("echo hi: %v", err)
	}
	if _, _, err := b.serveRun(ctx, []int{1}, 1, 1); err == nil || !strings.Contains(err.Error(), "mnemo serve exited before it was ready") {
		t.Errorf("serve: %v", err)
	}
	if _, err := startChat(ctx, filepath.Join(t.TempDir(), "nope"), t.TempDir(), nil, "u"); err == nil {
		t.Error("a missing binary started")
	}
	if _, err := b.distinctUsers(ctx, []int{1}, 1, time.Second); err == nil || !strings.Contains(err.Error(), "mnemo serve exited before it was ready") {
		t.Errorf("distinct people: %v", err)
	}
	// runBench names the part that failed.
	err := run(ctx, []string{"-bench", "-bin", "/bin/true", "-sizes", "0", "-messages", "2"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "chat at 0 files: ") {
		t.Errorf("run: %v", err)
	}
}

func TestRenderBench(t *testing.T) {
	r := &benchResult{
		Machine: machine{CPU: "Test CPU", Cores: 2, Go: "go1.x", LoadStart: "1 2 3", LoadEnd: "4 5 6", Date: "2026-01-02"},
		Command: "make bench",
		Chats: []chatFigures{
			{Files: 10000, Messages: 200, CPUPerMsg: 550 * time.Microsecond, Wall: Latency{P50: 1.1, P99: 2.5}, Bare: Latency{P50: 0.5},
				CallsPerMsg: 1, ReflectorCalls: 10, FirstRequest: 3400, MaxReflector: 371000, MaxRSS: 18 << 20,
				Start: Latency{P50: 12, Max: 35}, StartCPU: 9 * time.Millisecond, StartRSS: 17 << 20, StartCalls: 1, StartReflector: 1},
			{Files: 0, Messages: 200, FirstRequest: 999, CPUPerMsg: 500 * time.Microsecond, Wall: Latency{P50: 1, P99: 2}, Bare: Latency{P50: 0.5}, Client: Latency{P50: 0.8},
				MaxRSS: 16 << 20, Start: Latency{P50: 10, Max: 20}, StartCPU: 6 * time.Millisecond, StartRSS: 16 << 20},
			{Files: 10000, Messages: 200, NoRollups: true, CPUPerMsg: time.Millisecond, Wall: Latency{P50: 2, P99: 3}, CallsPerMsg: 1, ReflectorCalls: 10, RollupCalls: 3,
				FirstRequest: 7200, MaxReflector: 23500, MaxRSS: 20 << 20},
			{Files: 0, Messages: 200, NoStream: true, FirstRequest: 999, CPUPerMsg: 400 * time.Microsecond, Wall: Latency{P50: 0.9, P99: 2}, Bare: Latency{P50: 0.5}, MaxRSS: 15 << 20},
		},
		Conc:    []concFigures{{Path: "Slack", Users: 10, Messages: 50, CPUPerMsg: time.Millisecond, Wall: Latency{P50: 3, P99: 9}, PerSecond: 400, CallsPerMsg: 1, PeakRSS: 30 << 20}},
		Serve:   &serveFigures{Ready: Latency{P50: 16, Max: 20}, IdleRSS: 20 << 20, LoadRSS: 40 << 20, Users: 100},
		Edits:   []editFigures{{Kind: "cp", Latency: Latency{P50: 0.08, P99: 0.2}}},
		Binary:  18_400_000,
		GoBench: []goBenchmark{{Pkg: "memory", Name: "BenchmarkList-2", NsOp: "3.2µs", BOp: "456", AllocsOp: "6"}},
		Notes:   []string{"go test failed"},
		Streams: []streamFigures{{Platform: "console", Replies: 5, Words: 30, WordEvery: 200 * time.Millisecond,
			FirstToken: Latency{P50: 201}, FirstVisible: Latency{P50: 202.5}, Added: Latency{P50: 1.5, Max: 3},
			Whole: Latency{P50: 6050}, CPUPerReply: 4 * time.Millisecond}},
	}
	out := renderBench(r)
	if strings.Contains(out, "start → exit, 0 files, `llm.stream") {
		t.Error("an echo hi row for a chat that ran none")
	}
	if _, _, ok := sizeSpan(r.Chats[1:]); ok {
		t.Error("a span of one size")
	}
	if got := ratioText(1, 0); got != "–" {
		t.Errorf("ratioText(1, 0) = %q", got)
	}
	wantParts(t, "the table", out,
		"Measured 2026-01-02 on Test CPU, 2 cores, go1.x; load average 1 2 3 at the start, 4 5 6 at the end",
		"| `mnemo chat`, 200-message chat, user with 10,000 files | 550µs | 1.1ms | 2.5ms | 2.20 (bare 500µs) | 1.00 (+10 reflector) | 18.0 MiB | first request 3.4 KB; reflector request 371.0 KB |",
		"| `mnemo chat`, 200-message chat, user with 0 files | 500µs | 1ms | 2ms | 2.00 (bare 500µs; go-openai alone 800µs, ÷ bare 1.60) | 0.00 (+0 reflector) | 16.0 MiB | first request 999 B |",
		"| `mnemo chat`, 200-message chat, user with 10,000 files, no roll-ups (`memory.rollupAfter: 0`) | 1ms | 2ms | 3ms | – | 1.00 (+10 reflector, +3 roll-up) | 20.0 MiB | first request 7.2 KB; reflector request 23.5 KB |",
		"| `mnemo chat`, 200-message chat, user with 0 files, `llm.stream: false` | 400µs | 900µs | 2ms | 1.80 (bare 500µs) | 0.00 (+0 reflector) | 15.0 MiB | first request 999 B |",
		"| **`mnemo chat` per message, 10,000 ÷ 0 files** | ×1.10 | ×1.10 | ×1.25 | ×1.10 | – | ×1.12 | – |",
		"| **`echo hi \\| mnemo chat`, 10,000 ÷ 0 files** | ×1.50 | ×1.20 | ×1.75 | – | – | ×1.06 | – |",
		"| `echo hi \\| mnemo chat` start → exit, 10,000 files | 9ms (whole run) | 12ms | 35ms (max) | – | 1.00 (+1 reflector) | 17.0 MiB | – |",
		"| Slack, 10 concurrent user(s) × 5 messages (400 msg/s) | 1ms | 3ms | 9ms | – | 1.00 | 30.0 MiB | – |",
		"| `mnemo serve` start-up to ready (Slack connected, Discord's /memory registered) | – | 16ms | 20ms (max) | – | – | 20.0 MiB idle | – |",
		"| `mnemo serve` after every Slack and Discord row (100 users linked) | – | – | – | – | – | 40.0 MiB under load | – |",
		"| edit-to-index, cp (200 files; change complete → `List` shows it) | – | 80µs | 200µs | – | – | – | – |",
		"| binary (`make build`: -trimpath -s -w) | – | – | – | – | – | – | 18.4 MB |",
		"| memory | BenchmarkList-2 | 3.2µs | 456 | 6 | – |",
		"\nNote: go test failed\n",
		"Streaming: the scripted model streams a 30-word reply at one word per 200ms; the first word comes 200ms after the request.",
		"| `mnemo chat` (terminal, piped) | 5 | 201ms | 203ms | 1.5ms | 3ms | 6.05s | 4ms |",
	)
}

func TestReplaceSection(t *testing.T) {
	const table = "| a |\n|---|\n| 1 |\n"
	block := benchBegin + "\n\n| a |\n|---|\n| 1 |\n\n" + benchEnd
	first, err := replaceSection("# T\n\n## Performance\n\nkept\n## Next\n", table)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# T\n\n## Performance\n\n" + block + "\n\nkept\n## Next\n"; first != want {
		t.Errorf("first:\n%q\nwant\n%q", first, want)
	}
	// A rerun replaces the table, nothing else.
	second, err := replaceSection(first, "| b |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# T\n\n## Performance\n\n" + benchBegin + "\n\n| b |\n\n" + benchEnd + "\n\nkept\n## Next\n"; second != want {
		t.Errorf("second:\n%q\nwant\n%q", second, want)
	}
	// The heading as the last line.
	if got, err := replaceSection("## Performance", table); err != nil || got != "## Performance\n\n"+block+"\n" {
		t.Errorf("heading at the end: %q, %v", got, err)
	}
	if _, err := replaceSection("# T\n## Performance tips\n", table); err == nil || !strings.Contains(err.Error(), `no "## Performance" heading`) {
		t.Errorf("no heading: %v", err)
	}
	if _, err := replaceSection("## Performance\n"+benchBegin+"\n", table); err == nil || !strings.Contains(err.Error(), "no "+benchEnd) {
		t.Errorf("no end marker: %v", err)
	}
}

func TestUpdateReadme(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	if err := updateReadme(path, "x"); err == nil || !strings.Contains(err.Error(), "-readme") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(path, []byte("## Performance\n"), 0o640)
	if err := updateReadme(path, "| t |\n"); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if !strings.Contains(string(text), "| t |") || st.Mode().Perm() != 0o640 {
		t.Errorf("%q, mode %v", text, st.Mode())
	}
	os.WriteFile(path, []byte("no heading\n"), 0o640)
	if err := updateReadme(path, "x"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("no heading: %v", err)
	}
	// The temp file cannot be made: its name, "." + the README's + digits,
	// is longer than a file name may be (even for root).
	long := filepath.Join(t.TempDir(), strings.Repeat("r", 251)+".md")
	if err := os.WriteFile(long, []byte("## Performance\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := updateReadme(long, "x"); err == nil || !strings.Contains(err.Error(), "-readme") {
		t.Errorf("temp file: %v", err)
	}
	// Nor can it replace a folder.
	dir := filepath.Join(t.TempDir(), "README.md")
	os.Mkdir(dir, 0o700)
	if err := updateReadme(dir, "x"); err == nil {
		t.Error("a folder was read as a README")
	}
}

func TestParseGoBench(t *testing.T) {
	bs := parseGoBench(goBenchOut)
	if len(bs) != 3 {
		t.Fatalf("%d benchmarks: %+v", len(bs), bs)
	}
	if g := bs[0]; g.Pkg != "memory" || g.Name != "BenchmarkList/10-2" || g.NsOp != "8.46µs" || g.BOp != "456" || g.AllocsOp != "6" || len(g.Other) != 0 {
		t.Errorf("%+v", g)
	}
	if g := bs[1]; g.Pkg != "bots/internal/intake" || g.Other[0] != "1.000 fsyncs/msg" {
		t.Errorf("%+v", g)
	}
	if g := bs[2]; g.NsOp != "1.5ms" || g.BOp != "–" || g.AllocsOp != "–" {
		t.Errorf("%+v", g)
	}
	for v, want := range map[string]string{"x": "x ns", "12": "12ns", "8459": "8.46µs", "655305": "655µs", "1234567890": "1.23s", "98765432101": "1m38.8s"} {
		if got := nsText(v); got != want {
			t.Errorf("nsText(%s) = %q, want %q", v, got, want)
		}
	}
}

func TestRunGoBench(t *testing.T) {
	ctx := context.Background()
	bs, err := runGoBench(ctx, fakeGo(t, goBenchOut, 0), "", []string{"./a/"})
	if err != nil || len(bs) != 3 {
		t.Errorf("%v, %d", err, len(bs))
	}
	bs, err = runGoBench(ctx, fakeGo(t, goBenchOut+"FAIL\n", 1), "", []string{"./a/"})
	if err == nil || !strings.Contains(err.Error(), "exit status 1: oops") || !strings.Contains(err.Error(), "FAIL") || len(bs) != 3 {
		t.Errorf("%v, %d", err, len(bs))
	}
	// In the bench, a failure is a note under the table, not the end.
	b := benchResult{}
	_, err = runGoBench(ctx, filepath.Join(t.TempDir(), "nogo"), "", []string{"./a/"})
	if err == nil {
		t.Fatal("a missing go command ran")
	}
	b.Notes = append(b.Notes, err.Error())
	if !strings.Contains(renderBench(&b), "Note: ") {
		t.Error("no note")
	}
}

func TestEditToIndex(t *testing.T) {
	fs, err := editToIndex(context.Background(), t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != len(editKinds) {
		t.Fatalf("%d kinds", len(fs))
	}
	for _, f := range fs {
		if f.Latency.P50 <= 0 || f.Latency.Max < f.Latency.P50 {
			t.Errorf("%s: %+v", f.Kind, f.Latency)
		}
	}
	// A change that never shows ends with an error naming it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := editToIndex(ctx, t.TempDir(), 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestCommandChangeFails(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := commandChange(dir, "x.md", "cp", filepath.Join(dir, "missing"), filepath.Join(dir, "x.md")); err == nil || !strings.Contains(err.Error(), "cp: exit status 1") {
		t.Errorf("%v", err)
	}
	if _, _, err := commandChange(dir, "x.md", "true"); err == nil {
		t.Error("no file, no error")
	}
	for _, k := range editKinds {
		if _, _, err := k.make(filepath.Join(dir, "none"), filepath.Join(dir, "none"), 0); err == nil {
			t.Errorf("%s in a missing folder: no error", k.name)
		}
	}
}

func TestProcFigures(t *testing.T) {
	pid := os.Getpid()
	if procCPU(pid) <= 0 {
		t.Error("no CPU time for this process")
	}
	if vmHWM(pid) <= 0 {
		t.Error("no VmHWM for this process")
	}
	if procCPU(-1) != 0 || vmHWM(-1) != 0 {
		t.Error("a missing process has figures")
	}
	if statusKB("VmRSS:\t  12 kB\nVmHWM:\t  34 kB\n", "VmHWM:") != 34*1024 || statusKB("VmHWM:\n", "VmHWM:") != 0 {
		t.Error("statusKB")
	}
	if cpuModel([]byte("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n")) != "AMD EPYC 7B13" || cpuModel(nil) != "unknown CPU" {
		t.Error("cpuModel")
	}
	if loadFields("0.5 1.0 1.5 2/300 42\n") != "0.5 1.0 1.5" || loadFields("") != "?" {
		t.Error("loadFields")
	}
	if m := readMachine(); m.Cores < 1 || m.Go == "" || m.Date == "" {
		t.Errorf("%+v", m)
	}
}

func TestSmallFormatting(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
	for n, want := range map[int64]string{12: "12 B", 3400: "3.4 KB", 18_400_000: "18.4 MB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q", n, got)
		}
	}
	for ch, want := range map[string]int{"D00000010": 9, "600000000000000000009": 8} {
		prefix := ch[:1]
		if u, ok := userOf(ch, prefix); !ok || u != want {
			t.Errorf("userOf(%q) = %d, %v", ch, u, ok)
		}
	}
	for _, ch := range []string{"C00000001", "D", "D0", "Dx"} {
		if _, ok := userOf(ch, "D"); ok {
			t.Errorf("userOf(%q) ok", ch)
		}
	}
	tb := &tailBuffer{max: 4}
	tb.Write([]byte("ab"))
	tb.Write([]byte("cdef "))
	if tb.String() != "def" {
		t.Errorf("tail %q", tb.String())
	}
	if orDash("") != "–" || orDash("x") != "x" || lastLines("a\nb\nc\n", 2) != "b\nc" {
		t.Error("orDash/lastLines")
	}
}

// fakeMnemo writes a script standing in for mnemo: chat answers every line
// with a reply line and exits with code; serve ends at once.
func fakeMnemo(t *testing.T, code int) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "mnemo")
	// It logs at once that the history's baseline is done, as mnemo chat
	// --verbose does once it is.
	text := "#!/bin/sh\necho 'level=INFO msg=\"history: kept memory files as found at start; done\"' >&2\nwhile read l; do echo " + benchReply + " fake; done\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(script, []byte(text), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// With a stand-in that answers chats but cannot serve, the chat rows are
// made and the run ends naming serve; the figures of a process that made
// no model call are zeros, not errors.
func TestBenchWithStandIn(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-bench", "-bin", fakeMnemo(t, 0), "-messages", "2", "-sizes", "1", "-tool-sizes", "", "-users", "2", "-starts", "1", "-stream-replies", "0"}, &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "serve: mnemo serve exited before it was ready") {
		t.Errorf("err = %v", err)
	}
	wantParts(t, "stderr", stderr.String(), "bench: chat, 1 files", "bench: console, 2 users", "bench: serve")
	b := &bencher{bin: fakeMnemo(t, 0), dir: t.TempDir()}
	if _, err := b.consoleStream(context.Background(), 1, 3, 0); err == nil || !strings.Contains(err.Error(), `the reply was "bench-reply fake", not the model's "bench-reply word1 word2."`) {
		t.Errorf("a stand-in's reply: %v", err)
	}
	// A stand-in answers without calling the model: no tool was called.
	if _, err := b.toolChats(context.Background(), 2, 2); err == nil || !strings.Contains(err.Error(), "the model called memory_read 0 times and got 0 results for 2 messages") {
		t.Errorf("a stand-in's tool chat: %v", err)
	}
	b = &bencher{bin: fakeMnemo(t, 3), dir: t.TempDir()}
	if _, err := b.chatAtSize(context.Background(), 0, 2, 1, false, false); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("chat exiting 3: %v", err)
	}
	if _, err := b.consoleConcurrent(context.Background(), 1, 1); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("console exiting 3: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.chatAtSize(ctx, 1, 2, 1, false, false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled chat: %v", err)
	}
	if _, err := b.toolChats(ctx, 2, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled tool chats: %v", err)
	}
	if _, err := b.consoleConcurrent(ctx, 1, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled console: %v", err)
	}
	if _, _, err := b.serveRun(ctx, []int{1}, 1, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled serve: %v", err)
	}
	if _, err := b.consoleStream(ctx, 1, 3, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled stream: %v", err)
	}
	if _, _, _, err := echoHi(ctx, b.bin, t.TempDir(), nil, "u"); err == nil {
		t.Error("cancelled echo hi ran")
	}
	// A work folder that cannot hold folders.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	b.dir = file
	if _, err := b.chatAtSize(context.Background(), 0, 2, 1, false, false); err == nil {
		t.Error("chat in a file")
	}
	if _, err := b.toolChats(context.Background(), 2, 2); err == nil {
		t.Error("tool chats in a file")
	}
	if _, err := b.consoleConcurrent(context.Background(), 1, 1); err == nil {
		t.Error("console in a file")
	}
	if _, _, err := b.serveRun(context.Background(), []int{1}, 1, 1); err == nil {
		t.Error("serve in a file")
	}
	if _, err := b.consoleStream(context.Background(), 1, 3, 0); err == nil {
		t.Error("stream in a file")
	}
}

// A serve that never connects is given up after the wait, and stopped.
func TestServeNeverReady(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// The ready wait ends once the script has written its line (it then
	// opens a FIFO the test reads): on a loaded machine 200ms of wall
	// time could pass before the shell ran, and SIGTERM ended it silent.
	tmp := t.TempDir()
	started := filepath.Join(tmp, "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tmp, "mnemo")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho starting >&2\necho >"+started+"\nexec sleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	clk := clocktest.New(time.Now())
	fired := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(started) // returns once the script wrote and closed it
		if err == nil {
			clk.WaitArmed(1)
			clk.Advance(200 * time.Millisecond)
		}
		fired <- err
	}()
	b := &bencher{bin: script, dir: t.TempDir(), readyWait: 200 * time.Millisecond, clock: clk}
	_, _, err := b.serveRun(context.Background(), []int{1}, 1, 1)
	if err == nil || !strings.Contains(err.Error(), "mnemo serve was not ready (Slack connected: false, Discord's /memory registered: false) after 200ms: starting") {
		t.Fatalf("err = %v", err) // not after the wait: the FIFO may never be written
	}
	if err := <-fired; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	b.readyWait = time.Minute
	if _, _, err := b.serveRun(ctx, []int{1}, 1, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}

func TestReplayFails(t *testing.T) {
	m := newBenchModel(1)
	m.bodies = [][]byte{[]byte("not json")}
	if _, err := m.replay(context.Background()); err == nil || !strings.Contains(err.Error(), "bare client: the fake model answered") {
		t.Errorf("bad body: %v", err)
	}
	if _, err := m.replayClient(context.Background()); err == nil || !strings.Contains(err.Error(), "go-openai client: a kept request: ") {
		t.Errorf("bad body through go-openai: %v", err)
	}
	m.close()
	if _, err := m.replay(context.Background()); err == nil || !strings.Contains(err.Error(), "bare client: ") {
		t.Errorf("closed server: %v", err)
	}
	for _, body := range []string{`{"model":"m","stream":true}`, `{"model":"m"}`} {
		m.bodies = [][]byte{[]byte(body)}
		if _, err := m.replayClient(context.Background()); err == nil || !strings.Contains(err.Error(), "go-openai client: ") {
			t.Errorf("closed server, %s: %v", body, err)
		}
	}
}

func TestWaits(t *testing.T) {
	dir := t.TempDir()
	if err := seed(context.Background(), dir, 1, 2, time.Now()); err != nil {
		t.Fatal(err)
	}
	store, err := memory.Open(memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u, _ := store.User(userName(0))
	if err := waitListed(context.Background(), u, "facts/user.md", 1, time.Millisecond); err == nil || !strings.Contains(err.Error(), "facts/user.md (1 bytes) not listed after 1ms") {
		t.Errorf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitListed(ctx, u, "facts/none.md", 1, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestPostWatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "refused") {
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	defer fake.Close()
	w, err := newPostWatch(fake.URL, 2, slackPost)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	post := func(path, ctype, body string) {
		resp, err := http.Post(w.url()+path, ctype, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/api/chat.postMessage", "application/x-www-form-urlencoded", "channel=D00000002&text=hi")
	post("/api/chat.postMessage", "application/json", `{"channel":"D00000001"}`)
	post("/api/chat.postMessage", "application/x-www-form-urlencoded", "channel=D00000009") // not a user of the run
	post("/api/chat.update", "application/x-www-form-urlencoded", "channel=D00000001")
	post("/api/refused/chat.postMessage", "application/x-www-form-urlencoded", "channel=D00000001")
	if _, err := http.Get(w.url() + "/api/auth.test"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, u := range []int{1, 0} {
		if err := w.wait(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.replies[0])+len(w.replies[1]) != 0 {
		t.Errorf("%d and %d more replies seen", len(w.replies[0]), len(w.replies[1]))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.wait(cctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("wait: %v", err)
	}
	rr := httptest.NewRecorder()
	if (&statusRecorder{ResponseWriter: rr}).Unwrap() != rr { // how the proxy reaches the connection of a WebSocket
		t.Error("Unwrap")
	}
	if _, err := newPostWatch("://bad", 1, slackPost); err == nil {
		t.Error("a bad URL was taken")
	}
	get := func(path string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://x"+path, nil)
		return r
	}
	for path, want := range map[string]int{"/api/v9/channels/600000000000000000003/messages": 2, "/api/v9/channels/600000000000000000003/typing": -1, "/api/v9/users/@me": -1} {
		u, ok := discordPost(get(path), nil)
		if !ok {
			u = -1
		}
		if u != want {
			t.Errorf("discordPost(%s) = %d, want %d", path, u, want)
		}
	}
}

func TestSettle(t *testing.T) {
	if err := settle(context.Background(), -1); err != nil { // no such process: no CPU, idle
		t.Errorf("settle: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := settle(ctx, os.Getpid()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestBenchWritesThisREADME checks that make bench writes this folder's
// README, and that its Performance section takes a table between the
// markers, leaving the text around them as it is.
func TestBenchWritesThisREADME(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "-readme cmd/mnemo-load/README.md") {
		t.Error("make bench does not write cmd/mnemo-load/README.md (-readme)")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := replaceSection(string(readme), "| t |\n")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	before, _, _ := strings.Cut(string(readme), benchBegin)
	_, after, _ := strings.Cut(string(readme), benchEnd)
	if want := before + benchBegin + "\n\n| t |\n\n" + benchEnd + after; got != want || !strings.Contains(before, "\n"+perfHeading+"\n") {
		t.Errorf("README.md's Performance section is not where the table goes:\n%s", got)
	}
}

// A reply that never comes ends a serve row with the user it was for and
// serve's stderr.
func TestMeasureServeWaitFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	m := newBenchModel(0)
	defer m.close()
	watch, err := newPostWatch("http://127.0.0.1:1", 2, slackPost)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.close()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sv := &serveProc{cmd: &exec.Cmd{Process: self}, stderr: &tailBuffer{max: 64}}
	sv.stderr.Write([]byte("serve's last words"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sent := make([]int, 2)
	p := servePath{name: "Slack", send: func(u, _ int) { sent[u]++ }, watch: watch}
	_, err = measureServe(ctx, m, sv, p, 2, 3)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "Slack, user 1: context canceled: serve's last words") {
		t.Errorf("err = %v", err)
	}
	if sent[0] != 1 || sent[1] != 1 {
		t.Errorf("sent %v, want one message from each user before the wait", sent)
	}
}

// -distinct-only runs that part alone and names it when it fails.
func TestBenchDistinctOnly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"-bench", "-bin", fakeMnemo(t, 0), "-distinct-only", "-distinct", "2"}, &stdout, &bytes.Buffer{})
	if err == nil || !strings.HasPrefix(err.Error(), "distinct people: mnemo serve exited before it was ready") || stdout.Len() != 0 {
		t.Errorf("err = %v, stdout %q", err, stdout.String())
	}
	r := &benchResult{Machine: machine{CPU: "Test CPU", Cores: 2, Go: "go1.x", LoadStart: "1 2 3", LoadEnd: "4 5 6", Date: "2026-01-02"},
		DistinctConc: 64, DistinctIdle: 20 * time.Second,
		Distinct: []distinctFigures{{Users: 10000, PeakFDs: 60, AfterFDs: 40, PeakGoroutines: 90, AfterGorout: 50, PeakRSS: 40 << 20, Folders: 10000, Wall: 31 * time.Second}}}
	wantParts(t, "distinct table", renderDistinct(r), "Measured 2026-01-02 on Test CPU",
		"(64 at a time", "`reflector.idle: 20s`", "| 10,000 | 60 | 40 | 90 | 50 | 40.0 MiB | 10,000 | 31s |")
	if renderDistinctTable(&benchResult{}) != "" {
		t.Error("a table without the part")
	}
}

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader("# HELP x\ngo_goroutines 42\nmnemo_x{a=\"b c\"} 1.5\nbad\nnot_a_number x\n\n"))
	if err != nil || m["go_goroutines"] != 42 || m[`mnemo_x{a="b c"}`] != 1.5 || len(m) != 2 {
		t.Errorf("parseMetrics = %v, %v", m, err)
	}
	if openFDs(-1) != -1 {
		t.Error("open files of no process")
	}
	if n := countFolders(filepath.Join(t.TempDir(), "nope")); n != 0 {
		t.Errorf("folders of a missing folder: %d", n)
	}
}

// GNU time's report: the peak in KB on its last line, after the line a
// non-zero exit adds; anything else is no figure.
func TestTimeKB(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		text string
		kb   int64
		ok   bool
	}{
		{"15872\n", 15872, true},
		{"Command exited with non-zero status 1\n2048\n", 2048, true},
		{"", 0, false},
		{"0\n", 0, false},
		{"lots\n", 0, false},
	} {
		f := filepath.Join(dir, "rss")
		if err := os.WriteFile(f, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if kb, ok := timeKB(f); kb != tc.kb || ok != tc.ok {
			t.Errorf("timeKB(%q) = %d, %v", tc.text, kb, ok)
		}
	}
	if _, ok := timeKB(filepath.Join(dir, "missing")); ok {
		t.Error("a missing report read")
	}
}

// TestBenchChatOnly: -chat-only measures the chat and echo hi rows alone
// (issue 24's figures) and prints them with their ratio rows.
func TestBenchChatOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mnemo binary")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	bin := buildMnemo(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-bench", "-chat-only", "-bin", bin, "-messages", "2", "-sizes", "0,2", "-tool-sizes", "2", "-starts", "1", "-gobench", "", "-no-stream=true", "-no-rollups"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	wantParts(t, "the table", out,
		"| `mnemo chat`, 2-message chat, user with 2 files |",
		"| `mnemo chat`, 2-message chat, user with 0 files, `llm.stream: false` |",
		"| `mnemo chat`, 2-message chat, user with 2 files, no roll-ups (`memory.rollupAfter: 0`) |",
		"| **`mnemo chat` per message, 2 ÷ 0 files** | ×",
		"| **`echo hi \\| mnemo chat`, 2 ÷ 0 files** | ×",
		"| **`mnemo chat` per message, `memory_search` − `memory_read`, 2 text files** | ",
	)
	if !strings.Contains(out, "Command: `make bench BENCHFLAGS=\"-chat-only -gobench '' -messages 2 -no-rollups -no-stream -sizes 0,2 -starts 1 -tool-sizes 2\"`") {
		t.Errorf("the command line shown:\n%s", out)
	}
	if strings.Contains(out, "console,") || strings.Contains(out, "edit-to-index") {
		t.Errorf("-chat-only ran more than the chats:\n%s", out)
	}
}

// serve's folder for the Slack and Discord rows has a configuration mnemo
// takes, linking each person's two identities, with the per-person limits
// off: a person sends every row's messages within a minute, more than
// limits.messagesPerMinute lets through, and a refused message gets no
// reply for the row to wait for.
func TestServeDirConfig(t *testing.T) {
	b := &bencher{bin: "/bin/true", dir: t.TempDir(), progress: func(string, ...any) {}}
	dir, _, err := b.serveDir(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "mnemo.yaml")
	cfg, err := mnemoconfig.Load(name, true, func(string) string { return "" }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.MessagesPerMinute != 0 || cfg.Limits.TokensPerDay != 0 {
		t.Errorf("limits %+v; want them off", cfg.Limits)
	}
	if len(cfg.Identities) != 3 {
		t.Errorf("identities %v; want 3 people", cfg.Identities)
	}
}

// The bench's model calls the tool a person's message names by its
// marker, answers once the result is in, and counts the results: errors
// (with the first one's text) and searches that found nothing. A casual
// message and the reflector call no tool.
func TestBenchModelTools(t *testing.T) {
	m := newBenchModel(0)
	defer m.close()
	sys := msg("system", "You are mnemo, a helpful assistant.")
	index := msg("user", "Available memory:\n- facts/user.md (200B): name")
	for _, tc := range []struct{ text, tool, args string }{
		{"Message 2 of 5. " + searchMarker + " kabemo  tilosa\nmore", "memory_search", `{"query":"kabemo  tilosa"}`},
		{"Message 3 of 5. " + readMarker + " facts/topic-0001.md", "memory_read", `{"path":"facts/topic-0001.md"}`},
	} {
		user := msg("user", tc.text)
		got := ask(t, m.srv, sys, index, user)
		if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != tc.tool || got.ToolCalls[0].Arguments != tc.args {
			t.Fatalf("%q: %+v, want %s %s", tc.text, got, tc.tool, tc.args)
		}
		call := llm.Message{Role: "assistant", ToolCalls: got.ToolCalls}
		for _, result := range []string{"- Notes: kabemo tilosa", "error: no such memory file", "No entries match \"x\"."} {
			res := llm.Message{Role: "tool", ToolCallID: got.ToolCalls[0].ID, Content: result}
			if got := ask(t, m.srv, sys, index, user, call, res); got.Content != benchReply+" ok" || len(got.ToolCalls) > 0 {
				t.Errorf("after the result %q: %+v", result, got)
			}
		}
	}
	if got := ask(t, m.srv, sys, index, msg("user", messageText(0, 2))); got.Content != benchReply+" ok" {
		t.Errorf("a casual message: %+v", got)
	}
	refl := ask(t, m.srv, msg("system", "You are the memory reflector of mnemo."), msg("user", "1 turn(s): "+searchMarker+" kabemo"))
	if len(refl.ToolCalls) > 0 {
		t.Errorf("the reflector called %+v", refl.ToolCalls)
	}
	want := toolResults{calls: 2, results: 6, bytes: 2 * len("- Notes: kabemo tilosa"+"error: no such memory file"+"No entries match \"x\"."),
		errors: 2, misses: 2, firstError: "error: no such memory file"}
	if got := m.toolCounts(); got != want {
		t.Errorf("tool counts %+v, want %+v", got, want)
	}
	// The roll-up job's call is counted apart, neither the Thinker's nor
	// the reflector's (reflector/prompts/rollup.md's first words).
	if got := ask(t, m.srv, msg("system", "You are the roll-up writer of mnemo, a chat assistant."), msg("user", "Period: 2024-Q1.")); got.Content != "Summary: none" {
		t.Errorf("the roll-up job was answered %+v", got)
	}
	if m.thinker.Load() != 9 || m.reflector.Load() != 1 || m.rollups.Load() != 1 {
		t.Errorf("thinker %d, reflector %d, roll-up %d calls", m.thinker.Load(), m.reflector.Load(), m.rollups.Load())
	}
	m.reset()
	if m.rollups.Load() != 0 {
		t.Error("reset kept the roll-up calls")
	}
	if got := m.toolCounts(); got != (toolResults{}) {
		t.Errorf("after reset: %+v", got)
	}
}

// The text memory: half fact files of 5 "- Key: value" lines, half
// episode months of 5 dated entries, the same each run, that memory takes
// as they are and searches; each tool message its own query or path.
func TestSeedText(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	tm, err := seedText(context.Background(), dir, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.paths) != 10 || tm.files != 10 || len(tm.vocab) != textVocab {
		t.Fatalf("%d paths, %d files, %d words", len(tm.paths), tm.files, len(tm.vocab))
	}
	var size int64
	texts := map[string]string{}
	for _, p := range tm.paths {
		b, err := os.ReadFile(filepath.Join(dir, userName(0), p))
		if err != nil {
			t.Fatal(err)
		}
		size += int64(len(b))
		texts[p] = string(b)
	}
	if size != tm.bytes || size < 10*2000 || size > 10*5000 {
		t.Errorf("%d bytes written, %d counted; want about 3 KB a file", size, tm.bytes)
	}
	if _, ok := texts["facts/user.md"]; !ok {
		t.Errorf("no facts/user.md in %v", tm.paths)
	}
	topic, month := texts["facts/topic-0001.md"], texts["episodes/2026-10.md"]
	if n := strings.Count(topic, "\n- "); n != 5 || !strings.Contains(topic, "> Summary: ") {
		t.Errorf("a fact file of %d lines:\n%s", n, topic)
	}
	if n := strings.Count(month, "\n## "); n != 5 || strings.Count(month, "\n- Date: 2026-10-") != 5 || strings.Count(month, "\n- Notes: ") != 5 {
		t.Errorf("an episode month of %d entries:\n%s", n, month)
	}
	seen := map[string]bool{}
	for _, w := range tm.vocab {
		if seen[w] || len(w) < 6 {
			t.Errorf("word %q: twice, or short", w)
		}
		seen[w] = true
	}
	again, err := seedText(context.Background(), t.TempDir(), 10, now)
	if err != nil {
		t.Fatal(err)
	}
	if again.bytes != tm.bytes || again.message("memory_search", 3, 9) != tm.message("memory_search", 3, 9) {
		t.Error("two seeds differ")
	}

	store, err := memory.Open(memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u, err := store.User(userName(0))
	if err != nil {
		t.Fatal(err)
	}
	if files, err := u.List(); err != nil || len(files) != 10 {
		t.Errorf("memory lists %d files: %v", len(files), err)
	}
	queries := map[string]bool{}
	for i := range 5 {
		text := tm.message("memory_search", i, 5)
		call, ok := benchToolCall(text)
		var args struct{ Query string }
		if !ok || json.Unmarshal([]byte(call.Arguments), &args) != nil || len(strings.Fields(args.Query)) != 3 {
			t.Fatalf("message %q: call %+v", text, call)
		}
		queries[args.Query] = true
		if found, err := store.Search(userName(0), args.Query, 0); err != nil || found.Total == 0 {
			t.Errorf("search %q found %d: %v", args.Query, found.Total, err)
		}
		if !strings.HasPrefix(text, fmt.Sprintf("Message %d of 5. ", i+1)) {
			t.Errorf("message %q", text)
		}
		read := tm.message("memory_read", i, 5)
		path := strings.TrimSpace(strings.SplitN(read, readMarker, 2)[1])
		if _, ok := texts[path]; !ok {
			t.Errorf("message %q reads no file of the memory", read)
		}
	}
	if len(queries) != 5 {
		t.Errorf("queries %v: one per message", queries)
	}

	one, err := seedText(context.Background(), t.TempDir(), 1, now)
	if err != nil || len(one.paths) != 1 || one.paths[0] != "facts/user.md" || !strings.HasSuffix(one.message("memory_read", 0, 1), " facts/user.md") {
		t.Errorf("one file: %+v, %v", one, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := seedText(ctx, t.TempDir(), 4, now); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := seedText(context.Background(), file, 2, now); err == nil {
		t.Error("a memory seeded in a file")
	}
}

// The tool chats' rows: per size the reading chat, the searching chat,
// the first search alone and, in bold, search − read; a search without
// its reading chat has no bold row.
func TestRenderTools(t *testing.T) {
	read := toolFigures{Tool: "memory_read", Files: 10000, Messages: 200, MemoryBytes: 35_100_000, CPUPerMsg: 1500 * time.Microsecond,
		Wall: Latency{P50: 2, P99: 5}, FirstCPU: 2 * time.Millisecond, FirstWall: 3 * time.Millisecond, CallsPerMsg: 2, ReflectorCalls: 10,
		ResultBytes: 4400, StartRSS: 24 << 20, FirstRSS: 24 << 20, MaxRSS: 25 << 20}
	search := read
	search.Tool, search.CPUPerMsg, search.Wall, search.ResultBytes, search.Misses = "memory_search", 4*time.Millisecond, Latency{P50: 4.5, P99: 4}, 3200, 2
	search.FirstCPU, search.FirstWall, search.FirstRSS, search.MaxRSS = 900*time.Millisecond, 1200*time.Millisecond, 31<<20, 32<<20
	lone := search
	lone.Files, lone.MemoryBytes = 200, 700_000
	r := &benchResult{Machine: machine{Date: "2026-01-02"}, Command: "make bench", Tools: []toolFigures{lone, read, search}}
	out := renderBench(r)
	wantParts(t, "the table", out,
		"| `mnemo chat`: each message reads a file (`memory_read`), 200 messages, 10,000 text files (35.1 MB) | 1.5ms | 2ms | 5ms | – | 2.00 (+10 reflector) | 25.0 MiB | result 4.4 KB (mean) |\n"+
			"| `mnemo chat`: each message searches (`memory_search`), 200 messages, 10,000 text files (35.1 MB) | 4ms | 4.5ms | 4ms | – | 2.00 (+10 reflector) | 32.0 MiB | result 3.2 KB (mean); 2 found nothing |\n"+
			"| `mnemo chat`: the first `memory_search` of that chat (builds the search index), 10,000 text files | 900ms | 1.2s | – | – | – | +7.0 MiB (24.0 MiB → 31.0 MiB) | the first `memory_read` of its chat: 2ms CPU, 3ms wall |\n"+
			"| **`mnemo chat` per message, `memory_search` − `memory_read`, 10,000 text files** | +2.5ms | +2.5ms | −1ms | – | – | +7.0 MiB | – |\n",
		"| `mnemo chat`: the first `memory_search` of that chat (builds the search index), 200 text files | 900ms | 1.2s | – | – | – | +7.0 MiB (24.0 MiB → 31.0 MiB) | – |\n",
		"The `memory_read` and `memory_search` rows run on a memory of text",
	)
	if strings.Count(out, "| **`mnemo chat` per message, `memory_search` − `memory_read`") != 1 {
		t.Errorf("a bold row for a search without its reading chat:\n%s", out)
	}
	if strings.Contains(renderBench(&benchResult{}), "The `memory_read` and `memory_search` rows") {
		t.Error("the tool rows' text without them")
	}
	if got := sizeDiff(1<<20, 3<<20); got != "−2.0 MiB" {
		t.Errorf("sizeDiff = %q", got)
	}
}
