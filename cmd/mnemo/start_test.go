package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// TestStartSeesEditsMadeWhileStopped: a start answers from the index
// cache without checking every file, yet a file edited in place (its
// folder unchanged), one created and one deleted while mnemo was stopped
// are in the first request's index, never what the cache said of them.
func TestStartSeesEditsMadeWhileStopped(t *testing.T) {
	dir := inTempDir(t)
	mem := filepath.Join(dir, "data", "memory")
	facts := filepath.Join(mem, "ann", "facts")
	if err := os.MkdirAll(facts, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, summary string) {
		t.Helper()
		// Saved in place, as nano or VS Code do, an hour ago: old enough
		// for the cache to trust it.
		f, err := os.OpenFile(filepath.Join(facts, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("# Facts\n\n> Summary: " + summary + "\n\n- note\n")
		f.Close()
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(facts, name), old, old)
	}
	write("user.md", "name Ann")
	write("gone.md", "soon deleted")
	srv := openaitest.New(t)
	var mu sync.Mutex
	var indexes, reflections []string
	srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if strings.Contains(r.System(), "memory reflector") {
			mu.Lock()
			reflections = append(reflections, string(r.Body))
			mu.Unlock()
			return openaitest.Text("Nothing to remember."), true
		}
		mu.Lock()
		indexes = append(indexes, string(r.Body))
		mu.Unlock()
		return openaitest.Text("Hello Ann."), true
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-key-123456", "MNEMO_DATA_DIR": mem}
	chat := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(stopOn(context.Background()), []string{"chat", "--user", "ann"}, func(k string) string { return env[k] }, strings.NewReader("hi\n"), &out, &errOut); err != nil {
			t.Fatalf("chat: %v: %s", err, errOut.String())
		}
		mu.Lock()
		defer mu.Unlock()
		return indexes[len(indexes)-1]
	}
	if first := chat(); !strings.Contains(first, "name Ann") || !strings.Contains(first, "soon deleted") {
		t.Fatalf("the first chat's request lacks the files: %s", first)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "state", "index", "ann.idx")); err != nil {
		t.Fatalf("no index cache after the first chat: %v", err)
	}
	write("user.md", "name Ann Lee, edited while stopped")
	write("new.md", "created while stopped")
	if err := os.Remove(filepath.Join(facts, "gone.md")); err != nil {
		t.Fatal(err)
	}
	second := chat()
	for _, want := range []string{"name Ann Lee, edited while stopped", "created while stopped"} {
		if !strings.Contains(second, want) {
			t.Errorf("the next start's request lacks %q: %s", want, second)
		}
	}
	if strings.Contains(second, "soon deleted") || strings.Contains(second, `name Ann\n`) {
		t.Errorf("the next start's request shows what the cache said: %s", second)
	}
	// The reflection at exit pre-loads the facts as they are now too.
	mu.Lock()
	defer mu.Unlock()
	if len(reflections) != 2 {
		t.Fatalf("%d reflections, want one per chat", len(reflections))
	}
	refl := reflections[1]
	for _, want := range []string{"name Ann Lee, edited while stopped", "created while stopped"} {
		if !strings.Contains(refl, want) {
			t.Errorf("the next start's reflection lacks %q: %s", want, refl)
		}
	}
	if strings.Contains(refl, "soon deleted") || strings.Contains(refl, `name Ann\n`) {
		t.Errorf("the next start's reflection shows what the cache said: %s", refl)
	}
}
