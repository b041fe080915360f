package openai

import (
	"context"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// BenchmarkReply30Words is one 30-word reply from the fake on 127.0.0.1,
// whole (Complete) or streamed a word per chunk (Stream): the client's
// cost of streaming (the fake's own work is in the figures too).
func BenchmarkReply30Words(b *testing.B) {
	text := strings.TrimSpace(strings.Repeat("word ", 30))
	for _, mode := range []string{"complete", "stream"} {
		b.Run(mode, func(b *testing.B) {
			srv := openaitest.New(b)
			reply := openaitest.Text(text)
			if mode == "stream" {
				reply = reply.WithWordDelay(1) // a word per chunk
			}
			srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { srv.DiscardRequests(); return reply, true })
			c := New(Config{BaseURL: srv.URL()})
			req := userRequest("hi")
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if mode == "stream" {
					_, err = c.Stream(context.Background(), req, func(string) error { return nil })
				} else {
					_, err = c.Complete(context.Background(), req)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
