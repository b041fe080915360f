package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/agent/llm"
)

// DefaultBaseURL is the model server Config.BaseURL defaults to.
const DefaultBaseURL = "https://api.openai.com/v1"

const (
	defaultLLMTimeout    = 60 * time.Second
	defaultMaxRetries    = 3
	defaultMaxRetryAfter = 60 * time.Second
	// DefaultMaxResponseBytes is Config.MaxResponseBytes when unset
	// (llm.maxResponseBytes).
	DefaultMaxResponseBytes = 4 << 20
	backoffBase             = time.Second
	backoffMax              = 20 * time.Second
	probeTimeout            = 3 * time.Second
	// minRedactLen: API keys at least this long are scrubbed from error
	// texts; shorter ones are placeholders ("ollama"), not secrets, and
	// replacing them would mangle messages.
	minRedactLen = 8
)

// Config configures a Client. Only BaseURL and APIKey matter in production;
// the rest have defaults.
type Config struct {
	// BaseURL of an OpenAI-compatible API, e.g. https://api.openai.com/v1
	// (the default when empty) or http://127.0.0.1:11434/v1 (Ollama).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". When empty no
	// Authorization header is sent at all (go-openai's behaviour), which is
	// what local servers such as Ollama, LM Studio or vLLM without
	// --api-key expect; no placeholder is invented.
	APIKey string
	// HTTPClient nil → a client with dial, TLS and idle timeouts and no
	// overall timeout (each attempt is bounded by Timeout instead).
	HTTPClient *http.Client
	// Timeout bounds each attempt (not the whole call with its retries);
	// default 60s.
	Timeout time.Duration
	// MaxRetries is how many times a transient failure is retried: 0 means
	// the default 3 (so up to 4 attempts), a negative value no retries.
	MaxRetries int
	// MaxRetryAfter caps how long a server may ask the client to wait
	// (Retry-After); a longer wait ends the call with an error instead.
	// Default 60s.
	MaxRetryAfter time.Duration
	// MaxResponseBytes bounds how much of a response body is read (a
	// success or an error page); past it the call fails with
	// llm.ErrResponseTooLarge. <= 0 means DefaultMaxResponseBytes (4 MiB).
	MaxResponseBytes int64
	// Logger nil → discard.
	Logger *slog.Logger
	// Sleep waits between attempts; it must return early with ctx.Err()
	// when ctx is done. Default: a timer or ctx, whichever comes first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand is the jitter source, returning values in [0, 1). Default
	// math/rand/v2.Float64.
	Rand func() float64
}

// Usage is a snapshot of a Client's cumulative counters (all calls, where llm.Usage is one reply's tokens).
type Usage struct {
	Calls            int64 // Complete calls
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	Retries          int64 // attempts beyond the first of each call
	Failures         int64 // calls that returned an error other than llm.ErrTruncated
	Truncated        int64 // calls that returned llm.ErrTruncated
}

// Client is a chat completion client for an OpenAI-compatible server with
// retries, per-attempt timeouts, error classification and token counting.
// It is safe for concurrent use.
type Client struct {
	client        *goopenai.Client
	baseURL       string // as configured, for requests
	badURL        bool   // baseURL is no base URL go-openai can use (checkURL)
	shownURL      string // for messages: no credentials, no query
	apiKey        string
	timeout       time.Duration
	maxRetries    int
	maxRetryAfter time.Duration
	maxResponse   int64
	log           *slog.Logger
	sleep         func(context.Context, time.Duration) error
	rand          func() float64
	now           func() time.Time
	// afterFunc starts a streamed attempt's timeout (time.AfterFunc; a
	// test's own timers instead).
	afterFunc func(time.Duration, func()) attemptTimer

	calls, prompt, completion, total, retries, failures, truncated atomic.Int64
}

