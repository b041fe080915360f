package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// llmSleeps records the waits an LLM asked for instead of sleeping.
type llmSleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *llmSleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *llmSleeps) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// llmFixture is an LLM pointed at a fresh scripted server, with recorded
// sleeps and jitter fixed at 0.5 (so backoff n waits 0.75·2^(n-1) s).
func llmFixture(t *testing.T, edit func(*Config)) (*Client, *openaitest.Server, *llmSleeps) {
	t.Helper()
	srv := openaitest.New(t)
	sl := &llmSleeps{}
	cfg := Config{
		BaseURL: srv.URL(),
		APIKey:  "sk-test-0123456789abcdef",
		Sleep:   sl.sleep,
		Rand:    func() float64 { return 0.5 },
	}
	if edit != nil {
		edit(&cfg)
	}
	return New(cfg), srv, sl
}

func llmRequest(user string) goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model: "test-model",
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: "You are mnemo."},
			{Role: goopenai.ChatMessageRoleUser, Content: user},
		},
	}
}

func TestLLMRetriesThenSucceeds(t *testing.T) {
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		script []openaitest.Reply
		sleeps []time.Duration
	}{
		{"429 Retry-After seconds", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("7"),
		}, []time.Duration{7 * time.Second}},
		{"429 Retry-After HTTP date", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter(now.Add(30 * time.Second).Format(http.TimeFormat)),
		}, []time.Duration{30 * time.Second}},
		{"429 Retry-After date in the past", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter(now.Add(-time.Minute).Format(http.TimeFormat)),
		}, []time.Duration{0}},
		{"429 retry-after-ms wins", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("Retry-After-Ms", "1500").WithRetryAfter("9"),
		}, []time.Duration{1500 * time.Millisecond}},
		{"429 without Retry-After backs off", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down"),
		}, []time.Duration{750 * time.Millisecond}},
		{"429 with a garbled Retry-After backs off", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("soon"),
		}, []time.Duration{750 * time.Millisecond}},
		{"500 then success", []openaitest.Reply{
			openaitest.Error(500, "", "internal error"),
		}, []time.Duration{750 * time.Millisecond}},
		{"502 HTML then success", []openaitest.Reply{
			openaitest.BadGateway(),
		}, []time.Duration{750 * time.Millisecond}},
		{"429 Retry-After of exactly MaxRetryAfter is waited", []openaitest.Reply{
			openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("60"),
		}, []time.Duration{time.Minute}},
		{"503 with Retry-After", []openaitest.Reply{
			openaitest.Error(503, "", "overloaded").WithRetryAfter("2"),
		}, []time.Duration{2 * time.Second}},
		{"body cut short", []openaitest.Reply{
			openaitest.Raw(200, "application/json", `{"id":"chatcmpl-1","choices":[{"index":0,`),
		}, []time.Duration{750 * time.Millisecond}},
		{"three failures back off exponentially", []openaitest.Reply{
			openaitest.Error(500, "", "a"), openaitest.BadGateway(), openaitest.Error(503, "", "c"),
		}, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}},
	}
	for _, tt := range tests {
		for _, mode := range modes(tt.name != "body cut short") { // a JSON body is no stream
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				llm, srv, sl := llmFixture(t, nil)
				llm.now = func() time.Time { return now }
				srv.Enqueue(tt.script...)
				srv.Enqueue(openaitest.Text("done").WithUsage(10, 2))
				content, err := callMode(llm, mode, llmRequest("hi"))
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if content != "done" {
					t.Errorf("content = %q", content)
				}
				if got := sl.get(); fmt.Sprint(got) != fmt.Sprint(tt.sleeps) {
					t.Errorf("slept %v, want %v", got, tt.sleeps)
				}
				if n := len(srv.Requests()); n != len(tt.script)+1 {
					t.Errorf("%d requests, want %d", n, len(tt.script)+1)
				}
				u := llm.Usage()
				want := Usage{Calls: 1, PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, Retries: int64(len(tt.script))}
				if u != want {
					t.Errorf("Usage = %+v, want %+v", u, want)
				}
			})
		}
	}
}

