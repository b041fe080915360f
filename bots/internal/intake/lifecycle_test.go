package intake

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

func newLifecycle(t *testing.T, w *world) (*Lifecycle, *bottest.LogBuffer) {
	t.Helper()
	logs := &bottest.LogBuffer{}
	a := NewLifecycle(LifecycleOptions{Platform: "slack", Keeps: "the messages kept", Dir: w.dir, Now: w.clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	a.Faults = w.faults.hook
	return a, logs
}

func TestLifecycleDefaults(t *testing.T) {
	a := NewLifecycle(LifecycleOptions{Platform: "discord"})
	if a.Log == nil || a.Now == nil || a.Journal() == nil {
		t.Fatalf("defaults not filled: %+v", a)
	}
	// A memory-only journal until Start, and after it without Dir.
	if a.Journal().Path() != "" {
		t.Fatalf("journal at %q", a.Journal().Path())
	}
	stop, err := a.Start()
	if err != nil {
		t.Fatal(err)
	}
	if a.Journal().Path() != "" {
		t.Fatalf("journal at %q without Dir", a.Journal().Path())
	}
	stop()
}

func TestLifecycleStart(t *testing.T) {
	w := newWorld(t)
	a, _ := newLifecycle(t, w)
	stops := 0
	a.opts.AtStop = func() { stops++ }
	stop, err := a.Start()
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Journal().Path(); got != w.path() {
		t.Fatalf("journal at %q; want %q", got, w.path())
	}
	if _, err := a.Start(); err == nil || err.Error() != "slack: Run was already called on this Bot" {
		t.Fatalf("second Start: %v", err)
	}
	stop()
	if stops != 1 {
		t.Fatalf("AtStop ran %d times at stop; want 1", stops)
	}
	// Closed by stop: it takes no more messages.
	if errs := a.Journal().Add(msg("m1")); !errors.Is(errs[0], ErrClosed) {
		t.Fatalf("Add after stop: %v", errs[0])
	}

	// A folder that cannot be made: the error names the journal's purpose.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := NewLifecycle(LifecycleOptions{Platform: "discord", Keeps: "the messages received", Dir: filepath.Join(file, "intake"),
		AtStop: func() { stops++ }})
	if _, err := b.Start(); err == nil || !strings.HasPrefix(err.Error(), "discord: ") ||
		!strings.HasSuffix(err.Error(), "(the intake journal keeps the messages received; the state folder must be writable)") {
		t.Fatalf("Start in an unusable folder: %v", err)
	}
	if stops != 2 {
		t.Fatalf("AtStop did not run after a failed Start")
	}
}
