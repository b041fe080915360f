package httpclient

import (
	"net/http"
	"testing"
	"time"
)

func TestNewHTTPClient(t *testing.T) {
	c := New(time.Second)
	tr, ok := c.Transport.(*http.Transport)
	if !ok || c.Timeout != time.Second || tr.MaxIdleConnsPerHost != MaxIdleConnsPerHost || tr.Proxy == nil {
		t.Errorf("client %+v, transport %+v", c, tr)
	}
	if tr == http.DefaultTransport {
		t.Error("the default transport itself is shared and changed")
	}
}

// TestOr: a client given is used as it is, and done leaves its
// connections alone; without one, Or makes one whose idle connections
// done closes.
func TestOr(t *testing.T) {
	own := &http.Client{}
	if c, done := Or(own, time.Second); c != own || done == nil {
		t.Fatal("the given HTTP client was replaced")
	} else {
		done()
	}
	c, done := Or(nil, 7*time.Second)
	if c == nil || c.Timeout != 7*time.Second {
		t.Fatalf("client %+v", c)
	}
	done() // closes the idle connections: nothing to close yet
}