func TestLLMFailures(t *testing.T) {
	var (
		e500 = openaitest.Error(500, "", "internal error")
		e429 = openaitest.Error(429, "rate_limit_exceeded", "slow down")
	)
	tests := []struct {
		name     string
		edit     func(*Config)
		script   []openaitest.Reply
		kind     error
		notKind  error
		requests int
		sleeps   int
		status   int
		code     string
		inMsg    []string
		as       any // a pointer to the go-openai error type the error must unwrap to
	}{
		{name: "5xx retries exhausted", script: []openaitest.Reply{e500, e500, e500, e500},
			kind: ErrUnavailable, requests: 4, sleeps: 3, status: 500,
			inMsg: []string{"4 attempts", "internal error", "HTTP 500"}, as: new(*goopenai.APIError)},
		{name: "429 retries exhausted", script: []openaitest.Reply{e429, e429, e429, e429},
			kind: ErrRateLimited, requests: 4, sleeps: 3, status: 429, code: "rate_limit_exceeded",
			inMsg: []string{"rate limited", "slow down"}},
		{name: "502 HTML retries exhausted", script: []openaitest.Reply{openaitest.BadGateway(), openaitest.BadGateway(),
			openaitest.BadGateway(), openaitest.BadGateway()},
			kind: ErrUnavailable, requests: 4, sleeps: 3, status: 502,
			inMsg: []string{"502 Bad Gateway"}, as: new(*goopenai.RequestError)},
		{name: "MaxRetries 1", edit: func(c *Config) { c.MaxRetries = 1 }, script: []openaitest.Reply{e500, e500},
			kind: ErrUnavailable, requests: 2, sleeps: 1, status: 500},
		{name: "negative MaxRetries means none", edit: func(c *Config) { c.MaxRetries = -1 }, script: []openaitest.Reply{e500},
			kind: ErrUnavailable, requests: 1, status: 500},
		{name: "400 not retried", script: []openaitest.Reply{openaitest.Error(400, "invalid_value", "bad messages")},
			kind: ErrBadRequest, requests: 1, status: 400, code: "invalid_value", inMsg: []string{"bad messages"}},
		{name: "404 unknown model not retried", script: []openaitest.Reply{openaitest.Error(404, "model_not_found", "The model `x` does not exist")},
			kind: ErrBadRequest, requests: 1, status: 404, code: "model_not_found"},
		{name: "401", script: []openaitest.Reply{openaitest.Error(401, "invalid_api_key", "Incorrect API key provided")},
			kind: ErrAuth, requests: 1, status: 401, inMsg: []string{"OPENAI_API_KEY"}},
		{name: "403", script: []openaitest.Reply{openaitest.Error(403, "unsupported_country_region_territory", "Country not supported")},
			kind: ErrAuth, requests: 1, status: 403, inMsg: []string{"OPENAI_API_KEY"}},
		{name: "insufficient_quota is a 429 but not transient", script: []openaitest.Reply{
			openaitest.Error(429, "insufficient_quota", "You exceeded your current quota").WithRetryAfter("1")},
			kind: ErrQuota, notKind: ErrRateLimited, requests: 1, status: 429, code: "insufficient_quota", inMsg: []string{"billing"}},
		{name: "context_length_exceeded", script: []openaitest.Reply{openaitest.Error(400, "context_length_exceeded", "maximum context length is 8192 tokens")},
			kind: ErrContextLength, requests: 1, status: 400},
		{name: "Retry-After beyond the cap", script: []openaitest.Reply{e429.WithRetryAfter("3600")},
			kind: ErrRateLimited, requests: 1, status: 429, inMsg: []string{"retry after 1h0m0s", "longer than the 1m0s"}},
		{name: "Retry-After beyond a configured cap", edit: func(c *Config) { c.MaxRetryAfter = 5 * time.Second },
			script: []openaitest.Reply{openaitest.Error(503, "", "busy").WithRetryAfter("6")},
			kind:   ErrUnavailable, requests: 1, status: 503, inMsg: []string{"retry after 6s", "longer than the 5s"}},
		{name: "200 with a non-JSON body", script: []openaitest.Reply{openaitest.Raw(200, "text/html", "<html>login</html>")},
			kind: ErrBadResponse, requests: 1, inMsg: []string{"not a chat completion"}},
		{name: "zero choices", script: []openaitest.Reply{openaitest.NoChoices()},
			kind: ErrBadResponse, requests: 1, inMsg: []string{"no choices"}},
	}
	for _, tt := range tests {
		for _, mode := range modes(true) {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				llm, srv, sl := llmFixture(t, tt.edit)
				srv.Enqueue(tt.script...)
				_, err := callMode(llm, mode, llmRequest("hi"))
				if !errors.Is(err, tt.kind) {
					t.Fatalf("err = %v, want errors.Is %v", err, tt.kind)
				}
				if tt.notKind != nil && errors.Is(err, tt.notKind) {
					t.Errorf("err is also %v", tt.notKind)
				}
				var le *Error
				if !errors.As(err, &le) {
					t.Fatalf("err is %T, not *Error", err)
				}
				if le.StatusCode != tt.status || le.Code != tt.code && tt.code != "" {
					t.Errorf("status %d code %q, want %d %q", le.StatusCode, le.Code, tt.status, tt.code)
				}
				if n := len(srv.Requests()); n != tt.requests {
					t.Errorf("%d requests, want %d", n, tt.requests)
				}
				if n := len(sl.get()); n != tt.sleeps {
					t.Errorf("%d sleeps, want %d", n, tt.sleeps)
				}
				msg := err.Error()
				for _, want := range append([]string{"test-model", srv.URL()}, tt.inMsg...) {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q lacks %q", msg, want)
					}
				}
				if strings.Contains(msg, "sk-test-0123456789abcdef") {
					t.Errorf("message shows the API key: %q", msg)
				}
				if tt.as != nil && !errors.As(err, tt.as) {
					t.Errorf("err does not unwrap to %T", tt.as)
				}
				u := llm.Usage()
				if u.Calls != 1 || u.Failures != 1 || u.Retries != int64(tt.sleeps) {
					t.Errorf("Usage = %+v", u)
				}
				if srv.Pending() != 0 {
					t.Errorf("%d scripted replies unused", srv.Pending())
				}
			})
		}
	}
}

