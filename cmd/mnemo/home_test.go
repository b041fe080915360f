package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/memory"
)

// Through `mnemo serve` and the fake Slack: the Home tab shows the
// person's memory when opened, is published again after a hand edit of
// their file and after a reflection writes one (within homeEvery), and its
// Share button shares the file on disk.
func TestServeSlackHomeTab(t *testing.T) {
	w := newChatWorld(t)
	w.env["MNEMO_REFLECTOR_MAX_TURNS"] = "1" // reflect after each message
	w.putMemory(t, "slack-T0TEAM-U0ADA/facts/food.md", foodFact)
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut, done := w.serveRun(ctx)
	if err := slk.WaitConnected(1, 10*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, errOut.String())
	}
	view := func(n int, want string) slacktest.View {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			vs, err := slk.WaitViews("U0ADA", n, time.Until(deadline))
			if err != nil {
				t.Fatalf("view %d with %q: %v\n%s", n, want, err, errOut.String())
			}
			if strings.Contains(string(vs[len(vs)-1].Blocks), want) {
				return vs[len(vs)-1]
			}
			n = len(vs) + 1
		}
	}
	slk.AppHomeOpened("U0ADA", "home")
	view(1, "Likes ramen")

	// A hand edit.
	if err := os.WriteFile(filepath.Join(w.dir, "data", "memory", "slack-T0TEAM-U0ADA", "facts", "food.md"), []byte(foodFact+"- Likes udon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := len(slk.Views("U0ADA"))
	view(n+1, "Likes udon")

	// A reflection.
	slk.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0ADA", Text: "Hello, I'm Ada Lovelace."})
	n = len(slk.Views("U0ADA"))
	v := view(n+1, "facts/user.md")

	// Share, from the tab.
	n = len(slk.Views("U0ADA"))
	slk.PressHome(slacktest.HomeAction{User: "U0ADA", View: v, ActionID: "mnemo_home_share", Value: "facts/food.md"})
	view(n+1, "is now shared with channels")
	if got := w.file(t, "slack-T0TEAM-U0ADA/facts/food.md"); !memory.IsShared(got) {
		t.Errorf("the file on disk is not shared: %q", got)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, errOut.String())
	}
}
