package app

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/cmd/internal/metrics"
	"github.com/mnemo-agent/mnemo/memory"
)

type stubModel struct {
	resp llm.Response
	err  error
}

func (s stubModel) Complete(context.Context, llm.Request) (llm.Response, error) { return s.resp, s.err }

type stubHandler struct {
	err   error
	reply mnemo.Reply // "hi" when empty
}

func (s stubHandler) Handle(context.Context, mnemo.Task) (mnemo.Reply, error) {
	if s.reply.Text == "" {
		return mnemo.Reply{Text: "hi"}, s.err
	}
	return s.reply, s.err
}

func scrapeText(m *metrics.Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestMeasuredDecorators(t *testing.T) {
	m := metrics.New(metrics.Gauges{})
	ok := measuredModel{stubModel{resp: llm.Response{Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}}, "thinker", m}
	ok.Complete(context.Background(), llm.Request{})
	measuredModel{stubModel{err: fmt.Errorf("x: %w", context.Canceled)}, "reflector", m}.Complete(context.Background(), llm.Request{})
	measuredModel{stubModel{err: llm.ErrAuth}, "reflector", m}.Complete(context.Background(), llm.Request{})
	measuredHandler{stubHandler{}, m}.Handle(context.Background(), mnemo.Task{Platform: "console"})
	measuredHandler{stubHandler{err: errors.New("never started")}, m}.Handle(context.Background(), mnemo.Task{Platform: "console"})
	obs := coreObserver{changes: &changeLog{metrics: m}, withdrawn: new(sync.Map)}
	obs.ToolCall("memory_read", nil)
	obs.ToolCall("memory_patch", fmt.Errorf("facts/a.md: %w", memory.ErrConflict))
	obs.ToolCall("memory_write", errors.New("bad"))
	obs.Reflection("failed")
	body := scrapeText(m)
	for _, want := range []string{
		`mnemo_llm_requests_total{outcome="ok",role="thinker"} 1`,
		`mnemo_llm_requests_total{outcome="canceled",role="reflector"} 1`,
		`mnemo_llm_requests_total{outcome="error",role="reflector"} 1`,
		`mnemo_llm_tokens_total{direction="in",role="thinker"} 10`,
		`mnemo_llm_tokens_total{direction="out",role="thinker"} 2`,
		`mnemo_messages_received_total{platform="console"} 2`,
		`mnemo_replies_sent_total{platform="console"} 1`,
		`mnemo_tasks_in_flight{platform="console"} 0`,
		`mnemo_tool_calls_total{result="ok",tool="memory_read"} 1`,
		`mnemo_tool_calls_total{result="error",tool="memory_patch"} 1`,
		`mnemo_tool_calls_total{result="error",tool="memory_write"} 1`,
		`mnemo_memory_writes_total{op="patch",outcome="conflict"} 1`,
		`mnemo_memory_conflicts_total 1`,
		`mnemo_reflections_total{outcome="failed"} 1`,
	} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// A streamed request is timed to its first words; one cut in the middle
// counts once, as an error; one that never wrote a word has no first
// token.
func TestMeasuredStream(t *testing.T) {
	m := metrics.New(metrics.Gauges{})
	cut := fmt.Errorf("x: %w", llm.ErrCut)
	onText := func(string) error { return nil }
	sm := streamingModel{blockingModel{started: make(chan struct{})}}
	measuredModel{sm, "thinker", m}.Stream(context.Background(), llm.Request{Model: "quick"}, onText)
	measuredModel{cutStream{err: cut}, "thinker", m}.Stream(context.Background(), llm.Request{}, onText)
	measuredModel{stubModel{err: llm.ErrAuth}, "thinker", m}.Stream(context.Background(), llm.Request{}, onText)
	body := scrapeText(m)
	for _, want := range []string{
		`mnemo_llm_requests_total{outcome="ok",role="thinker"} 1`,
		`mnemo_llm_requests_total{outcome="error",role="thinker"} 2`,
		`mnemo_llm_time_to_first_token_seconds_count{role="thinker"} 2`,
	} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

// cutStream hands on a word, then fails with err.
type cutStream struct{ err error }

func (c cutStream) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, c.err
}

func (c cutStream) Stream(_ context.Context, _ llm.Request, onText func(string) error) (llm.Response, error) {
	onText("a ")
	return llm.Response{Message: llm.Message{Content: "a "}}, c.err
}