// New returns a client for cfg, filling in defaults.
func New(cfg Config) *Client {
	c := &Client{
		baseURL:       strings.TrimRight(cfg.BaseURL, "/"),
		apiKey:        cfg.APIKey,
		timeout:       cfg.Timeout,
		maxRetries:    cfg.MaxRetries,
		maxRetryAfter: cfg.MaxRetryAfter,
		maxResponse:   cfg.MaxResponseBytes,
		log:           cfg.Logger,
		sleep:         cfg.Sleep,
		rand:          cfg.Rand,
		now:           time.Now,
		afterFunc:     func(d time.Duration, f func()) attemptTimer { return time.AfterFunc(d, f) },
	}
	if c.baseURL == "" {
		c.baseURL = DefaultBaseURL
	}
	c.shownURL = displayURL(c.baseURL)
	c.badURL = badBaseURL(c.baseURL)
	c.timeout = defaults.Positive(c.timeout, defaultLLMTimeout)
	switch {
	case c.maxRetries == 0:
		c.maxRetries = defaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	c.maxRetryAfter = defaults.Positive(c.maxRetryAfter, defaultMaxRetryAfter)
	c.maxResponse = defaults.Positive(c.maxResponse, DefaultMaxResponseBytes)
	c.log = defaults.Logger(c.log)
	if c.sleep == nil {
		c.sleep = clock.Sleep
	}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	// A copy, so the caller's client (shared with ProbeModels, say) is left
	// as it was.
	limited := *hc
	limited.Transport = &limitTransport{base: hc.Transport, limit: c.maxResponse}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = c.baseURL
	oc.HTTPClient = &limited
	c.client = goopenai.NewClientWithConfig(oc)
	return c
}

func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// displayURL is raw without user info, query and fragment.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable base URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// Usage returns the cumulative counters.
func (c *Client) Usage() Usage {
	return Usage{
		Calls:            c.calls.Load(),
		PromptTokens:     c.prompt.Load(),
		CompletionTokens: c.completion.Load(),
		TotalTokens:      c.total.Load(),
		Retries:          c.retries.Load(),
		Failures:         c.failures.Load(),
		Truncated:        c.truncated.Load(),
	}
}

// Complete sends one chat completion request (never streamed) and returns
// the first choice of the response.
//
// Transient failures are retried up to MaxRetries times: HTTP 429 (except
// insufficient_quota), 5xx (with a JSON error or a proxy's HTML page),
// transport errors and attempts that exceeded Timeout. Between attempts it
// waits what the server's Retry-After (or retry-after-ms) header says, or
// else an exponential backoff with jitter (1s, 2s, 4s, ... up to 20s, each
// scaled by a random factor in [0.5, 1)). It stops at once when ctx is done.
// Other failures are not retried.
//
// On failure the error is an *Error wrapping one of llm.ErrRateLimited,
// llm.ErrQuota, llm.ErrAuth, llm.ErrUnavailable, llm.ErrContextLength, llm.ErrBadRequest,
// llm.ErrBadResponse (zero choices), llm.ErrResponseTooLarge (a body longer than
// MaxResponseBytes, of which no more is read), or ctx's error.
//
// When a choice has finish_reason "length" and tool calls, those calls were
// cut short: Complete removes them from the response (so they can never be
// run) and returns the response together with an *Error wrapping
// llm.ErrTruncated. This is the one error with a usable response.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := c.complete(ctx, toWire(req))
	if len(resp.Choices) == 0 {
		return llm.Response{}, err
	}
	return fromWire(resp), err
}

// complete is Complete on go-openai's types.
func (c *Client) complete(ctx context.Context, req goopenai.ChatCompletionRequest) (goopenai.ChatCompletionResponse, error) {
	c.calls.Add(1)
	req.Stream = false
	start := time.Now()
	var resp goopenai.ChatCompletionResponse
	attempts, err := c.retry(ctx, req, func() (http.Header, bool, bool, error) {
		var timedOut bool
		var err error
		resp, timedOut, err = c.attempt(ctx, req)
		return resp.Header(), timedOut, false, err
	})
	if err != nil {
		return goopenai.ChatCompletionResponse{}, err
	}
	return c.succeed(req, resp, attempts, start)
}

