package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// call is a scripted tool call with its arguments as JSON.
func call(id, name string, args any) llm.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return llm.ToolCall{ID: id, Name: name, Arguments: string(b)}
}

type patchArgs struct {
	Path    string         `json:"path"`
	Patches []memory.Patch `json:"patches"`
}

// TestTenConversations measures issue 35's "no duplicates" and "facts
// that change keep their past" through the real reflector and store, with
// a scripted model that writes as carelessly as a model may: ten
// conversations on ten days in Slack DMs, in which one fact ("Drinks:
// green tea") is told again and again — written by the model as a second
// line, as a confirmation, as a whole file that repeats it — and one
// changes on day 6 ("Lives in: Lyon" → "Berlin"); the same episode is
// appended twice. After them: one line for the recurring fact, stamped
// with day 10's message; Berlin current, stamped day 6, and Lyon under
// "## Earlier" until day 6 with its day-1 stamp; one episode entry.
func TestTenConversations(t *testing.T) {
	m, dir := newMemory(t)
	state := t.TempDir()
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	clk := clocktest.New(start)
	const file = "facts/user.md"
	dayOf := func(i int) time.Time { return start.AddDate(0, 0, i-1) }
	link := func(i int) string { return fmt.Sprintf("https://acme.slack.com/archives/D0ADA/p17000000%02d000100", i) }
	episode := "## Set up the CI cache\n- Summary: CI cache keyed on go.sum\n- Date: 2026-11-03\n- Solution: key from go.sum"
	for i := 1; i <= 10; i++ {
		var calls []llm.ToolCall
		switch {
		case i == 1:
			calls = []llm.ToolCall{call("w", "memory_write", map[string]string{"path": file,
				"content": "# User\n\n> Summary: drink, home\n\n- Drinks: green tea\n- Lives in: Lyon\n"})}
		case i == 6:
			calls = []llm.ToolCall{call("p", "memory_patch", patchArgs{file, []memory.Patch{{OldText: "- Lives in: Lyon", NewText: "- Lives in: Berlin"}}})}
		case i == 3 || i == 4:
			calls = []llm.ToolCall{call("a", "memory_append", map[string]string{"path": "episodes/2026-11.md", "entry": episode})}
		case i == 9:
			calls = []llm.ToolCall{call("w", "memory_write", map[string]string{"path": file,
				"content": "# User\n\n> Summary: drink, home\n\n- Drinks: green tea\n- Lives in: Berlin\n- Drinks: green tea\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-06)\n"})}
		case i%2 == 0:
			calls = []llm.ToolCall{call("p", "memory_patch", patchArgs{file, []memory.Patch{{OldText: "> Summary: drink, home", NewText: "> Summary: drink, home\n\n- drinks: Green tea."}}})}
		default:
			calls = []llm.ToolCall{call("p", "memory_patch", patchArgs{file, []memory.Patch{{OldText: "- Drinks: green tea", NewText: "- Drinks: green tea"}}})}
		}
		model := llmtest.New(llmtest.Calls(calls...), llmtest.Text("saved"))
		clk.Advance(dayOf(i).Sub(clk.Now()))
		r, err := reflector.Open(reflector.Config{Model: model, Memory: m, StateDir: state, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Add(mnemo.Turn{TaskID: fmt.Sprint("t", i), User: "slack-T0-U0ADA", Platform: "slack", Speaker: "Ada",
			UserText: "I drink green tea; I live in Lyon", ReplyText: "noted", Time: dayOf(i),
			Origin: mnemo.Origin{Place: "dm", Link: link(i)}}); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatalf("conversation %d: %v", i, err)
		}
		if model.Pending() != 0 {
			t.Fatalf("conversation %d: the reflection did not run its script (%d replies left)", i, model.Pending())
		}
		for _, req := range model.Requests() {
			for _, msg := range req.Messages {
				if strings.Contains(msg.Content, "src:") {
					t.Fatalf("conversation %d: the model was shown a stamp:\n%s", i, msg.Content)
				}
			}
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "slack-T0-U0ADA", file))
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(i int) string {
		return "<!-- src: slack · dm · " + dayOf(i).Format(time.DateOnly) + " · " + link(i) + " -->"
	}
	want := "# User\n\n> Summary: drink, home\n\n- Drinks: green tea " + stamp(10) + "\n- Lives in: Berlin " + stamp(6) +
		"\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-06) " + stamp(1) + "\n"
	if string(got) != want {
		t.Errorf("after ten conversations %s is:\n%s\nwant:\n%s", file, got, want)
	}
	eps, err := os.ReadFile(filepath.Join(dir, "slack-T0-U0ADA", "episodes", "2026-11.md"))
	if err != nil || strings.Count(string(eps), "## Set up the CI cache") != 1 || !strings.Contains(string(eps), "## Set up the CI cache "+stamp(4)+"\n") {
		t.Errorf("the episode told twice: %v\n%s", err, eps)
	}
}
