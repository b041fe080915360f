package intake

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/core"
)

// wireMsg is a message as a test adapter journals it.
type wireMsg struct {
	Text string `json:"text"`
}

func (w wireMsg) Valid() bool { return w.Text != "" }

func (w wireMsg) Incoming(e Entry, log *slog.Logger) string { return e.ID + ":" + w.Text }

func newAdapter(t *testing.T, w *world) (*Adapter, *bottest.LogBuffer) {
	t.Helper()
	logs := &bottest.LogBuffer{}
	a := NewAdapter(AdapterOptions{Platform: "slack", Keeps: "the messages kept", Dir: w.dir, Now: w.clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	a.OpenFile = w.faults.openFile
	return a, logs
}

func TestAdapterDefaults(t *testing.T) {
	a := NewAdapter(AdapterOptions{Platform: "discord", HTTPTimeout: 7 * time.Second})
	if a.Log == nil || a.Now == nil || a.Queue == nil || a.Journal() == nil {
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

func TestAdapterReplay(t *testing.T) {
	w := newWorld(t)
	j := w.open(t)
	add(t, j,
		Entry{ID: "a", User: "alice", Data: []byte(`{"text":"first"}`)},
		Entry{ID: "b", User: "alice", Data: []byte(`{"text":"second"}`)},
		Entry{ID: "c", User: "alice", Data: []byte(`{"text":5}`)},  // does not decode
		Entry{ID: "d", User: "alice", Data: []byte(`{"text":""}`)}, // not Valid
	)
	if err := j.Posting("b", "the reply"); err != nil {
		t.Fatal(err)
	}
	j.Close()

	a, logs := newAdapter(t, w)
	stop, err := a.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var queued, resumed []string
	Replay(a, Decode[wireMsg], func(m string) { queued = append(queued, m) },
		func(m, text string) { resumed = append(resumed, m+"="+text) })
	if !slices.Equal(queued, []string{"a:first"}) || !slices.Equal(resumed, []string{"b:second=the reply"}) {
		t.Fatalf("queued %q, resumed %q", queued, resumed)
	}
	// The unreadable ones are dropped, with the file named.
	if n := a.Journal().Len(); n != 2 {
		t.Fatalf("%d messages held; want 2 (a and b)", n)
	}
	for _, want := range []string{"an unreadable message in the intake journal cannot be answered; dropping it",
		"id=c", "id=d", "malformed ids", w.path(), "answering the messages received before a restart"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}

	// Nothing pending: nothing is said.
	empty := NewAdapter(AdapterOptions{Platform: "slack"})
	Replay(empty, Decode[wireMsg], func(string) { t.Fatal("queued") }, func(string, string) { t.Fatal("resumed") })
}

func TestAdapterReply(t *testing.T) {
	w := newWorld(t)
	a, logs := newAdapter(t, w)
	stop, err := a.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	log := a.Log
	add(t, a.Journal(), msg("m1"), msg("m2"), msg("m3"))

	// Journaled before the post, done after it.
	var froms []int
	a.Reply("m1", log, "hello", time.Now(), func(from int) (int, error) {
		froms = append(froms, from)
		if !strings.Contains(w.file(t), `{"op":"post","id":"m1","text":"hello"}`) {
			t.Errorf("not journaled before the post:\n%s", w.file(t))
		}
		return 2, nil
	})
	if !strings.Contains(logs.String(), "slack: replied") {
		t.Errorf("no reply logged:\n%s", logs)
	}

	// A failed post is logged (the busy reply by that name) and the
	// message still leaves the journal: it is not retried.
	a.Reply("m2", log, core.BusyReplyText, time.Now(), func(int) (int, error) { return 0, errors.New("HTTP 500") })
	if !strings.Contains(logs.String(), "slack: cannot post the busy reply") {
		t.Errorf("no failure logged:\n%s", logs)
	}

	// Resume posts from the parts already posted.
	a.Resume("m3", log, "long", 2, func(from int) (int, error) { froms = append(froms, from); return 1, nil })
	if !slices.Equal(froms, []int{0, 2}) {
		t.Fatalf("posted from %v", froms)
	}
	if !strings.Contains(logs.String(), "finishing a reply interrupted by a restart") {
		t.Errorf("no resume logged:\n%s", logs)
	}
	if n := a.Journal().Len(); n != 0 {
		t.Fatalf("%d messages left in the journal", n)
	}

	// So far the journal recorded every step: no failure of it is logged.
	for _, not := range []string{"could not be journaled", "could not be marked done"} {
		if strings.Contains(logs.String(), not) {
			t.Errorf("a journal that worked logged %q:\n%s", not, logs)
		}
	}

	// A journal that cannot record: the reply is posted anyway, and both
	// failures are logged.
	add(t, a.Journal(), msg("m4"))
	w.faults.set(func(f *faults) { f.write = errors.New("disk full") })
	posted := false
	a.Reply("m4", log, "hi", time.Now(), func(int) (int, error) { posted = true; return 1, nil })
	if !posted {
		t.Fatal("not posted when the journal failed")
	}
	for _, want := range []string{"the reply could not be journaled; posting it anyway",
		"the reply was posted but could not be marked done"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}
