package openai

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// FuzzRetryAfter: any Retry-After / retry-after-ms a server sends gives a
// non-negative wait or none — never a panic, never a negative sleep.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "1.5", "-3", "NaN", "Inf", "1e308", "Wed, 21 Oct 2015 07:28:00 GMT", "", "soon"} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, after, afterMs string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", afterMs)
		d, ok := retryAfter(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("retryAfter(%q, %q) = %v, %v", after, afterMs, d, ok)
		}
	})
}

// FuzzStreamBody: whatever a server streams, Stream returns (no panic, no
// hang), a tool call is never made up beyond what the body could hold, and
// when it succeeds the text it handed on is exactly the reply's text.
func FuzzStreamBody(f *testing.F) {
	ev := func(s string) string { return "data: " + s + "\n\n" }
	for _, s := range []string{
		ev(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}`) + ev("[DONE]"),
		ev(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}}]}`) +
			ev(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}`) + ev("[DONE]"),
		ev(`{"error":{"message":"boom","type":"server_error"}}`),
		ev(`{"choices":[{"index":0,"delta":{"content":"half`),
		": keep-alive\n\n" + ev(`{"usage":{"total_tokens":3},"choices":[]}`),
		"<html>no</html>",
	} {
		f.Add(s)
	}
	srv := openaitest.New(f)
	c := New(Config{BaseURL: srv.URL(), MaxRetries: -1, MaxResponseBytes: 1 << 16})
	f.Fuzz(func(t *testing.T, body string) {
		srv.Enqueue(openaitest.Raw(200, "text/event-stream", body))
		var shown strings.Builder
		resp, err := c.Stream(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			func(d string) error { shown.WriteString(d); return nil })
		srv.DiscardRequests()
		if len(resp.Message.ToolCalls) > len(body) {
			t.Fatalf("%d tool calls from a %d-byte body", len(resp.Message.ToolCalls), len(body))
		}
		if (err == nil || shown.Len() > 0) && resp.Message.Content != shown.String() {
			t.Fatalf("handed on %q, content %q (err %v)", shown.String(), resp.Message.Content, err)
		}
	})
}
