package agent

import (
	"testing"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// Reply.Tokens is the prompt and completion tokens of every model call of
// the task, as the server reported them: what the budgets charge.
func TestHandleTokens(t *testing.T) {
	read := openaitest.ToolCalls(openaitest.Call("memory_list", `{}`))
	tests := []struct {
		name    string
		steps   int // agent.maxSteps; 0: default
		history bool
		replies []openaitest.Reply
		want    int
		failed  bool
	}{
		{"one answer", 0, false, []openaitest.Reply{openaitest.Text("hi").WithUsage(100, 7)}, 107, false},
		{"a tool call, then the answer", 0, false,
			[]openaitest.Reply{read.WithUsage(10, 1), openaitest.Text("hi").WithUsage(30, 5)}, 46, false},
		{"the step cap's final call counts", 1, false,
			[]openaitest.Reply{read.WithUsage(10, 1), openaitest.Text("hi").WithUsage(20, 2)}, 33, false},
		{"a failed task still pays for the calls made", 0, false,
			[]openaitest.Reply{read.WithUsage(10, 1), openaitest.Error(500, "server_error", "down")}, 11, true},
		{"the retry without history adds to the first try", 0, true,
			[]openaitest.Reply{read.WithUsage(10, 1), openaitest.Error(400, "context_length_exceeded", "too long"),
				openaitest.Text("fresh").WithUsage(20, 2)}, 33, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, srv := agentFixture(t, &fakeMemory{}, func(c *Config) { c.MaxSteps = tt.steps })
			if tt.history {
				srv.Enqueue(openaitest.Text("earlier").WithUsage(1000, 1000))
				mustHandle(t, a, dmTask("earlier"))
			}
			srv.Enqueue(tt.replies...)
			r := mustHandle(t, a, dmTask("hello"))
			if r.Tokens != tt.want || r.Failed != tt.failed {
				t.Errorf("Tokens %d, Failed %v; want %d, %v (%+v)", r.Tokens, r.Failed, tt.want, tt.failed, r)
			}
		})
	}
}
