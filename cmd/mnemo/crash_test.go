package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/memory"
)

// The crash test: a child `mnemo chat` (this test binary running the real
// run() code path) is killed with SIGKILL at each disk write boundary of a
// reflection in turn — before every create, write, fsync, rename, folder
// fsync and remove that the memory store and the journal make — and at
// random moments, then restarted until it ends normally. Each time the
// memory must hold every intended change exactly once: no duplicate
// episode entry, no lost fact, no torn or temp file, an empty journal.
//
// MNEMO_CRASH_RANDOM=N adds N kills at random moments (make crash: 300).

const crashMessage = "Hello, I'm Ada. Today we fixed the logger."

// crashBrain scripts the model by what it is sent, so that a restarted
// child gets the same answers: the Thinker says "Noted."; the reflector
// writes a fact and appends an episode, then patches the fact, then ends.
type crashBrain struct{ month, day string }

func (b crashBrain) handle(r openaitest.Request) (openaitest.Reply, bool) {
	if !strings.Contains(r.System(), "memory reflector") {
		return openaitest.Text("Noted."), true
	}
	steps := 0
	for _, m := range r.Chat.Messages {
		if m.Role == "assistant" {
			steps++
		}
	}
	switch steps {
	case 0:
		return openaitest.ToolCalls(
			openaitest.Call("memory_write", toolJSON(map[string]string{"path": "facts/user.md",
				"content": "# User Facts\n\n> Summary: user name\n\n- Name: Ada\n"})),
			openaitest.Call("memory_append", toolJSON(map[string]string{"path": "episodes/" + b.month + ".md",
				"entry": "## Logger fix\n- Summary: fixed the logger\n- Date: " + b.day + "\n"})),
		), true
	case 1:
		return openaitest.ToolCalls(openaitest.Call("memory_patch", toolJSON(map[string]any{"path": "facts/user.md",
			"patches": []map[string]string{{"oldText": "- Name: Ada\n", "newText": "- Name: Ada Lovelace\n"}}}))), true
	}
	return openaitest.Text("Saved her name and the logger fix."), true
}

// crashWantFact is the fact file after the patch, without its stamps and
// with the day the old name was replaced as DATE: the replaced line is
// kept under "## Earlier".
const crashWantFact = "# User Facts\n\n> Summary: user name\n\n- Name: Ada Lovelace\n\n## Earlier\n\n- Name: Ada (until DATE)\n"

// crashUntil is the day a replaced fact's "until" names.
var crashUntil = regexp.MustCompile(`\(until \d{4}-\d{2}-\d{2}\)`)

type crashWorld struct {
	t     *testing.T
	dir   string
	env   []string
	month string
}

func newCrashWorld(t *testing.T) *crashWorld {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	b := crashBrain{month: now.Format("2006-01"), day: now.Format(time.DateOnly)}
	srv := openaitest.New(t)
	srv.Handle(b.handle)
	env := append(os.Environ(), "MNEMO_CRASH_CHILD=1", "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-test-key-123456",
		"MNEMO_DATA_DIR="+filepath.Join(dir, "data", "memory"), "MNEMO_MODEL=m")
	return &crashWorld{t: t, dir: dir, env: env, month: b.month}
}

// child runs `mnemo chat --user ada` with input; crashAt > 0 kills it at
// that disk operation, killAfter > 0 after that long. It returns the ops
// the child reached and whether it was killed.
func (w *crashWorld) child(input string, crashAt int, killAfter time.Duration) (ops []string, killed bool) {
	w.t.Helper()
	opsFile := filepath.Join(w.dir, "ops")
	os.Remove(opsFile)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Dir = w.dir
	cmd.Env = append(w.env, "MNEMO_CRASH_AT="+strconv.Itoa(crashAt), "MNEMO_CRASH_OPS="+opsFile)
	cmd.Stdin = strings.NewReader(input)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
		killed = true
	} else if err != nil {
		w.t.Fatalf("child failed: %v\n%s", err, out.String())
	}
	data, _ := os.ReadFile(opsFile)
	return strings.Fields(string(data)), killed
}

func (w *crashWorld) path(rel string) string { return filepath.Join(w.dir, "data", rel) }

// recover restarts the child until it ends on its own. When the turn never
// became durable (the journal does not have it and no memory was written),
// the message is sent again, as a person whose message got no answer would.
func (w *crashWorld) recover() {
	w.t.Helper()
	input := ""
	journal, _ := os.ReadFile(w.path("state/reflector/ada.jsonl"))
	if !strings.Contains(string(journal), `"userText"`) {
		if _, err := os.Stat(w.path("memory/ada")); errors.Is(err, fs.ErrNotExist) {
			input = crashMessage + "\n"
		}
	}
	if _, killed := w.child(input, 0, 0); killed {
		w.t.Fatal("the restarted child was killed")
	}
}

