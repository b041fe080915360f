package intake

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

func newAdapter(t *testing.T, w *world) (*Adapter, *bottest.LogBuffer) {
	t.Helper()
	logs := &bottest.LogBuffer{}
	a := NewAdapter(AdapterOptions{Platform: "slack", Keeps: "the messages kept", Dir: w.dir, Now: w.clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	a.Faults = w.faults.hook
	return a, logs
}

func TestAdapterDefaults(t *testing.T) {
	a := NewAdapter(AdapterOptions{Platform: "discord", HTTPTimeout: 7 * time.Second})
	if a.Log == nil || a.Now == nil || a.Journal() == nil {
		t.Fatalf("defaults not filled: %+v", a)
	}
	if a.HTTP == nil || a.HTTP.Timeout != 7*time.Second {
		t.Fatalf("HTTP client %+v", a.HTTP)
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
	// A given client is used as it is, and its connections are not the
	// Adapter's to close.
	own := &http.Client{}
	if b := NewAdapter(AdapterOptions{Platform: "discord", HTTPClient: own}); b.HTTP != own || b.ownHTTP {
		t.Fatal("the given HTTP client was replaced")
	}
}

func TestAdapterStart(t *testing.T) {
	w := newWorld(t)
	a, _ := newAdapter(t, w)
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
	// Closed by stop: it takes no more messages.
	if errs := a.Journal().Add(msg("m1")); !errors.Is(errs[0], ErrClosed) {
		t.Fatalf("Add after stop: %v", errs[0])
	}

	// A folder that cannot be made: the error names the journal's purpose.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := NewAdapter(AdapterOptions{Platform: "discord", Keeps: "the messages received", Dir: filepath.Join(file, "intake")})
	if _, err := b.Start(); err == nil || !strings.HasPrefix(err.Error(), "discord: ") ||
		!strings.HasSuffix(err.Error(), "(the intake journal keeps the messages received; the state folder must be writable)") {
		t.Fatalf("Start in an unusable folder: %v", err)
	}
}