func TestLLMRequestNotSent(t *testing.T) {
	tests := []struct {
		name string
		req  func() goopenai.ChatCompletionRequest
	}{
		{"reasoning model with max_tokens", func() goopenai.ChatCompletionRequest {
			r := llmRequest("hi")
			r.Model, r.MaxTokens = "o1-mini", 100
			return r
		}},
		{"completions-only model", func() goopenai.ChatCompletionRequest {
			r := llmRequest("hi")
			r.Model = goopenai.GPT3TextDavinci003
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm, srv, sl := llmFixture(t, nil)
			_, err := llm.complete(context.Background(), tt.req())
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "not sent") {
				t.Errorf("err = %v", err)
			}
			if len(srv.Requests()) != 0 || len(sl.get()) != 0 {
				t.Error("a request go-openai refuses was sent or retried")
			}
		})
	}
}

func TestLLMBadBaseURL(t *testing.T) {
	for _, base := range []string{"ftp://127.0.0.1/v1", "127.0.0.1:11434/v1", "http:///v1",
		"http://127.0.0.1:1/v1?api-version=1&token=querysecret", "http://127.0.0.1:1/v1?", "http://127.0.0.1:1/v1#x"} {
		llm := New(Config{BaseURL: base, Sleep: (&llmSleeps{}).sleep})
		_, err := llm.complete(context.Background(), llmRequest("hi"))
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "OPENAI_BASE_URL") ||
			strings.Contains(err.Error(), "querysecret") {
			t.Errorf("%s: err = %v", base, err)
		}
	}
}

