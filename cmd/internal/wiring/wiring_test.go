package wiring

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// newMemory is the adapter over a store in a fresh folder, closed at the
// end of the test.
func newMemory(t *testing.T) (Memory, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := memory.Open(memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return Memory{Store: store}, dir
}

func TestAdapterErrors(t *testing.T) {
	m, dir := newMemory(t)
	if _, err := m.Index(mnemo.Scope{User: "../x"}); err == nil {
		t.Error("Index of a bad user name: no error")
	}
	if _, err := m.ReadTools(mnemo.Scope{User: "../x"}); err == nil {
		t.Error("ReadTools of a bad user name: no error")
	}
	if _, err := m.Prepare(mnemo.Scope{User: "../x"}, nil, 100, nil); err == nil {
		t.Error("Prepare of a bad user name: no error")
	}
	// A user "folder" that is a file cannot be listed or pre-loaded.
	if err := os.WriteFile(filepath.Join(dir, "bob"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Index(mnemo.Scope{User: "bob"}); err == nil {
		t.Error("Index of a user folder that is a file: no error")
	}
	if _, err := m.Prepare(mnemo.Scope{User: "bob"}, nil, 100, nil); err == nil {
		t.Error("Prepare of a user folder that is a file: no error")
	}
	// A scope's channel must be a channel's name: a person's is never
	// shown as a channel's memory.
	for _, ch := range []string{"alice", "#", "#a/b"} {
		if _, err := m.Index(mnemo.Scope{User: "ann", Channel: ch, Shared: true}); err == nil {
			t.Errorf("Index with the channel %q: no error", ch)
		}
	}
	// Files lists what is there, and says why it cannot.
	if err := os.MkdirAll(filepath.Join(dir, "ann", "facts"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ann", "facts", "a.md"), []byte("# A\n\n> Summary: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, files, err := Files(m.Store, "ann"); err != nil || u.Name() != "ann" || len(files) != 1 || files[0].Path != "facts/a.md" {
		t.Errorf("Files(ann) = %v, %+v, %v", u, files, err)
	}
	if _, _, err := Files(m.Store, "../x"); err == nil {
		t.Error("Files of a bad name: no error")
	}
}

func TestAdapterHappyPath(t *testing.T) {
	m, dir := newMemory(t)
	if idx, err := m.Index(mnemo.Scope{User: "alice"}); err != nil || idx != "Available memory: none yet." {
		t.Fatalf("Index of a new user = %q, %v", idx, err)
	}
	os.MkdirAll(filepath.Join(dir, "alice", "facts"), 0o700)
	os.WriteFile(filepath.Join(dir, "alice", "facts", "user.md"), []byte("# User\n\n> Summary: name\n\n- Name: Ada\n"), 0o600)
	if idx, _ := m.Index(mnemo.Scope{User: "alice"}); !strings.Contains(idx, "- facts/user.md (") {
		t.Errorf("Index = %q", idx)
	}
	if tools, err := m.ReadTools(mnemo.Scope{User: "alice"}); err != nil || len(tools) != 3 {
		t.Errorf("ReadTools = %d tools, %v", len(tools), err)
	}
	p, err := m.Prepare(mnemo.Scope{User: "alice"}, nil, 1000, nil)
	if err != nil || !strings.Contains(p.Facts, "- Name: Ada") || p.Episodes != "none yet" || len(p.Tools) != 6 {
		t.Errorf("Prepare = %+v, %v", p, err)
	}
	// The commit hook sees each change with the versions as Version
	// names them, before it is made.
	var commits []reflector.Commit
	p, err = m.Prepare(mnemo.Scope{User: "alice"}, nil, 1000, func(c reflector.Commit) error {
		now, _ := p.Version(c.Path)
		if now != c.Before {
			t.Errorf("at the hook %s is at %q, want %q", c.Path, now, c.Before)
		}
		commits = append(commits, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range p.Tools {
		if tool.Name == "memory_append" {
			if _, err := tool.Call(context.Background(), json.RawMessage(`{"path":"episodes/2026-03.md","entry":"## Met\n- Summary: met\n- Date: 2026-03-05\n"}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	after, err := p.Version("episodes/2026-03.md")
	if len(commits) != 1 || commits[0].Before != "" || commits[0].Kind != "create" || commits[0].After != after || err != nil || !strings.Contains(after, ":") {
		t.Errorf("commits %+v, version now %q, %v", commits, after, err)
	}
	if _, err := p.Version("../x"); err == nil {
		t.Error("Version of a bad path gave no error")
	}
}

func TestModelTransport(t *testing.T) {
	if got := ModelTransport(4).MaxIdleConnsPerHost; got != 16 {
		t.Errorf("4 tasks: %d idle connections per host", got)
	}
	if got := ModelTransport(64).MaxIdleConnsPerHost; got != 128 {
		t.Errorf("64 tasks: %d idle connections per host", got)
	}
}
