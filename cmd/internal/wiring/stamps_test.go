package wiring

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/reflector"
)

// reflectTurns runs the real reflector over turns (one batch per scope)
// with a model that answers with script, and waits for it to finish.
func reflectTurns(t *testing.T, m Memory, turns []mnemo.Turn, script ...llmtest.Reply) *llmtest.Script {
	t.Helper()
	model := llmtest.New(script...)
	clk := clocktest.New(time.Date(2026, 11, 5, 9, 0, 0, 0, time.UTC))
	r, err := reflector.Open(reflector.Config{Model: model, Memory: m, StateDir: t.TempDir(), Clock: clk, MaxTurns: len(turns)})
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range turns {
		if err := r.Add(turn); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if model.Pending() != 0 {
		t.Fatalf("the reflection did not run its script (%d replies left)", model.Pending())
	}
	return model
}

// A batch of two turns from two days: each fact the reflection writes is
// stamped with the day and link of the turn that said it, not both with
// the newest.
func TestBatchStampsEachLineWithTheTurnThatSaidIt(t *testing.T) {
	m, dir := newMemory(t)
	day1, day3 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 18, 0, 0, 0, time.UTC)
	turns := []mnemo.Turn{
		{TaskID: "t1", User: "ada", Platform: "slack", Speaker: "Ada", UserText: "I moved to Lyon last month", ReplyText: "Nice!", Time: day1,
			Origin: mnemo.Origin{Place: "dm", Link: "https://acme.slack.com/archives/D0ADA/p1"}},
		{TaskID: "t2", User: "ada", Platform: "discord", Speaker: "Ada", UserText: "Green tea is all I drink", ReplyText: "Noted.", Time: day3,
			Origin: mnemo.Origin{Place: "dm", Link: "https://discord.com/channels/@me/1/2"}},
	}
	reflectTurns(t, m, turns, llmtest.Calls(call("w", "memory_write", map[string]string{"path": "facts/user.md",
		"content": "# User\n\n> Summary: home, drink\n\n- Drinks: green tea\n- Lives in: Lyon\n"})), llmtest.Text("saved"))
	got, err := os.ReadFile(filepath.Join(dir, "ada", "facts", "user.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# User\n\n> Summary: home, drink\n\n" +
		"- Drinks: green tea <!-- src: discord · dm · 2026-11-03 · https://discord.com/channels/@me/1/2 -->\n" +
		"- Lives in: Lyon <!-- src: slack · dm · 2026-11-01 · https://acme.slack.com/archives/D0ADA/p1 -->\n"
	if string(got) != want {
		t.Errorf("facts/user.md:\n%s\nwant:\n%s", got, want)
	}
}

// A person's DM and channel turns are reflected apart: a line the
// channel's reflection writes is never stamped with the DM, even when it
// repeats the DM's words; the channel's memory names who said it.
func TestDMSourceNeverReachesAChannel(t *testing.T) {
	m, dir := newMemory(t)
	dm := mnemo.Turn{TaskID: "t1", User: "ana", Platform: "slack", Speaker: "Ana", UserText: "I live in Lyon, keep it between us", ReplyText: "ok",
		Time: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), Origin: mnemo.Origin{Place: "dm", Link: "https://acme.slack.com/archives/D0ANA/p1"}}
	ch := mnemo.Turn{TaskID: "t2", User: "ana", Platform: "slack", Speaker: "Ana", UserText: "We deploy on Fridays", ReplyText: "ok",
		Time: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), Channel: true, ChannelKey: "#slack-T1-C1",
		Origin: mnemo.Origin{Place: "#C1", Link: "https://acme.slack.com/archives/C1/p2"}}
	model := reflectTurns(t, m, []mnemo.Turn{dm, ch},
		llmtest.Calls(call("w", "memory_write", map[string]string{"path": "facts/user.md", "content": "# User\n\n> Summary: home\n\n- Lives in: Lyon\n"})),
		llmtest.Text("saved"),
		llmtest.Calls(call("w", "memory_write", map[string]string{"path": "channel/facts/team.md",
			"content": "# Team\n\n> Summary: team\n\n- Deploys: Fridays\n- Ana lives in: Lyon\n"})),
		llmtest.Text("saved"))
	got, err := os.ReadFile(filepath.Join(dir, "#slack-T1-C1", "facts", "team.md"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := " <!-- src: slack · #C1 · 2026-11-02 · by Ana · https://acme.slack.com/archives/C1/p2 -->\n"
	if want := "- Deploys: Fridays" + stamp + "- Ana lives in: Lyon" + stamp; !strings.Contains(string(got), want) {
		t.Errorf("channel file:\n%s\nwant the lines:\n%s", got, want)
	}
	if strings.Contains(string(got), "D0ANA") || strings.Contains(string(got), "· dm ·") {
		t.Errorf("the channel's memory names the DM:\n%s", got)
	}
	if own, err := os.ReadFile(filepath.Join(dir, "ana", "facts", "user.md")); err != nil || !strings.Contains(string(own), "- Lives in: Lyon <!-- src: slack · dm · 2026-11-01 · https://acme.slack.com/archives/D0ANA/p1 -->") {
		t.Errorf("the DM's fact: %v\n%s", err, own)
	}
	for _, req := range model.Requests() {
		for _, msg := range req.Messages {
			if msg.Role != llm.RoleUser || !strings.Contains(msg.Content, "We deploy") {
				continue
			}
			if strings.Contains(msg.Content, "keep it between us") || strings.Contains(msg.Content, "D0ANA") {
				t.Errorf("the channel's reflection was shown the DM:\n%s", msg.Content)
			}
		}
	}
}
