package memory

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newStore(t testing.TB, mod ...func(*Options)) *Store {
	t.Helper()
	opts := Options{Dir: filepath.Join(t.TempDir(), "memory"), EditWait: 100 * time.Millisecond, Watch: true, Clean: true,
		watched: watchLog.add}
	for _, m := range mod {
		m(&opts)
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustUser(t testing.TB, s *Store, name string) *User {
	t.Helper()
	u, err := s.User(name)
	if err != nil {
		t.Fatalf("User(%q): %v", name, err)
	}
	return u
}

// aliceWithUserFact opens a store in which a person has written alice's
// facts/user.md by hand; it returns the store, alice and that file's path.
func aliceWithUserFact(t testing.TB, mod ...func(*Options)) (*Store, *User, string) {
	t.Helper()
	s := newStore(t, mod...)
	u := mustUser(t, s, "alice")
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	writeFile(t, path, userFact)
	return s, u, path
}

// writeFile writes a file the way a person with a shell would, as mnemo's
// user and with the modes mnemo keeps (0700 folders, 0600 files), so that
// only the problem a test makes is reported (loose modes: modes_test.go).
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// watchEvents records the events the watchers of newStore's stores
// handled, and wakes the tests waiting for one.
type watchEvents struct {
	mu      sync.Mutex
	names   map[string]bool
	changed chan struct{}
}

// watchLog is every newStore store's: events of other tests only wake a
// waiter early, and it checks again.
var watchLog = &watchEvents{names: map[string]bool{}, changed: make(chan struct{})}

func (w *watchEvents) add(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.names[name] = true
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *watchEvents) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// seen reports whether an event on name was handled.
func (w *watchEvents) seen(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.names[name]
}

// eventually waits until cond holds, checking it again each time a
// watcher handled an event: file events arrive asynchronously,
// microseconds to milliseconds after an edit.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		changed := watchLog.next()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func listPaths(t testing.TB, u *User) string {
	t.Helper()
	files, err := u.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var b []string
	for _, f := range files {
		b = append(b, f.Path+"="+f.Summary)
	}
	return strings.Join(b, ";")
}

const userFact = "# User Facts\n\n> Summary: user name, language\n\n- Name: Zhang San\n- Language: Chinese\n"
