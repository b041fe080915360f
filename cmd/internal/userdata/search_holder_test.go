package userdata

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemo-agent/mnemo/memory"
)

// A forget leaves nothing to find: the person's entries are gone from
// the running store's search index at once — the whole memory, or one
// file — and another person's are still found. With the folder already
// gone (deleted by hand, no watcher to tell), the forget still empties
// the index it held.
func TestForgetLeavesNothingToSearch(t *testing.T) {
	dir := t.TempDir()
	store, err := memory.Open(memory.Options{Dir: filepath.Join(dir, "memory")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, p := range []string{"alice", "bob"} {
		for rel, text := range map[string]string{"facts/pets.md": "# Pets\n\n- a cat called Miso\n", "facts/car.md": "# Car\n\n- a red Fiat\n"} {
			path := filepath.Join(dir, "memory", p, rel)
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	svc := New(Wiring{StateDir: filepath.Join(dir, "state"), Store: store}, nil)
	hits := func(owner, q string) int {
		t.Helper()
		f, err := store.Search(owner, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(f.Hits)
	}
	if hits("alice", "Miso Fiat") != 2 || hits("bob", "Miso Fiat") != 2 {
		t.Fatal("the memories are not found before the forget")
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "facts/pets.md"}); err != nil {
		t.Fatal(err)
	}
	if hits("alice", "Miso") != 0 || hits("alice", "Fiat") != 1 {
		t.Error("a forgotten file is still found, or the other file is not")
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	if hits("alice", "Miso Fiat") != 0 || hits("bob", "Miso Fiat") != 2 {
		t.Error("after alice's forget: hers found, or bob's not")
	}
	hits("bob", "Miso") // bob's index made
	if err := os.RemoveAll(filepath.Join(dir, "memory", "bob")); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: "bob"}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("forget of a folder deleted by hand: %v", err)
	}
	if hits("bob", "Miso Fiat") != 0 {
		t.Error("bob's entries are found after his forget")
	}
}
