package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/text"
)

// Error is the error Complete returns. Kind is one of llm's Err* errors
// (the kinds of model failure), or context.Canceled or DeadlineExceeded when the caller's
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
	// Cut: a streamed reply broke off after some of its text was handed
	// on (Stream); the error then also wraps llm.ErrCut.
	Cut bool
	// NotOpenAI: the server answered GET /models with 404, 405 or 501 too,
	// so nothing at the base URL speaks the OpenAI API; the error then
	// also wraps ErrNotOpenAI.
	NotOpenAI bool
}

// ErrNotOpenAI is wrapped by an Error when nothing at the base URL speaks
// the OpenAI API (a wrong OPENAI_BASE_URL, or a web server that is no
// model server): retrying cannot fix it.
var ErrNotOpenAI = errors.New("nothing at the base URL speaks the OpenAI API")

func (e *Error) Error() string {
	var b strings.Builder
	model := e.Model
	if model == "" {
		model = "(no model)"
	}
	fmt.Fprintf(&b, "llm %s at %s: %v", model, text.RedactURLs(e.BaseURL), e.Kind)
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
	if e.Cut {
		b.WriteString(": " + llm.ErrCut.Error() + ", after its first words were shown")
	}
	if e.Err != nil {
		b.WriteString(": " + describe(e.Err))
	}
	return text.RedactURLs(b.String()) // the cause may name the URL too
}

// Unwrap gives Kind and Err to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := []error{e.Kind}
	if e.Cut {
		errs = append(errs, llm.ErrCut)
	}
	if e.NotOpenAI {
		errs = append(errs, ErrNotOpenAI)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
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

// failure is a classified failed attempt.
type failure struct {
	kind   error
	status int
	code   string
	retry  bool
	detail string
	cut    bool // after text was handed on: never retried
	notAPI bool // GET /models says nothing here speaks the OpenAI API
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
	var dnsErr *net.DNSError
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
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		// No such host: a typo in the address, which retrying cannot fix.
		return failure{kind: llm.ErrUnavailable, detail: "no such host: check the address"}
	case refusedOnLoopback(err):
		// Nothing listens on this machine: a server that is not started,
		// or a wrong port. Waiting for retries only delays saying so.
		return failure{kind: llm.ErrUnavailable, detail: "connection refused: nothing listens at that address on this machine; start the model server, or fix OPENAI_BASE_URL (llm.baseURL)"}
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return failure{kind: llm.ErrUnavailable, retry: true}
	case errors.Is(err, errNotStream):
		return failure{kind: llm.ErrBadResponse, detail: "the body is not a chat completion stream; " +
			"for a server that does not stream, set llm.stream: false"}
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
	case status == http.StatusNotImplemented || status == http.StatusHTTPVersionNotSupported:
		// A web server that does not do this request: retrying cannot fix it.
		f.kind = llm.ErrBadRequest
	case status >= 500:
		f.kind, f.retry = llm.ErrUnavailable, true
	case status == 0 && errType == "server_error":
		// An error event in the middle of a stream has no status of its own.
		f.kind, f.retry = llm.ErrUnavailable, true
	case status == 0:
		f.kind = llm.ErrBadResponse
	default:
		f.kind = llm.ErrBadRequest
	}
	return f
}

// refusedOnLoopback reports whether err is a connection refused by this
// machine (a loopback address): final, unlike a refusal from a remote
// server that may be restarting behind a load balancer.
func refusedOnLoopback(err error) bool {
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "dial" || !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	addr, ok := opErr.Addr.(*net.TCPAddr)
	return ok && addr.IP.IsLoopback()
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

// notHere reports whether status says the request's path or method is not
// served at all (404, 405, 501): a wrong base URL or a server that is no
// model server, which GET /models tells apart from an unknown model.
func notHere(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// checkAPI asks GET /models once (not retried, within probeTimeout) after
// a request was answered as if nothing served it: when /models is not
// served either, nothing at the base URL speaks the OpenAI API, and f says
// so; else f is unchanged (a 404 is then about the model).
func (c *Client) checkAPI(ctx context.Context, f failure) failure {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := c.client.ListModels(ctx)
	if err == nil {
		return f
	}
	if g := c.classify(err); notHere(g.status) {
		f.notAPI = true
		f.detail = fmt.Sprintf("nothing at %s speaks the OpenAI API (GET /models answered HTTP %d too); "+
			"set OPENAI_BASE_URL (llm.baseURL) to an OpenAI-compatible server's API base, which usually ends in /v1", c.shownURL, g.status)
	}
	return f
}
