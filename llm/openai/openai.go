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

	"github.com/mnemo-agent/mnemo/llm"
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

// Error is the error Complete returns. Kind is one of the Err* sentinels
// above, or context.Canceled / context.DeadlineExceeded when the caller's
// context ended; Err is the last underlying error. The message names the
// model and the base URL (without credentials or query), never the API key.
type Error struct {
	Kind       error
	Model      string
	BaseURL    string
	StatusCode int    // HTTP status of the last attempt; 0 when there was none
	Code       string // OpenAI error code of the last attempt, e.g. "rate_limit_exceeded"
	Attempts   int    // HTTP attempts made
	Detail     string // extra explanation, e.g. an over-long Retry-After
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	model := e.Model
	if model == "" {
		model = "(no model)"
	}
	fmt.Fprintf(&b, "llm %s at %s: %v", model, llm.RedactURLs(e.BaseURL), e.Kind)
	var facts []string
	if e.StatusCode != 0 {
		facts = append(facts, "HTTP "+strconv.Itoa(e.StatusCode))
	}
	if e.Code != "" {
		facts = append(facts, "code "+e.Code)
	}
	if e.Attempts > 1 {
		facts = append(facts, strconv.Itoa(e.Attempts)+" attempts")
	}
	if len(facts) > 0 {
		b.WriteString(" (" + strings.Join(facts, ", ") + ")")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + describe(e.Err))
	}
	return llm.RedactURLs(b.String()) // the cause may name the URL too
}

// Unwrap gives Kind and Err to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// describe renders go-openai's errors without their repetition of the
// status, and shortens a proxy's HTML page.
func describe(err error) string {
	if r, ok := err.(redacted); ok {
		return strings.ReplaceAll(describe(r.err), r.secret, "[REDACTED]")
	}
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &reqErr):
		body := strings.Join(strings.Fields(string(reqErr.Body)), " ")
		if len(body) > 200 {
			body = body[:200] + "…"
		}
		return fmt.Sprintf("server answered %q: %s", reqErr.HTTPStatus, body)
	case errors.As(err, &apiErr):
		return "server said: " + apiErr.Message
	}
	return err.Error()
}

// redacted hides an API key that an error text might echo.
type redacted struct {
	err    error
	secret string
}

func (r redacted) Error() string { return strings.ReplaceAll(r.err.Error(), r.secret, "[REDACTED]") }
func (r redacted) Unwrap() error { return r.err }

// Config configures an LLM. Only BaseURL and APIKey matter in production;
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

// Usage is a snapshot of an LLM's cumulative counters.
type Usage struct {
	Calls            int64 // Complete calls
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	Retries          int64 // attempts beyond the first of each call
	Failures         int64 // calls that returned an error other than llm.ErrTruncated
	Truncated        int64 // calls that returned llm.ErrTruncated
}

