package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
)

// watchAdapter is a running platform that wants to know whose memory
// changed (as Slack's App Home does).
type watchAdapter struct{ changed chan string }

func (watchAdapter) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (watchAdapter) Ready() bool                   { return true }
func (watchAdapter) Forget(string) int             { return 0 }
func (w watchAdapter) MemoryChanged(user string)   { w.changed <- user }

// next waits for the next user told, skipping others'.
func (w watchAdapter) next(t *testing.T, user, after string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-w.changed:
			if got == user {
				return
			}
		case <-timeout:
			t.Fatalf("not told that %s's memory changed after %s", user, after)
		}
	}
}

// Home is a person's own files (facts with their first lines, no
// title, summary or stamps; never a channel's) and newest entries;
// SearchHome searches their own memory.
func TestHome(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", "# Food\n\n> Summary: food likes\n> Visibility: shared\n\n- Likes ramen <!-- src: slack DM · 2026-02-01 -->\n- a\n- b\n- c\n- d\n- e\n")
	w.putMemory(t, "ann/episodes/2026-02.md", "# February\n\n> Summary: logger fix\n\n## Logger fix\n- Summary: short IDs\n- Date: 2026-02-14\n\n## Older\n- Summary: old\n- Date: 2026-02-01\n")
	w.putMemory(t, "#slack-T0TEAM-C0CHAN/facts/decisions.md", decisionsFact)
	a := w.open(t, "")
	h, err := a.Memory.Home("ann")
	if err != nil || len(h.Files) != 2 {
		t.Fatalf("Home: %+v, %v", h, err)
	}
	food := h.Files[0]
	if food.Path != "facts/food.md" || !food.Fact || !food.Shared || food.Summary != "food likes" || food.MoreLines != 1 ||
		strings.Join(food.Lines, "|") != "- Likes ramen|- a|- b|- c|- d" {
		t.Errorf("food: %+v", food)
	}
	if ep := h.Files[1]; ep.Fact || ep.Shared || len(ep.Lines) != 0 {
		t.Errorf("episodes: %+v", ep)
	}
	if len(h.Entries) != 2 || h.Entries[0].Title != "Logger fix" || h.Entries[0].Date != "2026-02-14" || h.Entries[1].Title != "Older" {
		t.Errorf("entries: %+v", h.Entries)
	}
	if fmt.Sprint(h) != fmt.Sprint(mustHome(t, a, "ann")) || strings.Contains(fmt.Sprint(h), "decisions") {
		t.Errorf("home %+v", h)
	}
	hits, err := a.Memory.SearchHome("ann", "ramen", 5)
	if err != nil || len(hits) != 1 || hits[0].Path != "facts/food.md" || strings.Contains(hits[0].Text, "src:") {
		t.Errorf("search: %+v, %v", hits, err)
	}
	for _, user := range []string{"#slack-T0TEAM-C0CHAN", "../bob"} {
		if _, err := a.Memory.Home(user); err == nil {
			t.Errorf("Home(%q) answered", user)
		}
		if _, err := a.Memory.SearchHome(user, "x", 1); err == nil {
			t.Errorf("SearchHome(%q) answered", user)
		}
	}
	if h, err := a.Memory.Home("nobody"); err != nil || len(h.Files) != 0 {
		t.Errorf("nobody: %+v, %v", h, err)
	}
}

func mustHome(t *testing.T, a *App, user string) platform.Home {
	t.Helper()
	h, err := a.Memory.Home(user)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The running adapters that watch memory are told whose memory changed:
// after a hand edit (the watcher), a write of the store (a reflection's),
// a /memory share and a forget of everything.
func TestMemoryChangedIsTold(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", foodFact)
	a := w.open(t, "")
	wa := watchAdapter{changed: make(chan string, 100)}
	a.UseAdapters([]Adapter{{Name: "test", Adapter: wa}})
	mustHome(t, a, "ann") // the tab read it: the store watches ann's folder

	if err := os.WriteFile(filepath.Join(w.dir, "data", "memory", "ann", "facts", "food.md"), []byte(foodFact+"- Likes udon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wa.next(t, "ann", "a hand edit")
	u, err := a.core.Store.User("ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write("facts/work.md", "# Work\n\n> Summary: work\n\n- Writes Go\n", nil, nil); err != nil {
		t.Fatal(err)
	}
	wa.next(t, "ann", "a reflection's write")
	if _, err := a.Memory.SetShared("ann", "facts/work.md", true); err != nil {
		t.Fatal(err)
	}
	wa.next(t, "ann", "a share")
	if _, err := a.Memory.Forget(context.Background(), userdata.Request{Owner: "ann"}); err != nil {
		t.Fatal(err)
	}
	wa.next(t, "ann", "a forget")
	// Adapters handed over again: the old list is dropped.
	a.UseAdapters(nil)
	a.changes.watchers.tell("ann")
	select {
	case u := <-wa.changed:
		if u != "ann" {
			t.Errorf("told %q", u)
		}
	default:
	}
}
