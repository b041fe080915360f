package discordtest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Fault is a canned failure for one REST call; see FailNext.
type Fault struct {
	status     int
	code       int
	message    string
	retryAfter time.Duration
	global     bool
}

// RateLimited answers HTTP 429 as Discord does: body {"message":"You are
// being rate limited.","retry_after":1.5,"global":false,"code":0} and headers
// Retry-After (whole seconds, rounded up), X-RateLimit-Limit,
// X-RateLimit-Remaining: 0, X-RateLimit-Reset, X-RateLimit-Reset-After,
// X-RateLimit-Bucket, X-RateLimit-Scope ("user" or "global") and, when
// global, X-RateLimit-Global: true. discordgo (ShouldRetryOnRateLimit, the
// default) sleeps retry_after and sends the request again.
func RateLimited(retryAfter time.Duration, global bool) Fault {
	return Fault{status: http.StatusTooManyRequests, message: "You are being rate limited.",
		retryAfter: retryAfter, global: global}
}

// HTTPError answers status with Discord's JSON error body
// {"message":message,"code":code}, e.g. HTTPError(403, 50013, "Missing
// Permissions"). discordgo returns a *discordgo.RESTError whose Message has
// the code (but retries a 502 up to MaxRestRetries times first).
func HTTPError(status, code int, message string) Fault {
	return Fault{status: status, code: code, message: message}
}

// String describes the fault.
func (f Fault) String() string {
	if f.status == http.StatusTooManyRequests {
		scope := "route"
		if f.global {
			scope = "global"
		}
		return fmt.Sprintf("429 %s retry after %s", scope, f.retryAfter)
	}
	return fmt.Sprintf("HTTP %d code %d %q", f.status, f.code, f.message)
}

func (f Fault) result(now time.Time) result {
	if f.status != http.StatusTooManyRequests {
		return apiError(f.status, f.code, f.message)
	}
	secs := math.Round(f.retryAfter.Seconds()*1000) / 1000
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(secs)), 10))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", formatEpoch(now.Add(f.retryAfter)))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Scope", "user")
	if f.global {
		h.Set("X-RateLimit-Global", "true")
		h.Set("X-RateLimit-Scope", "global")
	}
	return result{status: f.status, header: h, body: map[string]any{
		"message": f.message, "retry_after": secs, "global": f.global, "code": 0}}
}

func formatEpoch(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// FailNext makes the next REST call matching route fail with f. route is
// "METHOD /api/v9/path", matched as a prefix of the request's method and
// path ("POST /api/v9/channels/" matches every message post). Faults queue
// up, each call consuming one; the longest matching route wins. Faults apply
// before the Authorization check.
func (s *Server) FailNext(route string, f Fault) { s.FailNextN(route, 1, f) }

// FailNextN makes the next n calls matching route fail with f.
func (s *Server) FailNextN(route string, n int, f Fault) { s.faults.Add(route, n, f) }

// ClearFaults drops every queued REST and IDENTIFY fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.Clear()
	s.identifyFaults = nil
}
