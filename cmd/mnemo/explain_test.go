package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestChatErrorGolden: a piped chat whose model fails says, on stdout in
// the conversation, the cause and the fix, and exits 1. The address
// differs per run, so it is written as URL in the golden files.
func TestChatErrorGolden(t *testing.T) {
	wd, err := os.Getwd() // the tests below move to a temporary folder
	if err != nil {
		t.Fatal(err)
	}
	// Web servers that are no model server: one answers 404 on every path
	// (a wrong base URL), one 501 (a server that does not do POST).
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	notImpl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Not Implemented", http.StatusNotImplemented)
	}))
	defer notImpl.Close()
	for _, tc := range []struct {
		name  string
		reply openaitest.Reply
		setup func(w *chatWorld)
	}{
		{name: "401", reply: openaitest.Error(401, "invalid_api_key", "Incorrect API key provided: sk-test****3456")},
		{name: "404-model", reply: openaitest.Error(404, "model_not_found", "The model `gpt-4o-mini` does not exist"),
			setup: func(w *chatWorld) { w.srv.SetModels("qwen3", "llama3.2") }},
		{name: "429", reply: openaitest.Error(429, "rate_limit_exceeded", "Rate limit reached")},
		{name: "quota", reply: openaitest.Error(429, "insufficient_quota", "You exceeded your current quota")},
		{name: "no-stream", reply: openaitest.Raw(200, "application/json",
			`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)},
		{name: "404-everywhere", setup: func(w *chatWorld) { w.env["OPENAI_BASE_URL"] = notFound.URL + "/v1" }},
		{name: "501", setup: func(w *chatWorld) { w.env["OPENAI_BASE_URL"] = notImpl.URL + "/v1" }},
		{name: "refused", setup: func(w *chatWorld) {
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			w.env["OPENAI_BASE_URL"] = "http://" + ln.Addr().String() + "/v1"
			ln.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newChatWorld(t)
			// No retries: the answer comes at once (retries are the client's tests).
			os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("llm:\n  maxRetries: "+retries(tc.name)+"\n"), 0o600)
			w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
				if strings.Contains(r.System(), "memory reflector") {
					return openaitest.Text("nothing to remember"), true
				}
				return tc.reply, true
			})
			if tc.setup != nil {
				tc.setup(w)
			}
			r := w.chat(t, "hello\n")
			got := fmt.Sprintf("exit %d\n%s", r.code, strings.ReplaceAll(r.stdout, strings.TrimSuffix(w.env["OPENAI_BASE_URL"], "/v1"), "URL"))
			golden := filepath.Join(wd, "testdata", "chat-errors", tc.name+".txt")
			if *updateGolden {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				os.WriteFile(golden, []byte(got), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("piped chat:\n%s\nwant (%s):\n%s", got, golden, want)
			}
			if !strings.Contains(r.stderr, "mnemo: 1 message(s) could not be answered; the replies say why") || strings.Contains(r.stdout+r.stderr, "sk-test-key-123456") {
				t.Errorf("stderr: %s", r.stderr)
			}
		})
	}
}

// retries is llm.maxRetries for a case: none, but for the servers that are
// no model server, whose answer must come at once all the same.
func retries(name string) string {
	if name == "404-everywhere" || name == "501" {
		return "3"
	}
	return "0"
}
