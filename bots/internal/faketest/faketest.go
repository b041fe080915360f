package faketest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/agent/fake"
	"github.com/mnemo-agent/mnemo/bots/internal/fakewait"
)

// Listen starts h on 127.0.0.1 (never another address) and returns the
// running server; name prefixes the failure.
func Listen(tb fake.T, name string, h http.Handler) *httptest.Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("%s: listen: %v", name, err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	return srv
}

// Upgrade makes r a WebSocket connection unless the fake is closed (before
// or during the handshake). On success it returns with mu held, so the
// caller registers the connection before Close can miss it; on failure
// (the upgrader has answered, or the fake closed) it returns nil and mu is
// not held.
func Upgrade(w http.ResponseWriter, r *http.Request, up *websocket.Upgrader, mu *sync.Mutex, closed *bool) *websocket.Conn {
	mu.Lock()
	isClosed := *closed
	mu.Unlock()
	if isClosed {
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return nil
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	mu.Lock()
	if *closed {
		mu.Unlock()
		_ = ws.Close()
		return nil
	}
	return ws
}

// Faults queues canned failures (F) per route; its zero value is ready
// and it is safe for concurrent use.
type Faults[F any] struct {
	mu sync.Mutex
	q  map[string][]F
}

// Add queues f for the next n calls of route.
func (fs *Faults[F]) Add(route string, n int, f F) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.q == nil {
		fs.q = map[string][]F{}
	}
	for range n {
		fs.q[route] = append(fs.q[route], f)
	}
}

// Clear drops every queued failure.
func (fs *Faults[F]) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.q = nil
}

// Take consumes the next failure queued for key: for the route equal to
// key, or with prefix, for the longest route key starts with.
func (fs *Faults[F]) Take(key string, prefix bool) (F, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	best := key
	if prefix {
		best = ""
		for route, q := range fs.q {
			if len(q) > 0 && strings.HasPrefix(key, route) && len(route) >= len(best) {
				best = route
			}
		}
	}
	q := fs.q[best]
	if len(q) == 0 {
		var none F
		return none, false
	}
	fs.q[best] = q[1:]
	return q[0], true
}

// WaitRecords is WaitCount, then get() (called without mu) either way.
func WaitRecords[T any](c *fakewait.Changes, mu *sync.Mutex, errTimeout error, n int, timeout time.Duration, what string,
	count func() int, get func() []T) ([]T, error) {
	err := WaitCount(c, mu, errTimeout, n, timeout, what, count)
	return get(), err
}

// WaitCount waits (see fakewait.Changes.Wait) until count, called with mu
// held, reaches n; on a timeout the error wraps errTimeout and says how
// many of n came.
func WaitCount(c *fakewait.Changes, mu *sync.Mutex, errTimeout error, n int, timeout time.Duration, what string,
	count func() int) error {
	var got int
	if !c.Wait(mu, timeout, func() bool { got = count(); return got >= n }) {
		return fmt.Errorf("%w: %d of %d %s", errTimeout, got, n, what)
	}
	return nil
}

// Copy is a copy of *list taken under mu, each element passed through
// clone when not nil.
func Copy[T any](mu *sync.Mutex, list *[]T, clone func(T) T) []T {
	mu.Lock()
	defer mu.Unlock()
	out := append([]T(nil), *list...)
	if clone != nil {
		for i := range out {
			out[i] = clone(out[i])
		}
	}
	return out
}

// RandomHex is n random bytes, hex-encoded.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CloneValues is a deep copy of v (never nil).
func CloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Shutdown is a fake's Close, run once (later calls return at once): under
// mu it marks the fake closed, calls stop (which stops what the fake runs
// and returns the WebSocket connections to close) and wakes the waiters;
// then, without mu, it closes those connections, waits for the fake's
// goroutines and shuts srv down.
func Shutdown(mu *sync.Mutex, closed *bool, changes *fakewait.Changes, wg *sync.WaitGroup, srv *httptest.Server,
	stop func() []*websocket.Conn) {
	mu.Lock()
	if *closed {
		mu.Unlock()
		return
	}
	*closed = true
	conns := stop()
	changes.NotifyLocked()
	mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	wg.Wait()
	srv.Close()
}

// Positive sets *p to def unless it is above zero.
func Positive[T ~int | ~int64](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

// Locked is f's result, called with mu held.
func Locked[T any](mu *sync.Mutex, f func() T) T {
	mu.Lock()
	defer mu.Unlock()
	return f()
}

// Select is a copy of the records of list that keep accepts (nil when
// none), each passed through clone.
func Select[T any](list []T, keep func(T) bool, clone func(T) T) []T {
	var out []T
	for _, r := range list {
		if keep(r) {
			out = append(out, clone(r))
		}
	}
	return out
}

// ServeBody answers 200 with body as contentType, as a platform's file
// host does: with its Content-Length, or chunked (headers flushed first,
// no length) when chunked.
func ServeBody(w http.ResponseWriter, contentType string, body []byte, chunked bool) {
	w.Header().Set("Content-Type", contentType)
	if chunked {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	_, _ = w.Write(body)
}