// check asserts the memory holds every intended change exactly once and
// nothing else.
func (w *crashWorld) check(what string) {
	w.t.Helper()
	fact, err := os.ReadFile(w.path("memory/ada/facts/user.md"))
	if got := crashUntil.ReplaceAllString(memory.StripStamps(string(fact)), "(until DATE)"); err != nil || got != crashWantFact ||
		strings.Count(string(fact), "<!-- src: terminal") != 2 {
		w.t.Fatalf("%s: facts/user.md = %q, %v; want %q", what, fact, err, crashWantFact)
	}
	ep, err := os.ReadFile(w.path("memory/ada/episodes/" + w.month + ".md"))
	if err != nil || strings.Count(string(ep), "## Logger fix") != 1 {
		w.t.Fatalf("%s: the episode entry is not there exactly once: %q, %v", what, ep, err)
	}
	filepath.WalkDir(w.path(""), func(p string, d fs.DirEntry, err error) error {
		// Temp files (memory/durable's ".<name>.mnemo-tmp-<random>", and the
		// journal's of older mnemos: ".<user>.jsonl<random>").
		journalTemp := strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".jsonl") && !strings.HasSuffix(d.Name(), ".jsonl")
		if err == nil && (strings.Contains(d.Name(), ".mnemo-tmp-") || strings.Contains(d.Name(), ".tmp-") || journalTemp) {
			w.t.Errorf("%s: temp file left: %s", what, p)
		}
		return nil
	})
	if data, err := os.ReadFile(w.path("state/reflector/ada.jsonl")); err == nil {
		w.t.Fatalf("%s: the journal still holds:\n%s", what, data)
	}
	if files, _ := os.ReadDir(w.path("state/reflector/failed")); len(files) != 0 {
		w.t.Fatalf("%s: turns gave up: %v", what, files)
	}
}

func TestCrashAtEveryWriteBoundary(t *testing.T) {
	if os.Getenv("MNEMO_CRASH_CHILD") == "1" {
		return
	}
	// A run without a crash counts the boundaries and checks the script.
	w := newCrashWorld(t)
	ops, killed := w.child(crashMessage+"\n", 0, 0)
	if killed {
		t.Fatal("the counting run was killed")
	}
	w.check("without a crash")
	if len(ops) < 30 {
		t.Fatalf("only %d disk operations: %v", len(ops), ops)
	}
	t.Logf("%d write boundaries: %s", len(ops), strings.Join(ops, " "))

	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for n := 1; n <= len(ops); n++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(fmt.Sprintf("kill-before-%d-%s", n, ops[n-1]), func(t *testing.T) {
				// The journal's flusher batches appends by timing, so a run
				// can take fewer boundaries than the counting run did: not
				// reaching operation n is a miss only when the run had n.
				for attempt := 1; ; attempt++ {
					w := newCrashWorld(t)
					got, killed := w.child(crashMessage+"\n", n, 0)
					if killed {
						w.recover()
						w.check(fmt.Sprintf("killed before operation %d (%s)", n, ops[n-1]))
						return
					}
					if len(got) >= n || attempt == 5 {
						t.Fatalf("the child was not killed at operation %d (attempt %d; its run had %d operations: %v)", n, attempt, len(got), got)
					}
					w.check(fmt.Sprintf("a run of %d operations, not killed", len(got)))
				}
			})
		}()
	}
	wg.Wait()

	random, _ := strconv.Atoi(os.Getenv("MNEMO_CRASH_RANDOM"))
	kills, midRun := 0, 0
	for i := range random {
		w := newCrashWorld(t)
		// Kill at a random moment of a run, then possibly again while it
		// recovers, before letting it finish.
		attempts := []string{crashMessage + "\n"}
		if rand.IntN(2) == 0 {
			attempts = append(attempts, "")
		}
		for _, input := range attempts {
			if _, killed := w.child(input, 0, time.Duration(rand.IntN(60_000))*time.Microsecond); killed {
				kills++
				if j, _ := os.ReadFile(w.path("state/reflector/ada.jsonl")); strings.Contains(string(j), `"kind":"run"`) {
					midRun++
				}
			}
		}
		w.recover()
		w.check(fmt.Sprintf("random kill %d", i+1))
	}
	if random > 0 {
		t.Logf("random kills: %d landed (%d of them in the middle of a reflection run) in %d rounds", kills, midRun, random)
	}
}

// TestCrashChild is `mnemo chat --user ada` as the crash test's child:
// MNEMO_CRASH_AT=n kills it with SIGKILL just before its n-th disk
// operation; every operation reached is listed in MNEMO_CRASH_OPS.
func TestCrashChild(t *testing.T) {
	if os.Getenv("MNEMO_CRASH_CHILD") != "1" {
		t.Skip("runs only as the crash test's child process")
	}
	at, _ := strconv.Atoi(os.Getenv("MNEMO_CRASH_AT"))
	log, err := os.OpenFile(os.Getenv("MNEMO_CRASH_OPS"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	faults := func(op, name string) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never reach the operation
		}
		fmt.Fprintf(log, "%s:%s\n", op, filepath.Base(name))
		return nil
	}
	err = runWith(stopOn(context.Background()), []string{"chat", "--user", "ada"},
		cliEnv{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, faults: faults})
	os.Exit(exitCode(err, os.Stderr))
}