func TestLLMErrorHidesSecrets(t *testing.T) {
	const key = "sk-live-abcdefghijklmnop"
	srv := openaitest.New(t)
	srv.Enqueue(openaitest.Error(401, "invalid_api_key", "Incorrect API key provided: "+key))
	u, _ := url.Parse(srv.URL())
	u.User = url.UserPassword("proxyuser", "proxypass")
	var logs bytes.Buffer
	llm := New(Config{
		BaseURL: u.String(), APIKey: key, Sleep: (&llmSleeps{}).sleep,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	_, err := llm.complete(context.Background(), llmRequest("hi"))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("err = %v", err)
	}
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) {
		t.Error("redaction hid the *goopenai.APIError")
	}
	for _, out := range []string{err.Error(), logs.String()} {
		for _, secret := range []string{key, "proxypass"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows %q", out, secret)
			}
		}
	}
	if !strings.Contains(err.Error(), "[REDACTED]") || !strings.Contains(err.Error(), strings.TrimSuffix(srv.URL(), "/v1")[len("http://"):]) {
		t.Errorf("message = %q", err.Error())
	}
	// The retry log line renders the redacted error itself.
	logs.Reset()
	srv.Enqueue(openaitest.Error(503, "", "overloaded, key "+key), openaitest.Text("ok"))
	if _, err := llm.complete(context.Background(), llmRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); strings.Contains(out, key) || !strings.Contains(out, "overloaded, key [REDACTED]") {
		t.Errorf("retry log = %s", out)
	}
	// A short placeholder key is not a secret and is not scrubbed.
	if got := (&Client{apiKey: "ollama"}).redact(errors.New("ollama said no")).Error(); got != "ollama said no" {
		t.Errorf("short key redacted: %q", got)
	}
}

