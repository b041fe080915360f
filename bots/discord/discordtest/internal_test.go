package discordtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("panic %v, want %q", r, want)
		}
	}()
	f()
}

func TestInternals(t *testing.T) {
	mustPanic(t, "cannot encode chan int", func() { mustJSON(make(chan int)) })

	if !SnowflakeTime("x").IsZero() {
		t.Fatal("SnowflakeTime of a bad id")
	}
	if snowflakeAt(time.Unix(0, 0)) != workerBits {
		t.Fatal("snowflakeAt before the Discord epoch")
	}
	for _, tc := range []struct {
		a, b string
		less bool
	}{{"9", "10", true}, {"10", "9", false}, {"x", "yy", true}, {"b", "a", false}} {
		if snowflakeLess(tc.a, tc.b) != tc.less {
			t.Fatalf("snowflakeLess(%q, %q)", tc.a, tc.b)
		}
	}

	srv := New(t, Options{})
	srv.Close()
	srv.Close() // idempotent
	rec := httptest.NewRecorder()
	srv.serveGateway(rec, httptest.NewRequest(http.MethodGet, "/gateway", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("gateway after Close: %d", rec.Code)
	}
	c := &conn{wake: make(chan struct{}, 1)}
	c.stopLocked()
	c.enqueue(outFrame{data: []byte("{}")})
	if len(c.queue) != 0 {
		t.Fatal("enqueued on a stopped connection")
	}
}