// checkURL refuses a base URL go-openai would mangle (badURL, decided
// once in New).
func (c *Client) checkURL(req goopenai.ChatCompletionRequest) error {
	if c.badURL {
		return c.fail(req, failure{kind: llm.ErrBadRequest,
			detail: "the base URL must be an http(s) URL without query or fragment (set OPENAI_BASE_URL or llm.baseURL)"}, 0, nil)
	}
	return nil
}

// badBaseURL reports whether raw is no base URL for go-openai: not an
// http(s) URL with a host, or one with a query or fragment (go-openai
// appends "/chat/completions" to the base URL as a string, so a query or
// fragment would swallow the path).
func badBaseURL(raw string) bool {
	u, err := url.Parse(raw)
	return err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != ""
}

// retry runs try until it succeeds, fails for good or the retries are
// spent, and returns how many attempts it made, or the classified error
// (counted and logged by fail). try reports the attempt's response
// headers (for Retry-After), whether its own timeout ended it, and final:
// that it must not be tried again whatever the error (a stream that
// handed text on).
func (c *Client) retry(ctx context.Context, req goopenai.ChatCompletionRequest,
	try func() (header http.Header, timedOut, final bool, err error)) (int, error) {
	if err := c.checkURL(req); err != nil {
		return 0, err
	}
	for attempt := 1; ; attempt++ {
		header, timedOut, final, err := try()
		if err == nil {
			return attempt, nil
		}
		f := c.classify(err)
		switch {
		case ctx.Err() != nil:
			f.kind, f.retry = ctx.Err(), false
		case timedOut:
			f = failure{kind: llm.ErrUnavailable, retry: true, detail: fmt.Sprintf("attempt timed out after %v", c.timeout)}
		}
		f.cut = final
		if !f.retry || final || attempt > c.maxRetries {
			if !final && ctx.Err() == nil && notHere(f.status) {
				f = c.checkAPI(ctx, f)
			}
			return attempt, c.fail(req, f, attempt, err)
		}
		delay, fromServer := retryAfter(header, c.now())
		if fromServer && delay > c.maxRetryAfter {
			f.detail = fmt.Sprintf("the server asked to retry after %v, longer than the %v this client waits", delay, c.maxRetryAfter)
			return attempt, c.fail(req, f, attempt, err)
		}
		if !fromServer {
			delay = c.backoff(attempt)
		}
		c.retries.Add(1)
		c.log.Info("llm: retrying", "model", req.Model, "base_url", c.shownURL, "attempt", attempt,
			"status", f.status, "code", f.code, "delay", delay, "error", c.redact(err).Error())
		if serr := c.sleep(ctx, delay); serr != nil {
			if ctx.Err() != nil {
				serr = ctx.Err()
			}
			return attempt, c.fail(req, failure{kind: serr, status: f.status, code: f.code}, attempt, err)
		}
	}
}

// attempt makes one HTTP attempt under its own timeout; timedOut reports
// that this timeout (not the caller's context) ended it.
func (c *Client) attempt(ctx context.Context, req goopenai.ChatCompletionRequest) (resp goopenai.ChatCompletionResponse, timedOut bool, err error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err = c.client.CreateChatCompletion(actx, req)
	timedOut = err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	return resp, timedOut, err
}

