package memory

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const crashChildEnv = "MNEMO_CRASH_CHILD_DIR"

// crashVersion is version n of the fact file: self-describing, so a torn
// or mixed file is detectable from its text alone.
func crashVersion(n int) string {
	pad := strings.Repeat(fmt.Sprintf("- filler line of version %d\n", n), 200+n%50)
	return fmt.Sprintf("# User\n\n> Summary: version %d\n\n%s- end %d\n", n, pad, n)
}

func checkCrashFact(text string) error {
	var n int
	if _, err := fmt.Sscanf(text, "# User\n\n> Summary: version %d\n", &n); err != nil {
		return fmt.Errorf("not a whole version: %q…", text[:min(len(text), 60)])
	}
	if text != crashVersion(n) {
		return fmt.Errorf("version %d is torn (%d bytes)", n, len(text))
	}
	return nil
}

// TestCrashChild is the writer the crash test kills; it only runs as that
// child process.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("runs only as the crash test's child process")
	}
	// The child stops for good before its MNEMO_CRASH_AT-th change on disk
	// and says so: the parent kills it there.
	at, _ := strconv.Atoi(os.Getenv("MNEMO_CRASH_AT"))
	ops := 0
	stop := func(op, name string) error {
		if ops++; ops == at {
			fmt.Printf("at %s %s\n", op, name)
			select {}
		}
		return nil
	}
	s, err := Open(Options{Dir: dir, Watch: false, Faults: stop})
	if err != nil {
		os.Exit(3)
	}
	u, _ := s.User("alice")
	sess := u.NewSession()
	start, _ := strconv.Atoi(os.Getenv("MNEMO_CRASH_START"))
	fmt.Println("ready")
	for n := start; ; n++ {
		sess.Load("facts/user.md")
		if err := sess.Write("facts/user.md", crashVersion(n)); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			os.Exit(4)
		}
		entry := fmt.Sprintf("## Step %d\n- Summary: step %d\n- Date: 2026-02-01\n- %s\n", n, n, strings.Repeat("detail ", 20))
		if err := sess.Append("episodes/2026-02.md", entry, ""); err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			os.Exit(5)
		}
	}
}

// A writer killed at random points (before one of its changes on disk)
// leaves every file whole: the old
// version or the new one, never a torn or empty one; leftovers are removed
// when the next run first lists the folder.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process many times")
	}
	dir := filepath.Join(t.TempDir(), "memory")
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 40
	lastSteps := 0
	for i := 0; i < kills; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "MNEMO_CRASH_START="+strconv.Itoa(i*1000),
			"MNEMO_CRASH_AT="+strconv.Itoa(1+rng.IntN(120)))
		out, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "ready" {
			t.Fatalf("child did not start: %v %q %s", lines.Err(), lines.Text(), stderr.String())
		}
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), "at ") {
			t.Fatalf("child did not reach its crash point: %v %q %s", lines.Err(), lines.Text(), stderr.String())
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child ended by itself (%v): %s", err, stderr.String())
		}

		fact := filepath.Join(dir, "alice/facts/user.md")
		if text, err := os.ReadFile(fact); err == nil {
			if err := checkCrashFact(string(text)); err != nil {
				t.Fatalf("kill %d: %v", i, err)
			}
		} else if i > 0 && !os.IsNotExist(err) {
			t.Fatalf("kill %d: %v", i, err)
		}
		if text, err := os.ReadFile(filepath.Join(dir, "alice/episodes/2026-02.md")); err == nil {
			_, entries, problems := parseEpisodes(string(text))
			if len(problems) > 0 || !strings.HasPrefix(string(text), "# 2026-02 Episodes\n\n> Summary: ") {
				t.Fatalf("kill %d: torn episode file: %v", i, problems)
			}
			if len(entries) < lastSteps {
				t.Fatalf("kill %d: episode entries went from %d to %d", i, lastSteps, len(entries))
			}
			lastSteps = len(entries)
		}
	}
	if lastSteps == 0 {
		t.Fatal("the child never completed a write: the test proved nothing")
	}
	s := newStore(t, func(o *Options) { o.Dir = dir })
	if files, err := mustUser(t, s, "alice").List(); err != nil || len(files) != 2 {
		t.Fatalf("List after crashes = %v, %v", files, err)
	}
	for _, sub := range []string{"facts", "episodes"} {
		entries, _ := os.ReadDir(filepath.Join(dir, "alice", sub))
		for _, e := range entries {
			if isTempName(e.Name()) {
				t.Errorf("leftover %s/%s after the first List", sub, e.Name())
			}
		}
	}
	t.Logf("%d kills, %d episode entries survived whole", kills, lastSteps)
}