func TestLLMAttemptTimeoutThenSuccess(t *testing.T) {
	llm, srv, sl := llmFixture(t, func(c *Config) { c.Timeout = 250 * time.Millisecond })
	srv.Enqueue(openaitest.Text("late").WithDelay(time.Hour), openaitest.Text("on time"))
	resp, err := llm.complete(context.Background(), llmRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "on time" || len(srv.Requests()) != 2 || len(sl.get()) != 1 {
		t.Errorf("content %q, %d requests, sleeps %v", resp.Choices[0].Message.Content, len(srv.Requests()), sl.get())
	}
}

func TestLLMAttemptTimeoutsExhausted(t *testing.T) {
	// The attempts are counted where the client sends them: under load a
	// 20 ms attempt can time out before the server has read the request.
	var attempts atomic.Int32
	llm, srv, _ := llmFixture(t, func(c *Config) {
		c.Timeout, c.MaxRetries = 20*time.Millisecond, 1
		c.HTTPClient = &http.Client{Transport: countingTransport{&attempts, http.DefaultTransport}}
	})
	slow := openaitest.Text("late").WithDelay(time.Hour)
	srv.Enqueue(slow, slow)
	_, err := llm.complete(context.Background(), llmRequest("hi"))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "attempt timed out after 20ms") {
		t.Errorf("err = %v", err)
	}
	if n := attempts.Load(); n != 2 {
		t.Errorf("%d attempts; want 2 (MaxRetries 1)", n)
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	n    *atomic.Int32
	next http.RoundTripper
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func TestLLMCallerContext(t *testing.T) {
	t.Run("cancelled while waiting to retry", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var sleeps int
		llm, srv, _ := llmFixture(t, func(c *Config) {
			c.Sleep = func(ctx context.Context, d time.Duration) error {
				sleeps++
				cancel()
				return clock.Sleep(ctx, time.Hour)
			}
		})
		srv.Enqueue(openaitest.Error(500, "", "x"), openaitest.Text("never asked for"))
		_, err := llm.complete(ctx, llmRequest("hi"))
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
			t.Errorf("err = %v", err)
		}
		if sleeps != 1 || len(srv.Requests()) != 1 {
			t.Errorf("%d sleeps, %d requests", sleeps, len(srv.Requests()))
		}
		var le *Error
		if errors.As(err, &le); le == nil || le.StatusCode != 500 {
			t.Errorf("Error = %+v", le)
		}
	})
	t.Run("cancelled during an attempt", func(t *testing.T) {
		llm, srv, sl := llmFixture(t, nil)
		srv.Enqueue(openaitest.Text("late").WithDelay(time.Hour))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			srv.WaitRequests(1, 5*time.Second)
			cancel()
		}()
		_, err := llm.complete(ctx, llmRequest("hi"))
		if !errors.Is(err, context.Canceled) || len(sl.get()) != 0 || len(srv.Requests()) != 1 {
			t.Errorf("err = %v, sleeps %v", err, sl.get())
		}
	})
	t.Run("caller deadline is not an attempt timeout", func(t *testing.T) {
		llm, srv, sl := llmFixture(t, nil)
		srv.Enqueue(openaitest.Text("late").WithDelay(time.Hour))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err := llm.complete(ctx, llmRequest("hi"))
		var le *Error
		if !errors.As(err, &le) || le.Kind != context.DeadlineExceeded || len(sl.get()) != 0 {
			t.Errorf("err = %v, sleeps %v", err, sl.get())
		}
	})
	t.Run("sleep fails without the context", func(t *testing.T) {
		boom := errors.New("clock broke")
		llm, srv, _ := llmFixture(t, func(c *Config) {
			c.Sleep = func(context.Context, time.Duration) error { return boom }
		})
		srv.Enqueue(openaitest.Error(500, "", "x"))
		_, err := llm.complete(context.Background(), llmRequest("hi"))
		if !errors.Is(err, boom) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestLLMTransportError(t *testing.T) {
	// A server that drops every connection without an answer: a transport
	// error, retried (a refused connection on loopback is final instead).
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer drop.Close()
	sl := &llmSleeps{}
	llm := New(Config{BaseURL: drop.URL + "/v1", Sleep: sl.sleep, Rand: func() float64 { return 2 }})
	_, err := llm.complete(context.Background(), llmRequest("hi"))
	var ue *url.Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) {
		t.Fatalf("err = %v", err)
	}
	// Rand out of range is clamped to 1: waits of 1·2^(n-1) s.
	if got := fmt.Sprint(sl.get()); got != "[1s 2s 4s]" {
		t.Errorf("slept %s", got)
	}
}

func TestLLMTruncatedToolCalls(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(
		openaitest.ToolCalls(
			openaitest.Call("memory_list", `{}`),
			openaitest.Call("memory_write", `{"path":"facts/user.md","content":"# User\n> Summ`),
		).WithContent("Saving that.").WithFinishReason(openaitest.FinishLength),
		openaitest.Text("a long answer that was cut").WithFinishReason(openaitest.FinishLength),
	)
	resp, err := c.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "remember me"}}})
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if !strings.Contains(err.Error(), "memory_list, memory_write") {
		t.Errorf("message %q does not name the dropped calls", err)
	}
	if len(resp.Message.ToolCalls) != 0 { // what a loop would run
		t.Errorf("truncated tool calls survived: %+v", resp.Message)
	}
	if resp.Message.Content != "Saving that." || resp.FinishReason != llm.FinishLength {
		t.Errorf("the rest of the response was lost: %+v", resp)
	}
	// Text cut at the limit is not an error: the caller sees finish_reason.
	resp, err = c.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "tell me more"}}})
	if err != nil || resp.Message.Content != "a long answer that was cut" || resp.FinishReason != llm.FinishLength {
		t.Errorf("text truncation: %v %+v", err, resp)
	}
	if u := c.Usage(); u.Calls != 2 || u.Truncated != 1 || u.Failures != 0 {
		t.Errorf("Usage = %+v", u)
	}
}

