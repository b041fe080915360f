package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/logtest"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// A state folder mnemo cannot use stops Open with a message that names
// the folder and the fix, and leaves nothing open behind (goleak checks
// the watcher; a second Open once it is fixed succeeds).
func TestOpenRefusesAStateFolderItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block string // made a file where a folder must be, under the world's dir
		want  []string
	}{
		{"state folder", "data/state", []string{"state folder", "set state.dir elsewhere"}},
		{"reflection journal", "data/state/reflector", []string{"reflection journal: ", "it is kept in ", "reflector: make that a folder mnemo may write, or set state.dir"}},
		{"index cache", "data/state/index", []string{"memory index cache: ", "it is kept in ", "index: make that a folder mnemo may write, or set state.dir"}},
		{"history", "data/state/history", []string{"history: ", "the history is kept in", "make that a folder mnemo may write, or set state.dir"}},
		{"memory folder", "data/memory", []string{"memory: create data folder ", "data/memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := filepath.Join(w.dir, tc.block)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("not a folder"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), Options{Config: w.config(t, ""), Logger: w.log()})
			if err == nil {
				t.Fatal("Open succeeded over a file where a folder must be")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open: %v\nwant it to say %q", err, want)
				}
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			w.open(t, "") // fixed: it opens (what failed was let go)
		})
	}
}

// A state folder others could read is made private at start, and the log
// says so once, with the mode it had.
func TestOpenStateTightens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // past the umask
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st, err := OpenState(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state folder mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if got := logs.String(); !strings.Contains(got, "the state folder was open to other users; made it private") || !strings.Contains(got, "was=-rwxr-xr-x") {
		t.Errorf("log: %s", got)
	}
	logs.Reset()
	st, err = OpenState(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if logs.Len() != 0 {
		t.Errorf("a private folder was logged: %s", logs.String())
	}
}

// A turn the reflection journal cannot take (a full or read-only disk) is
// answered all the same, logged, and reported at the end by SaveError:
// the person is told it will not be remembered.
func TestSaveErrorNamesTurnsNotJournaled(t *testing.T) {
	w := newWorld(t)
	var full bool // the disk is full: the journal's writes fail
	var logs logtest.Buffer
	a, err := Open(context.Background(), Options{Config: w.config(t, ""), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Faults: func(op, name string) error {
			if full && op == durable.Write {
				return errors.New("no space left on device")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	full = true
	r, err := a.ConsoleHandler().Handle(context.Background(), mnemo.Task{ID: "t1", User: "ann", Platform: "console", Text: "hi"})
	if err != nil || r.Failed || r.Text == "" {
		t.Fatalf("the reply: %+v, %v", r, err)
	}
	err = a.SaveError()
	if err == nil || !strings.Contains(err.Error(), "1 turn(s) could not be saved to the reflection journal in "+a.cfg.State.Dir+" and will not be remembered") {
		t.Errorf("SaveError = %v", err)
	}
	if !strings.Contains(logs.String(), "reflector: could not journal the turn; it will not be reflected") {
		t.Errorf("not logged: %s", logs.String())
	}
}

// The control socket cannot be served (its path is taken by a folder):
// the error says what needs it.
func TestListenControlFails(t *testing.T) {
	w := newWorld(t)
	a := w.open(t, "")
	if err := os.Mkdir(ControlSocket(a.cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ControlSocket(a.cfg), "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := a.ListenControl()
	if err == nil {
		s.Close(context.Background())
		t.Fatal("served over a folder")
	}
	if !strings.Contains(err.Error(), "(mnemo memory forget and a second mnemo chat use it to reach the running process)") {
		t.Errorf("ListenControl: %v", err)
	}
}

// mnemo access approve through a running process: a waiting code lets
// the person in (and says who), and the log says it was changed; an
// expired code says to ask for a new one and is dropped.
func TestAccessApprove(t *testing.T) {
	w := newWorld(t)
	var logs logtest.Buffer
	a, err := Open(context.Background(), Options{Config: w.config(t, ""), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	store, err := a.AccessStore()
	if err != nil {
		t.Fatal(err)
	}
	issue := func(id string) string {
		t.Helper()
		_, person, err := access.ParseID("slack:" + id)
		if err != nil {
			t.Fatal(err)
		}
		p, err := store.Issue("slack", person, "D1", now)
		if err != nil {
			t.Fatal(err)
		}
		return p.Code
	}
	code := issue("U0ANA")
	msg, err := a.Control(context.Background(), control.Request{Op: OpAccess, Path: "approve", Arg: strings.ToLower(code)})
	if err != nil || msg != "approved "+code+": slack:U0ANA may talk to mnemo now" {
		t.Errorf("approve: %q, %v", msg, err)
	}
	if !strings.Contains(logs.String(), "access: changed by mnemo access") || !strings.Contains(logs.String(), "op=approve") {
		t.Errorf("log: %s", logs.String())
	}
	if e := store.Entries("slack"); len(e) != 1 || e[0].String() != "U0ANA" {
		t.Errorf("allowed after approve: %v", e)
	}
	old := issue("U0BOB")
	now = now.Add(access.CodeTTL + time.Minute)
	_, err = a.Control(context.Background(), control.Request{Op: OpAccess, Path: "approve", Arg: old})
	if !errors.Is(err, access.ErrExpired) || !strings.Contains(err.Error(), "pairing code "+old+": ") ||
		!strings.Contains(err.Error(), "ask the person to write to the bot again for a new one") {
		t.Errorf("approve of an expired code: %v", err)
	}
	if _, codes := store.List(now.Add(-time.Hour)); len(codes) != 0 {
		t.Errorf("the expired code is still waiting: %+v", codes)
	}
}

// An open platform's gate says once, at start, that anyone may talk (the
// platform's own note).
func TestAccessGateOpenNote(t *testing.T) {
	w := newWorld(t)
	var logs logtest.Buffer
	a, err := Open(context.Background(), Options{Config: w.config(t, "discord:\n  access: open\n"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.AccessGate(platform.Platform{Name: "discord", Access: platform.Access{OpenNote: "discord: anyone who can message the bot may talk to it"}}); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); !strings.Contains(got, "discord: anyone who can message the bot may talk to it") || !strings.Contains(got, "adapter=discord") {
		t.Errorf("log: %s", got)
	}
}
