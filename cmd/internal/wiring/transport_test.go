package wiring

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestModelTransportWritesARequestOnce: a request as large as a
// reflector's (22 KB) leaves in one write on the connection, headers and
// body together; Go's default buffer of 4 KB wrote it in two.
func TestModelTransportWritesARequestOnce(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		buffer int // 0: ModelTransport's
		writes int64
	}{{"ModelTransport", 0, 1}, {"Go's default buffer", 4 << 10, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var writes atomic.Int64
			tr := ModelTransport(1)
			defer tr.CloseIdleConnections()
			if tc.buffer > 0 {
				tr.WriteBufferSize = tc.buffer
			}
			dial := (&net.Dialer{}).DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{c, &writes}, nil
			}
			body := bytes.Repeat([]byte("x"), 22<<10)
			resp, err := (&http.Client{Transport: tr}).Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got.Load() != int64(len(body)) {
				t.Fatalf("the server read %d bytes of %d", got.Load(), len(body))
			}
			if n := writes.Load(); n != tc.writes {
				t.Errorf("the request took %d writes, want %d", n, tc.writes)
			}
		})
	}
}
