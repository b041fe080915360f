package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// hugeServer answers every request with status and a body of size bytes,
// written in 64 KiB chunks from one buffer (so the server allocates next
// to nothing), with or without a Content-Length. It counts the requests.
func hugeServer(t *testing.T, status int, size int64, withLength bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	prefix := []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if withLength {
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		}
		w.WriteHeader(status)
		if _, err := w.Write(prefix); err != nil {
			return
		}
		for left := size - int64(len(prefix)); left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				return // the client stopped reading
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// A model server sending 64 MiB gets the call failed after 1 MiB, with
// ErrResponseTooLarge, without a retry, and without the client holding
// the body: it allocates a small fraction of it.
func TestResponseTooLarge(t *testing.T) {
	const body, limit = 64 << 20, 1 << 20
	tests := []struct {
		name       string
		status     int
		withLength bool
	}{
		{"200 streamed", http.StatusOK, false},
		{"500 streamed", http.StatusInternalServerError, false}, // a 5xx would be retried, but not this
		{"200 with Content-Length", http.StatusOK, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := hugeServer(t, tt.status, body, tt.withLength)
			sl := &llmSleeps{}
			llm := New(Config{BaseURL: srv.URL + "/v1", MaxResponseBytes: limit, Sleep: sl.sleep})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := llm.complete(context.Background(), llmRequest("hi"))
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > body/8 {
				t.Errorf("allocated %d bytes for a %d-byte body with the limit at %d", alloc, body, limit)
			}
			if !errors.Is(err, ErrResponseTooLarge) {
				t.Fatalf("err = %v, want ErrResponseTooLarge", err)
			}
			want := "the model server's response is too large: it is larger than llm.maxResponseBytes (1048576 bytes); raise it or check OPENAI_BASE_URL"
			if !strings.HasSuffix(err.Error(), want) || strings.Count(err.Error(), "too large") != 1 {
				t.Errorf("err = %q\nwant it to end %q", err, want)
			}
			if n := requests.Load(); n != 1 || len(sl.get()) != 0 {
				t.Errorf("%d requests, sleeps %v: a response too large must not be retried", n, sl.get())
			}
			if u := llm.Usage(); u.Failures != 1 || u.Retries != 0 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}

// The limit is exact: a body of limit bytes is read, one byte more is not,
// streamed or with a Content-Length, a completion or an error.
func TestResponseLimitExact(t *testing.T) {
	bodies := map[int]string{
		http.StatusOK:         `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"exact"}}]}`,
		http.StatusBadRequest: `{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}`,
	}
	for status, body := range bodies {
		for _, withLength := range []bool{false, true} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				w.WriteHeader(status)
				if !withLength {
					w.(http.Flusher).Flush() // chunked: no length known up front
				}
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			// A client without a Transport of its own: http.DefaultTransport.
			hc := &http.Client{}
			for _, limit := range []int64{int64(len(body)), int64(len(body)) - 1} {
				llm := New(Config{BaseURL: srv.URL, HTTPClient: hc, MaxResponseBytes: limit, MaxRetries: -1})
				resp, err := llm.complete(context.Background(), llmRequest("hi"))
				fits := limit == int64(len(body))
				switch {
				case fits && status == http.StatusOK && (err != nil || resp.Choices[0].Message.Content != "exact"):
					t.Errorf("status %d, length %v, limit %d = body: %v %+v", status, withLength, limit, err, resp)
				case fits && status != http.StatusOK && (!errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "no such model")):
					t.Errorf("status %d, length %v, limit %d = body: %v", status, withLength, limit, err)
				case !fits && !errors.Is(err, ErrResponseTooLarge):
					t.Errorf("status %d, length %v, limit %d < body: err = %v", status, withLength, limit, err)
				}
			}
			if hc.Transport != nil {
				t.Error("NewLLM changed the caller's http.Client")
			}
		}
	}
}

// limitedBody on its own, with a reader that reports the end only when
// asked again (as a socket may).
func TestLimitedBody(t *testing.T) {
	for _, tt := range []struct {
		body  string
		limit int64
		ok    bool
	}{{"abc", 3, true}, {"abc", 4, true}, {"abcd", 3, false}, {"", 0, true}, {"a", 0, false}} {
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tt.body)), left: tt.limit, limit: tt.limit}
		got, err := io.ReadAll(b)
		if tt.ok && (err != nil || string(got) != tt.body) || !tt.ok && !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("%q with limit %d: %q, %v", tt.body, tt.limit, got, err)
		}
		if _, err := b.Read(make([]byte, 1)); !tt.ok && !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("%q with limit %d: read after the error: %v", tt.body, tt.limit, err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}
}

// Through the scripted server: the default limit lets ordinary replies
// through; a small one stops a long reply, at the first attempt.
func TestResponseLimitScripted(t *testing.T) {
	llm, srv, sl := llmFixture(t, nil)
	srv.Enqueue(openaitest.Text(strings.Repeat("x", 100_000)))
	if _, err := llm.complete(context.Background(), llmRequest("hi")); err != nil {
		t.Fatalf("a 100 KB reply under the default limit: %v", err)
	}
	if llm.maxResponse != DefaultMaxResponseBytes || DefaultMaxResponseBytes != 4194304 {
		t.Errorf("default limit %d", llm.maxResponse)
	}

	llm, srv, sl = llmFixture(t, func(c *Config) { c.MaxResponseBytes = 1024 })
	srv.Enqueue(openaitest.Text(strings.Repeat("x", 5000)), openaitest.Text("short"))
	_, err := llm.complete(context.Background(), llmRequest("hi"))
	var le *Error
	if !errors.As(err, &le) || le.Kind != ErrResponseTooLarge || le.Attempts != 1 || le.Err != nil ||
		!strings.Contains(err.Error(), "(1024 bytes)") {
		t.Fatalf("err = %#v", err)
	}
	if len(srv.Requests()) != 1 || len(sl.get()) != 0 || srv.Pending() != 1 {
		t.Errorf("%d requests, sleeps %v: retried", len(srv.Requests()), sl.get())
	}
}