func TestLLMTruncatedFunctionCall(t *testing.T) {
	// The deprecated function_call form is cut the same way.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":null,"function_call":{"name":"memory_write","arguments":"{\"pa"}},`+
			`"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer ts.Close()
	llm := New(Config{BaseURL: ts.URL + "/v1", HTTPClient: ts.Client()})
	resp, err := llm.complete(context.Background(), llmRequest("hi"))
	if !errors.Is(err, ErrTruncated) || resp.Choices[0].Message.FunctionCall != nil {
		t.Errorf("err %v, message %+v", err, resp.Choices[0].Message)
	}
}

func TestLLMUsageConcurrent(t *testing.T) {
	llm, srv, _ := llmFixture(t, nil)
	const n = 16
	for range n {
		srv.Enqueue(openaitest.Text("ok").WithUsage(100, 20))
	}
	srv.Enqueue(openaitest.Error(400, "", "bad"))
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := llm.complete(context.Background(), llmRequest("hi")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := llm.complete(context.Background(), llmRequest("hi")); err == nil {
		t.Fatal("the scripted 400 succeeded")
	}
	want := Usage{Calls: n + 1, PromptTokens: 100 * n, CompletionTokens: 20 * n, TotalTokens: 120 * n, Failures: 1}
	if u := llm.Usage(); u != want {
		t.Errorf("Usage = %+v, want %+v", u, want)
	}
}

func TestLLMAuthorizationAndRequest(t *testing.T) {
	llm, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.Text("a"), openaitest.Text("b"))
	req := llmRequest("hi")
	req.Stream = true // ignored: Complete never streams
	if _, err := llm.complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	noKey := New(Config{BaseURL: srv.URL() + "/"})
	if _, err := noKey.complete(context.Background(), llmRequest("hi")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test-0123456789abcdef" {
		t.Errorf("Authorization = %q", got)
	}
	if reqs[0].Chat.Stream || reqs[0].Chat.Model != "test-model" || reqs[0].LastUser() != "hi" {
		t.Errorf("sent %+v", reqs[0].Chat)
	}
	if got, ok := reqs[1].Header["Authorization"]; ok {
		t.Errorf("no API key, yet Authorization %q was sent", got)
	}
	if reqs[1].Path != "/v1/chat/completions" {
		t.Errorf("trailing slash in BaseURL gave path %q", reqs[1].Path)
	}
}

func TestLLMDebugLog(t *testing.T) {
	var logs bytes.Buffer
	llm, srv, _ := llmFixture(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	srv.Enqueue(openaitest.Error(503, "", "busy"), openaitest.Text("ok").WithUsage(11, 4))
	if _, err := llm.complete(context.Background(), llmRequest("hi")); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"llm: retrying"`, `"msg":"llm: call"`, `"model":"test-model"`, `"duration":`,
		`"prompt_tokens":11`, `"completion_tokens":4`, `"total_tokens":15`, `"attempts":2`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-test-0123456789abcdef") {
		t.Error("log shows the API key")
	}
}

