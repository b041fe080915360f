package app

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/memory"
)

const (
	foodFact      = "# Food\n\n> Summary: food likes\n\n- Likes ramen\n"
	decisionsFact = "# Decisions\n\n> Summary: team decisions\n\n- We ship on Fridays\n"
)

// Show marks each of a person's files private or shared, and in a
// channel shows the channel's memory after them; SetShared flips one of
// the person's own files through the store, which the history keeps under
// their name and the metrics count; a missing file is fs.ErrNotExist; a
// channel's memory is no person's to show or change this way.
func TestAppShowAndSetShared(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", foodFact)
	w.putMemory(t, "ann/facts/work.shared.md", "# Work\n\n> Summary: works on mnemo\n> Visibility: shared\n\n- Writes Go\n")
	w.putMemory(t, "#slack-T0TEAM-C0CHAN/facts/decisions.md", decisionsFact)
	// Folders that are files: their memory cannot be read.
	w.putMemory(t, "broken", "not a folder")
	w.putMemory(t, "#slack-T0TEAM-CBROKEN", "not a folder")
	a := w.open(t, "")

	out, err := a.Show("ann", "")
	for _, want := range []string{
		"What I remember about you (2 files; I use [private] ones only when we talk in private, [shared] ones in channels too):\n",
		"\n- [private] facts/food.md (", "- Likes ramen\n", "\n- [shared] facts/work.shared.md (", "/memory share <path>", "/memory private <path>", "/memory forget all",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("Show(ann) lacks %q: %q, %v", want, out, err)
		}
	}
	if strings.Contains(out, "channel") && !strings.Contains(out, "in channels") {
		t.Errorf("Show in a DM shows a channel: %q", out)
	}
	out, err = a.Show("ann", "#slack-T0TEAM-C0CHAN")
	if err != nil || !strings.Contains(out, "[private] facts/food.md") ||
		!strings.Contains(out, "/memory forget all.\n\nWhat I remember about this channel (1 file, used with everyone who talks to me here):\n\n- facts/decisions.md (") ||
		!strings.Contains(out, "- We ship on Fridays") {
		t.Errorf("Show(ann, channel) = %q, %v", out, err)
	}
	out, err = a.Show("nobody", "#slack-T0TEAM-C0EMPTY")
	if err != nil || out != "I don't remember anything about you yet.\n\nI don't remember anything about this channel yet." {
		t.Errorf("Show(nobody, empty channel) = %q, %v", out, err)
	}
	out, err = a.Show("nobody", "#slack-T0TEAM-C0CHAN")
	if err != nil || !strings.HasPrefix(out, "I don't remember anything about you yet.\n\nWhat I remember about this channel (1 file") || strings.Contains(out, "/memory share") {
		t.Errorf("Show(nobody, channel) = %q, %v", out, err)
	}
	for _, c := range [][2]string{{"#slack-T0TEAM-C0CHAN", ""}, {"ann", "C0CHAN"}, {"ann", "#../x"}, {"broken", ""}, {"ann", "#slack-T0TEAM-CBROKEN"}} {
		if out, err := a.Show(c[0], c[1]); err == nil {
			t.Errorf("Show(%q, %q) = %q; want an error", c[0], c[1], out)
		}
	}

	changed, err := a.SetShared("ann", "facts/food.md", true)
	if !changed || err != nil || !strings.Contains(w.file(t, "ann/facts/food.md"), "> Visibility: shared") {
		t.Fatalf("share: %v, %v, %q", changed, err, w.file(t, "ann/facts/food.md"))
	}
	if out, _ := a.Show("ann", ""); !strings.Contains(out, "[shared] facts/food.md") {
		t.Errorf("after share: %q", out)
	}
	if changed, err := a.SetShared("ann", "facts/food.md", true); changed || err != nil {
		t.Errorf("share again: %v, %v", changed, err)
	}
	changed, err = a.SetShared("ann", "facts/food.md", false)
	if got := w.file(t, "ann/facts/food.md"); !changed || err != nil || memory.IsShared(got) || !strings.Contains(got, "- Likes ramen") {
		t.Errorf("private: %v, %v, %q", changed, err, got)
	}
	vs, err := a.hist.List("ann", "facts/food.md")
	if err != nil || len(vs) < 3 || vs[0].Who != "ann (/memory private)" || vs[1].Who != "ann (/memory share)" {
		t.Errorf("history %+v, %v", vs, err)
	}
	rec := httptest.NewRecorder()
	a.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\nmnemo_memory_writes_total{op=\"write\",outcome=\"ok\"} 2\n") {
		t.Errorf("metrics:\n%s", rec.Body.String())
	}

	for _, c := range []struct{ user, path string }{{"ann", "facts/nope.md"}, {"nobody", "facts/food.md"}} {
		if changed, err := a.SetShared(c.user, c.path, true); changed || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("SetShared(%s, %s) = %v, %v; want fs.ErrNotExist", c.user, c.path, changed, err)
		}
	}
	for _, c := range []struct{ user, path string }{{"ann", "../bob/facts/food.md"}, {"../x", "facts/food.md"}, {"#slack-T0TEAM-C0CHAN", "facts/decisions.md"}} {
		if changed, err := a.SetShared(c.user, c.path, true); changed || err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("SetShared(%s, %s) = %v, %v; want a refusal", c.user, c.path, changed, err)
		}
	}
	if memory.IsShared(w.file(t, "#slack-T0TEAM-C0CHAN/facts/decisions.md")) {
		t.Error("a channel's file was changed")
	}
}