func (c *Client) succeed(req goopenai.ChatCompletionRequest, resp goopenai.ChatCompletionResponse, attempts int, start time.Time) (goopenai.ChatCompletionResponse, error) {
	u := resp.Usage
	c.prompt.Add(int64(u.PromptTokens))
	c.completion.Add(int64(u.CompletionTokens))
	c.total.Add(int64(u.TotalTokens))
	finish := ""
	if len(resp.Choices) > 0 {
		finish = string(resp.Choices[0].FinishReason)
	}
	c.log.Debug("llm: call", "model", req.Model, "response_model", resp.Model, "duration", time.Since(start),
		"attempts", attempts, "prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens,
		"total_tokens", u.TotalTokens, "finish_reason", finish)
	if len(resp.Choices) == 0 {
		return resp, c.fail(req, failure{kind: llm.ErrBadResponse, detail: "the response has no choices"}, attempts, nil)
	}
	var dropped []string
	for i := range resp.Choices {
		m := &resp.Choices[i].Message
		if resp.Choices[i].FinishReason != goopenai.FinishReasonLength {
			continue
		}
		for _, tc := range m.ToolCalls {
			dropped = append(dropped, tc.Function.Name)
		}
		if m.FunctionCall != nil {
			dropped = append(dropped, m.FunctionCall.Name)
		}
		m.ToolCalls, m.FunctionCall = nil, nil
	}
	if len(dropped) > 0 {
		c.truncated.Add(1)
		err := &Error{Kind: llm.ErrTruncated, Model: req.Model, BaseURL: c.shownURL, Attempts: attempts,
			Detail: fmt.Sprintf("dropped the unfinished call(s) %s without running them; ask for shorter arguments or raise the token limit",
				strings.Join(dropped, ", "))}
		c.log.Debug("llm: truncated tool calls", "model", req.Model, "dropped", dropped)
		return resp, err
	}
	return resp, nil
}

func (c *Client) fail(req goopenai.ChatCompletionRequest, f failure, attempts int, err error) error {
	c.failures.Add(1)
	e := &Error{Kind: f.kind, Model: req.Model, BaseURL: c.shownURL, StatusCode: f.status, Code: f.code,
		Attempts: attempts, Detail: f.detail, Cut: f.cut, NotOpenAI: f.notAPI}
	if err != nil && f.kind != llm.ErrResponseTooLarge { // its Detail says all the cause would, and no more
		e.Err = c.redact(err)
	}
	c.log.Debug("llm: call failed", "model", req.Model, "base_url", c.shownURL, "attempts", attempts, "error", e.Error())
	return e
}

// retryAfter reads how long the server asked to wait: retry-after-ms
// (milliseconds, sent by OpenAI), else Retry-After in seconds or as an HTTP
// date. ok is false when neither is present and valid.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return seconds(ms / 1000), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || math.IsNaN(secs) {
			return 0, false
		}
		return seconds(secs), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// seconds converts without overflowing: anything beyond ~292 years is
// capped at the largest Duration.
func seconds(s float64) time.Duration {
	if s*float64(time.Second) >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}

// backoff is the wait before retry number attempt (1-based): base·2^(n-1),
// at most backoffMax, scaled by a random factor in [0.5, 1).
func (c *Client) backoff(attempt int) time.Duration {
	d := backoffMax
	if attempt <= 10 {
		d = min(backoffBase<<(attempt-1), backoffMax)
	}
	r := min(max(c.rand(), 0), 1)
	return d/2 + time.Duration(r*float64(d/2))
}

// ProbeModels reports whether an OpenAI-compatible server answers at baseURL:
// it GETs baseURL/models (within 3 seconds, or ctx's deadline if sooner) and
// returns nil for HTTP 200 with a JSON model list ({"data": [...]}). Used to
// find a local Ollama at http://127.0.0.1:11434/v1. A nil client means
// http.DefaultClient. Errors wrap llm.ErrUnavailable.
func ProbeModels(ctx context.Context, client *http.Client, baseURL string) error {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	shown := displayURL(baseURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/models", nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w: bad base URL", shown, llm.ErrUnavailable)
	}
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w: %w", shown, llm.ErrUnavailable, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %w: GET /models answered %s", shown, llm.ErrUnavailable, res.Status)
	}
	var list struct {
		Data *[]json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&list); err != nil || list.Data == nil {
		return fmt.Errorf("probe %s: %w: GET /models answered 200 but not with an OpenAI model list", shown, llm.ErrUnavailable)
	}
	return nil
}