func TestNewLLMDefaults(t *testing.T) {
	llm := New(Config{})
	if llm.baseURL != DefaultBaseURL || llm.timeout != 60*time.Second || llm.maxRetries != 3 ||
		llm.maxRetryAfter != 60*time.Second || llm.log == nil || llm.sleep == nil || llm.rand == nil {
		t.Errorf("defaults = %+v", llm)
	}
	if r := llm.rand(); r < 0 || r >= 1 {
		t.Errorf("rand() = %v", r)
	}
	hc := defaultHTTPClient()
	if tr, ok := hc.Transport.(*http.Transport); !ok || tr.TLSHandshakeTimeout == 0 || tr.IdleConnTimeout == 0 || tr.DialContext == nil || hc.Timeout != 0 {
		t.Errorf("default HTTP client = %+v", hc)
	}
	llm.rand = func() float64 { return 0.5 }
	if got := llm.backoff(40); got != 15*time.Second { // capped at 20s, jitter 0.5
		t.Errorf("backoff(40) = %v", got)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ra, ms string
		d      time.Duration
		ok     bool
	}{
		{"", "", 0, false},
		{"5", "", 5 * time.Second, true},
		{" 5 ", "", 5 * time.Second, true},
		{"0", "", 0, true},
		{"1.5", "", 1500 * time.Millisecond, true},
		{"-1", "", 0, false},
		{"NaN", "", 0, false},
		{"soon", "", 0, false},
		{"1e300", "", math.MaxInt64, true},
		{"1e20", "", math.MaxInt64, true},              // 3e12 years: capped, not wrapped to a negative wait
		{"9223372036.854776", "", math.MaxInt64, true}, // exactly 2^63 ns: capped, not wrapped
		{now.Add(90 * time.Second).Format(http.TimeFormat), "", 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), "", 0, true},
		{"", "250", 250 * time.Millisecond, true},
		{"3", "bad", 3 * time.Second, true},
		{"3", "-5", 3 * time.Second, true},
		{"3", "+Inf", 3 * time.Second, true},
		{"3", "0", 0, true}, // "retry now" is an answer, not a missing header
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.ra != "" {
			h.Set("Retry-After", tt.ra)
		}
		if tt.ms != "" {
			h.Set("Retry-After-Ms", tt.ms)
		}
		d, ok := retryAfter(h, now)
		if d != tt.d || ok != tt.ok {
			t.Errorf("Retry-After %q, -Ms %q = %v %v, want %v %v", tt.ra, tt.ms, d, ok, tt.d, tt.ok)
		}
	}
}

func TestClassifyCodes(t *testing.T) {
	tests := []struct {
		code any
		want string
	}{{nil, ""}, {0, ""}, {42, "42"}, {"x", "x"}, {1.5, "1.5"}}
	for _, tt := range tests {
		if got := codeString(tt.code); got != tt.want {
			t.Errorf("codeString(%#v) = %q", tt.code, got)
		}
	}
	// An APIError without a status (go-openai's stream errors) is no HTTP
	// verdict: not retried.
	if f := (&Client{}).classify(&goopenai.APIError{Message: "x"}); f.kind != ErrBadResponse || f.retry {
		t.Errorf("status-less APIError = %+v", f)
	}
	// A RequestError can carry a partly decoded APIError; its code counts.
	err := &goopenai.RequestError{HTTPStatusCode: 429, Err: &goopenai.APIError{Code: "insufficient_quota"}}
	if f := (&Client{}).classify(err); f.kind != ErrQuota || f.retry {
		t.Errorf("RequestError with quota code = %+v", f)
	}
	if got := displayURL("http://[::1"); got != "(unparsable base URL)" {
		t.Errorf("displayURL = %q", got)
	}
	e := &Error{Kind: ErrBadRequest}
	if got := e.Error(); got != "llm (no model) at : "+ErrBadRequest.Error() {
		t.Errorf("bare Error = %q", got)
	}
}

func TestDescribeLongProxyPage(t *testing.T) {
	body := "<html>" + strings.Repeat("x ", 300) + "</html>"
	got := describe(&goopenai.RequestError{HTTPStatus: "502 Bad Gateway", HTTPStatusCode: 502, Body: []byte(body)})
	if len(got) > 260 || !strings.HasSuffix(got, "…") || !strings.Contains(got, `"502 Bad Gateway"`) {
		t.Errorf("describe = %q", got)
	}
	// Up to 200 characters the page is shown whole; past them it is cut at 200.
	for n, want := range map[int]string{200: strings.Repeat("y", 200), 201: strings.Repeat("y", 200) + "…"} {
		got := describe(&goopenai.RequestError{HTTPStatus: "502 Bad Gateway", Body: []byte(strings.Repeat("y", n))})
		if got != `server answered "502 Bad Gateway": `+want {
			t.Errorf("%d-character page: %q", n, got)
		}
	}
}

