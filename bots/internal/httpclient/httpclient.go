package httpclient

import (
	"net/http"
	"time"
)

// MaxIdleConnsPerHost is how many idle connections an adapter keeps to its
// platform: Go's default of 2 makes a busy bot open a new connection for
// most REST calls (about 1,130 for 2,000 calls in the Discord load run).
const MaxIdleConnsPerHost = 64

// New is the HTTP client an adapter uses when none is given: Go's default
// transport, keeping enough idle connections to reuse them under load,
// and timeout per request.
func New(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return &http.Client{Timeout: timeout, Transport: t}
}

// Or is c, or New(timeout) when c is nil. done closes the idle
// connections of the client Or made when the adapter stops; a client
// given is the caller's, and done leaves it alone.
func Or(c *http.Client, timeout time.Duration) (client *http.Client, done func()) {
	if c != nil {
		return c, func() {}
	}
	c = New(timeout)
	return c, c.CloseIdleConnections
}