// A change whose author was noted is kept under their name only when it is
// the very change noted: a note left by a failed write names nobody.
func TestChangeAuthor(t *testing.T) {
	l := &changeLog{}
	v := memory.Version{Exists: true, Size: 3}
	l.author(memory.Commit{User: "ann", Path: "facts/a.md", After: v}, "ann (/memory share)")
	if who := l.authorOf(memory.Commit{User: "ann", Path: "facts/a.md", After: memory.Version{Exists: true, Size: 4}}); who != "reflector" {
		t.Errorf("another change: %q", who)
	}
	l.author(memory.Commit{User: "ann", Path: "facts/a.md", After: v}, "ann (/memory share)")
	if who := l.authorOf(memory.Commit{User: "bob", Path: "facts/a.md", After: v}); who != "reflector" {
		t.Errorf("someone else's file: %q", who)
	}
	if who := l.authorOf(memory.Commit{User: "ann", Path: "facts/a.md", After: v}); who != "ann (/memory share)" {
		t.Errorf("the change noted: %q", who)
	}
	if who := l.authorOf(memory.Commit{User: "ann", Path: "facts/a.md", After: v}); who != "reflector" {
		t.Errorf("a note is used once: %q", who)
	}
}

// Show, CheckPath and the chat platforms' Forget: a missing file or
// folder is the one "nothing to forget" answer, wrapping fs.ErrNotExist.
func TestMemoryShowAndForget(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "zhangsan/facts/user.md", "# Zhang San\n> Summary: who he is\n\n- Name: Zhang San\n")
	a := w.open(t, "")
	p := a.Platform()
	out, err := a.Show("zhangsan", "")
	if err != nil || !strings.Contains(out, "- [private] facts/user.md (") || !strings.Contains(out, "- Name: Zhang San") || !strings.Contains(out, "/memory forget all") {
		t.Fatalf("Show = %q, %v", out, err)
	}
	if out, _ := a.Show("nobody", ""); !strings.Contains(out, "don't remember anything") {
		t.Errorf("Show of a new user = %q", out)
	}
	if _, err := a.Show("../x", ""); err == nil {
		t.Error("Show accepted a bad user")
	}
	if a.CheckPath("facts/user.md") != nil || a.CheckPath("../bob/facts/user.md") == nil {
		t.Error("CheckPath does not apply the memory path grammar")
	}
	if err := p.Forget("zhangsan", "facts/nope.md"); !errors.Is(err, fs.ErrNotExist) || err.Error() != "There was nothing to forget: I have no file facts/nope.md about you." {
		t.Errorf("forgetting a missing file = %v", err)
	}
	if err := p.Forget("zhangsan", "facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if out, _ := a.Show("zhangsan", ""); !strings.Contains(out, "don't remember anything") {
		t.Errorf("after forget: %q", out)
	}
	if err := p.Forget("zhangsan", ""); err != nil {
		t.Errorf("forget all = %v", err)
	}
	if err := p.Forget("zhangsan", ""); !errors.Is(err, fs.ErrNotExist) || err.Error() != "There was nothing to forget: I don't remember anything about you." {
		t.Errorf("forget all with no memory folder = %v; want the nothing-to-forget answer", err)
	}
	if err := p.Forget("../x", ""); err == nil {
		t.Error("Forget accepted a bad user")
	}
}

func TestAccessControlAndGateErrors(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load("", false, func(k string) string {
		return map[string]string{"MNEMO_DATA_DIR": filepath.Join(dir, "memory")}[k]
	}, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	a := &App{cfg: cfg, log: log, now: time.Now, metrics: metrics.New(metrics.Gauges{})}
	for _, c := range []struct {
		req  control.Request
		want string
	}{
		{control.Request{Op: OpAccess, Path: "ls"}, `unknown access operation "ls"`},
		{control.Request{Op: OpAccess, Path: "drop"}, `unknown access operation "drop"`},
		{control.Request{Op: OpAccess, Path: "allow", Arg: "slack:x"}, "is not a Slack id"},
		{control.Request{Op: "reboot"}, `unknown control operation "reboot"`},
	} {
		if _, err := a.Control(context.Background(), c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.req, err)
		}
	}
	if msg, err := a.Control(context.Background(), control.Request{Op: OpAccess, Path: "allow", Arg: "slack:U1"}); err != nil || msg != "allowed slack:U1" {
		t.Fatalf("allow: %q, %v", msg, err)
	}

	cfg.Section("discord").(*discord.Section).Allow = []string{"nope"}
	if _, err := a.AccessGate(platform.Platform{Name: "discord"}); !errors.As(err, new(*ConfigError)) || !strings.Contains(err.Error(), "discord.allow[0]") {
		t.Errorf("accessGate with a bad list: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "state", "access.json"), []byte("["), 0o600)
	b := &App{cfg: cfg, log: log, now: time.Now, metrics: metrics.New(metrics.Gauges{})}
	if _, err := b.AccessGate(platform.Platform{Name: "slack", Access: platform.Access{HomeOnly: true}}); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Errorf("accessGate with a damaged file: %v", err)
	}
	if _, err := b.Control(context.Background(), control.Request{Op: OpAccess, Path: "revoke", Arg: "slack:U1"}); err == nil {
		t.Error("control with a damaged file")
	}
}

func userdataRequest(owner string) userdata.Request { return userdata.Request{Owner: owner} }