func TestProbeModels(t *testing.T) {
	srv := openaitest.New(t)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>hello</html>")
	}))
	defer html.Close()
	noData := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list"}`)
	}))
	defer noData.Close()
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusUnauthorized)
	}))
	defer status.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/v1"
	ln.Close()

	if err := ProbeModels(context.Background(), nil, srv.URL()); err != nil {
		t.Errorf("openaitest server: %v", err)
	}
	if err := ProbeModels(context.Background(), http.DefaultClient, srv.URL()+"/"); err != nil {
		t.Errorf("trailing slash: %v", err)
	}
	srv.SetModels()
	if err := ProbeModels(context.Background(), nil, srv.URL()); err != nil {
		t.Errorf("empty model list: %v", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	tests := []struct {
		name, base string
		ctx        context.Context
		inMsg      string
	}{
		{"refused", refused, context.Background(), "refused"},
		{"non-200", status.URL + "/v1", context.Background(), "401"},
		{"200 HTML", html.URL + "/v1", context.Background(), "not with an OpenAI model list"},
		{"200 without data", noData.URL + "/v1", context.Background(), "not with an OpenAI model list"},
		{"no answer in time", hang.URL + "/v1", short, "deadline"},
		{"bad URL", "http://[::1", context.Background(), "bad base URL"},
	}
	for _, tt := range tests {
		err := ProbeModels(tt.ctx, nil, tt.base)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.inMsg) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func TestModels(t *testing.T) {
	srv := openaitest.New(t)
	srv.SetModels("zeta", "alpha", "")
	c := New(Config{BaseURL: srv.URL(), APIKey: "sk-secret-123"})
	ids, err := c.Models(context.Background())
	if err != nil || strings.Join(ids, ",") != "alpha,zeta" {
		t.Errorf("Models = %v, %v", ids, err)
	}
	bad := New(Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-secret-123"})
	if _, err := bad.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "list the models at http://127.0.0.1:1/v1") || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("Models of a closed port = %v", err)
	}
}

// TestNoSuchHostIsNotRetried: a host that does not exist is a typo in the
// address; retrying cannot fix it.
func TestNoSuchHostIsNotRetried(t *testing.T) {
	c := New(Config{BaseURL: "http://mnemo-no-such-host.invalid/v1"})
	f := c.classify(&url.Error{Op: "Post", URL: "http://mnemo-no-such-host.invalid/v1/chat/completions", Err: &net.DNSError{Err: "no such host", Name: "mnemo-no-such-host.invalid", IsNotFound: true}})
	if f.retry || f.kind != llm.ErrUnavailable || !strings.Contains(f.detail, "no such host") {
		t.Errorf("classify(no such host) = %+v", f)
	}
	f = c.classify(&url.Error{Op: "Post", URL: "x", Err: &net.DNSError{Err: "server misbehaving", IsTemporary: true}})
	if !f.retry {
		t.Errorf("a DNS server failure is not retried: %+v", f)
	}
}

// TestRefusedOnLoopbackIsFinal: a connection refused by this machine means
// nothing listens there; the call fails at once, naming the fix, instead
// of waiting out the retries (issue 25, item 3: 9.5 s per message).
func TestRefusedOnLoopbackIsFinal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	sleeps := 0
	c := New(Config{BaseURL: base, APIKey: "k", Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }})
	_, err = c.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if !errors.Is(err, ErrUnavailable) || sleeps != 0 || !strings.Contains(err.Error(), "nothing listens at that address") || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("after %d sleeps: %v", sleeps, err)
	}
	// A refusal from another machine may be a restart behind a balancer:
	// retried.
	remote := &url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	if f := c.classify(remote); !f.retry || f.kind != llm.ErrUnavailable {
		t.Errorf("a remote refusal = %+v, want retried", f)
	}
	local := &url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 1}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	if f := c.classify(local); f.retry {
		t.Errorf("a refusal on ::1 = %+v, want final", f)
	}
	reset := &url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, Err: os.NewSyscallError("read", syscall.ECONNREFUSED)}}
	if f := c.classify(reset); !f.retry {
		t.Errorf("a refusal that is not a dial = %+v, want retried", f)
	}
}