// LLM is a chat completion client for an OpenAI-compatible server with
// retries, per-attempt timeouts, error classification and token counting.
// It is safe for concurrent use.
type Client struct {
	client        *goopenai.Client
	baseURL       string // as configured, for requests
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
	}
	if c.baseURL == "" {
		c.baseURL = DefaultBaseURL
	}
	c.shownURL = displayURL(c.baseURL)
	if c.timeout <= 0 {
		c.timeout = defaultLLMTimeout
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = defaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.maxRetryAfter <= 0 {
		c.maxRetryAfter = defaultMaxRetryAfter
	}
	if c.maxResponse <= 0 {
		c.maxResponse = DefaultMaxResponseBytes
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
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

// limitTransport hands go-openai response bodies that end with
// llm.ErrResponseTooLarge once more than limit bytes are read, so a runaway
// server cannot make the client buffer gigabytes.
type limitTransport struct {
	base  http.RoundTripper // nil → http.DefaultTransport
	limit int64
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	res.Body = &limitedBody{rc: res.Body, left: t.limit, limit: t.limit, tooLong: res.ContentLength > t.limit}
	return res, nil
}

// limitedBody reads at most limit bytes of rc; reading past them (or any
// of a body whose Content-Length already says it is longer) fails with
// llm.ErrResponseTooLarge.
type limitedBody struct {
	rc          io.ReadCloser
	left, limit int64
	tooLong     bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.tooLong {
		return 0, b.tooLarge()
	}
	if b.left <= 0 {
		// At the limit: the body may end here, or go on.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.tooLong = true
			return 0, b.tooLarge()
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

func (b *limitedBody) tooLarge() error { return tooLargeError(b.limit) }

// tooLargeError is what a response over limit bytes fails with.
func tooLargeError(limit int64) error {
	return fmt.Errorf("%w: it is larger than llm.maxResponseBytes (%d bytes); raise it or check OPENAI_BASE_URL",
		llm.ErrResponseTooLarge, limit)
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

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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

// failure is a classified failed attempt.
type failure struct {
	kind   error
	status int
	code   string
	retry  bool
	detail string
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
	if u, err := url.Parse(c.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// go-openai appends "/chat/completions" to the base URL as a string,
		// so a query or fragment would swallow the path.
		return goopenai.ChatCompletionResponse{}, c.fail(req, failure{kind: llm.ErrBadRequest,
			detail: "the base URL must be an http(s) URL without query or fragment (set OPENAI_BASE_URL or llm.baseURL)"}, 0, nil)
	}
	for attempt := 1; ; attempt++ {
		resp, timedOut, err := c.attempt(ctx, req)
		if err == nil {
			return c.succeed(req, resp, attempt, start)
		}
		f := c.classify(err)
		switch {
		case ctx.Err() != nil:
			f.kind, f.retry = ctx.Err(), false
		case timedOut:
			f = failure{kind: llm.ErrUnavailable, retry: true, detail: fmt.Sprintf("attempt timed out after %v", c.timeout)}
		}
		if !f.retry || attempt > c.maxRetries {
			return goopenai.ChatCompletionResponse{}, c.fail(req, f, attempt, err)
		}
		delay, fromServer := retryAfter(resp.Header(), c.now())
		if fromServer && delay > c.maxRetryAfter {
			f.detail = fmt.Sprintf("the server asked to retry after %v, longer than the %v this client waits", delay, c.maxRetryAfter)
			return goopenai.ChatCompletionResponse{}, c.fail(req, f, attempt, err)
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
			return goopenai.ChatCompletionResponse{}, c.fail(req, failure{kind: serr, status: f.status, code: f.code}, attempt, err)
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
		Attempts: attempts, Detail: f.detail}
	if err != nil && f.kind != llm.ErrResponseTooLarge { // its Detail says all the cause would, and no more
		e.Err = c.redact(err)
	}
	c.log.Debug("llm: call failed", "model", req.Model, "base_url", c.shownURL, "attempts", attempts, "error", e.Error())
	return e
}

func (c *Client) redact(err error) error {
	if len(c.apiKey) < minRedactLen || !strings.Contains(err.Error(), c.apiKey) {
		return err
	}
	return redacted{err: err, secret: c.apiKey}
}

// classify sorts a failed attempt's error.
func (c *Client) classify(err error) failure {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, llm.ErrResponseTooLarge): // before the transport errors: go-openai may wrap it
		return failure{kind: llm.ErrResponseTooLarge, detail: fmt.Sprintf(
			"it is larger than llm.maxResponseBytes (%d bytes); raise it or check OPENAI_BASE_URL", c.maxResponse)}
	case errors.As(err, &reqErr): // a non-JSON error body (it may wrap a partial APIError)
		code := ""
		if errors.As(err, &apiErr) {
			code = codeString(apiErr.Code)
		}
		return classifyStatus(reqErr.HTTPStatusCode, code, "")
	case errors.As(err, &apiErr):
		return classifyStatus(apiErr.HTTPStatusCode, codeString(apiErr.Code), apiErr.Type)
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return failure{kind: llm.ErrUnavailable, retry: true}
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		return failure{kind: llm.ErrBadResponse, detail: "the body is not a chat completion"}
	}
	// go-openai's own checks (unsupported model for this endpoint, reasoning
	// model parameters, Content and MultiContent both set) and the like.
	return failure{kind: llm.ErrBadRequest, detail: "the request was not sent"}
}

func classifyStatus(status int, code, errType string) failure {
	f := failure{status: status, code: code}
	switch {
	case code == "insufficient_quota" || errType == "insufficient_quota":
		f.kind = llm.ErrQuota
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		f.kind = llm.ErrAuth
	case code == "context_length_exceeded":
		f.kind = llm.ErrContextLength
	case status == http.StatusTooManyRequests:
		f.kind, f.retry = llm.ErrRateLimited, true
	case status >= 500:
		f.kind, f.retry = llm.ErrUnavailable, true
	case status == 0:
		f.kind = llm.ErrBadResponse
	default:
		f.kind = llm.ErrBadRequest
	}
	return f
}

// codeString renders APIError.Code, which go-openai decodes as a string or
// an int (and a JSON null as the int 0).
func codeString(code any) string {
	switch v := code.(type) {
	case nil:
		return ""
	case string:
		return v
	case int:
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	return fmt.Sprint(code)
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
