package openai

import (
	"fmt"
	"io"
	"net/http"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

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
	if sink, ok := req.Context().Value(headerSinkKey{}).(*headerSink); ok {
		sink.header = res.Header
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

// headerSink keeps the response headers of a streamed attempt: go-openai
// drops the response of a stream that failed with an HTTP error, and with
// it the Retry-After a 429 sent.
type headerSink struct{ header http.Header }

type headerSinkKey struct{}
