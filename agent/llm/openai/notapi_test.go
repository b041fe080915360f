package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

// TestNotAnOpenAIServer: a base URL where nothing speaks the OpenAI API (a
// 404 on every path, a web server answering 501) fails at once, saying so
// and naming OPENAI_BASE_URL; a 404 from a server whose GET /models works
// is about the model, and is said as before. None is retried.
func TestNotAnOpenAIServer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		chat       int // status of /chat/completions
		models     int // status of /models
		notOpenAI  bool
		wantDetail string
	}{
		{"404 everywhere", 404, 404, true, "GET /models answered HTTP 404 too"},
		{"501 web server", 501, 501, true, "GET /models answered HTTP 501 too"},
		{"405 on chat, 404 on models", 405, 404, true, "speaks the OpenAI API"},
		{"501 on chat, models served", 501, 200, false, ""},
		{"unknown model", 404, 200, false, ""},
		{"models fails otherwise", 404, 500, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/models") && tc.models == 200:
					fmt.Fprint(w, `{"object":"list","data":[{"id":"m1","object":"model"}]}`)
				case strings.HasSuffix(r.URL.Path, "/models"):
					http.Error(w, "no", tc.models)
				default:
					http.Error(w, "<html>not here</html>", tc.chat)
				}
			}))
			defer srv.Close()
			sleeps := 0
			c := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: 3,
				Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }})
			for _, stream := range []bool{false, true} {
				var err error
				req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
				if stream {
					_, err = c.Stream(context.Background(), req, func(string) error { return nil })
				} else {
					_, err = c.Complete(context.Background(), req)
				}
				var oe *Error
				if !errors.As(err, &oe) || oe.Attempts != 1 || sleeps != 0 {
					t.Fatalf("stream %v: %v after %d sleeps; want one attempt", stream, err, sleeps)
				}
				if errors.Is(err, ErrNotOpenAI) != tc.notOpenAI {
					t.Errorf("stream %v: ErrNotOpenAI %v, want %v: %v", stream, errors.Is(err, ErrNotOpenAI), tc.notOpenAI, err)
				}
				if tc.notOpenAI && (!strings.Contains(err.Error(), tc.wantDetail) || !strings.Contains(err.Error(), "OPENAI_BASE_URL")) {
					t.Errorf("stream %v: %v; want %q and OPENAI_BASE_URL", stream, err, tc.wantDetail)
				}
			}
		})
	}
}
