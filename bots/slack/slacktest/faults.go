package slacktest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Fault is a canned failure for one Web API call; see FailNext.
type Fault struct {
	status     int
	retryAfter time.Duration
	code       string
}

// RateLimited answers HTTP 429 with "Retry-After: S" (whole seconds, rounded
// up) and {"ok":false,"error":"ratelimited"}. slack-go returns
// *slack.RateLimitedError{RetryAfter: S seconds}.
func RateLimited(retryAfter time.Duration) Fault {
	return Fault{status: http.StatusTooManyRequests, retryAfter: retryAfter}
}

// APIError answers HTTP 200 {"ok":false,"error":code}, e.g.
// APIError("channel_not_found"). slack-go returns slack.SlackErrorResponse.
func APIError(code string) Fault {
	return Fault{status: http.StatusOK, code: code}
}

// HTTPError answers the given HTTP status with an HTML body, as Slack's
// front end does for 5xx. slack-go returns slack.StatusCodeError.
func HTTPError(status int) Fault {
	return Fault{status: status}
}

// String describes the fault.
func (f Fault) String() string {
	switch {
	case f.status == http.StatusTooManyRequests:
		return fmt.Sprintf("429 Retry-After %s", f.retryAfterHeader())
	case f.status == http.StatusOK:
		return "error " + f.code
	default:
		return fmt.Sprintf("HTTP %d", f.status)
	}
}

func (f Fault) retryAfterHeader() string {
	secs := int64((f.retryAfter + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(secs, 0), 10)
}

func (f Fault) result() apiResult {
	switch {
	case f.status == http.StatusTooManyRequests:
		return apiResult{
			status: f.status,
			header: http.Header{"Retry-After": {f.retryAfterHeader()}},
			body:   map[string]any{"ok": false, "error": "ratelimited"},
		}
	case f.status == http.StatusOK:
		return errResult(f.code)
	default:
		return apiResult{
			status: f.status,
			body:   map[string]any{"ok": false, "error": http.StatusText(f.status)},
			raw:    fmt.Sprintf("<html><body><h1>%d %s</h1></body></html>", f.status, http.StatusText(f.status)),
		}
	}
}

// FailNext makes the next call to method fail with f. Faults queue up: each
// call consumes one. Faults apply before the token check; use the method name
// exactly as in the URL ("apps.connections.open" included).
func (s *Server) FailNext(method string, f Fault) { s.FailNextN(method, 1, f) }

// FailNextN makes the next n calls to method fail with f.
func (s *Server) FailNextN(method string, n int, f Fault) { s.faults.Add(method, n, f) }

// ClearFaults drops every queued fault.
func (s *Server) ClearFaults() { s.faults.Clear() }
