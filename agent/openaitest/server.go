package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/fake"
)

// DefaultModel is the model GET /v1/models lists until SetModels changes it,
// and the model a response names when the request named none.
const DefaultModel = "openaitest-model"

// ScriptExhaustedCode is the error code of the HTTP 500 the server answers
// when neither the handler nor the queue has a reply for a request.
const ScriptExhaustedCode = "openaitest_script_exhausted"

// maxBody bounds how much of a request body the server reads.
const maxBody = 32 << 20

// Finish reasons a reply may give (see Reply.WithFinishReason).
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length" // cut off at the token limit
)

// Request is one recorded chat completion request.
type Request struct {
	Seq    int         // 1 for the first request the server got, then 2, ...
	Method string      // always POST for a chat completion that was answered
	Path   string      // "/v1/chat/completions"
	Header http.Header // as received, e.g. Authorization: Bearer ...
	Body   []byte      // the raw body
	// Chat is Body decoded. It is the zero value when DecodeErr is set.
	Chat      ChatRequest
	DecodeErr error
}

// System is the text of the first system (or developer) message, or "".
func (r Request) System() string {
	for _, m := range r.Chat.Messages {
		if m.Role == "system" || m.Role == "developer" {
			return messageText(m)
		}
	}
	return ""
}

// LastUser is the text of the last user message, or "".
func (r Request) LastUser() string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == "user" {
			return messageText(m)
		}
	}
	return ""
}

// ToolNames lists the names of the function tools the request offers.
func (r Request) ToolNames() []string {
	var names []string
	for _, t := range r.Chat.Tools {
		if t.Function != nil {
			names = append(names, t.Function.Name)
		}
	}
	return names
}

func messageText(m Message) string {
	if len(m.MultiContent) == 0 {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.MultiContent {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (r Request) clone() Request {
	r.Header = r.Header.Clone()
	r.Body = append([]byte(nil), r.Body...)
	return r
}

// Handler decides the reply to a request. It returns ok=false to leave the
// request to the queue. It runs on the server's goroutine for that request,
// possibly concurrently with itself, and may call the Server's methods.
type Handler func(r Request) (reply Reply, ok bool)

// Server is a scripted OpenAI-compatible HTTP server on 127.0.0.1. Its
// methods are safe for concurrent use.
type Server struct {
	t       fake.T
	srv     *httptest.Server
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex
	queue    []Reply
	handler  Handler
	requests []Request
	changed  chan struct{} // closed and replaced whenever a request is recorded or a chat handler returns
	models   []string
	callSeq  int
	respSeq  int
	inflight int // chat handlers running, for tests of the delay
	chunks   []Chunk
	pauses   int // streams that held (WithPauseAfter) so far
	resumes  int // Resume calls so far
}

// Chunk is one server-sent event of a streamed reply, as the server sent
// it (written and flushed).
type Chunk struct {
	Request int       // Seq of the request it answers
	N       int       // 1 for the first event of that reply, then 2, ...
	Time    time.Time // when it was flushed
	Text    string    // the text it carried ("" for the role, tool-call, finish and usage chunks)
	Kind    string    // "text", "role", "tool_call", "finish", "usage", "error", "done" or "cut"
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(t fake.T) *Server {
	t.Helper()
	s := &Server{
		t:       t,
		closing: make(chan struct{}),
		changed: make(chan struct{}),
		models:  []string{DefaultModel},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.serveChat)
	mux.HandleFunc("/v1/models", s.serveModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("openaitest: no route for %s %s", r.Method, r.URL.Path))
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to give an OpenAI client, e.g.
// "http://127.0.0.1:40123/v1".
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server, ending any reply still waiting out its delay. It
// is called by the test's cleanup and may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// Enqueue appends replies to the script; each chat completion request the
// handler does not answer takes the first one left.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Pending is how many queued replies have not been used yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Handle installs h, which sees every request before the queue does; nil
// removes it.
func (s *Server) Handle(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// SetModels sets the model ids GET /v1/models lists.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), ids...)
}

// Requests returns a copy of the chat completion requests received so far,
// in the order they arrived.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyRequests()
}

func (s *Server) copyRequests() []Request {
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// WaitRequests waits until at least n chat completion requests have arrived
// and returns a copy of all of them. When that takes longer than timeout it
// fails the test with t.Fatalf, so call it from the test's goroutine.
func (s *Server) WaitRequests(n int, timeout time.Duration) []Request {
	s.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			defer s.mu.Unlock()
			return s.copyRequests()
		}
		got, changed := len(s.requests), s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			s.t.Fatalf("openaitest: waited %v for %d requests, got %d", timeout, n, got)
			return nil
		}
	}
}

// Chunks returns a copy of the events sent in streamed replies so far, in
// the order they were sent.
func (s *Server) Chunks() []Chunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Chunk(nil), s.chunks...)
}

// WaitChunks waits until at least n events of streamed replies were sent
// and returns a copy of all of them; past timeout it fails the test (from
// the test's goroutine).
func (s *Server) WaitChunks(n int, timeout time.Duration) []Chunk {
	s.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.chunks) >= n {
			defer s.mu.Unlock()
			return append([]Chunk(nil), s.chunks...)
		}
		got, changed := len(s.chunks), s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			s.t.Fatalf("openaitest: waited %v for %d stream chunks, got %d", timeout, n, got)
			return nil
		}
	}
}

// Resume lets one stream held by WithPauseAfter go on: the first that
// held, or will hold, then the next.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resumes++
	s.notify()
}

// notify wakes whoever waits for a change; s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// pause holds a stream until Resume lets it go (or the request or the
// server ends: false).
func (s *Server) pause(done <-chan struct{}) bool {
	s.mu.Lock()
	s.pauses++
	ticket := s.pauses
	s.notify()
	for s.resumes < ticket {
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-done:
			return false
		case <-s.closing:
			return false
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return true
}

// WaitPaused waits until at least n streams have held at WithPauseAfter
// (counting those already let go); past timeout it fails the test (from
// the test's goroutine).
func (s *Server) WaitPaused(n int, timeout time.Duration) {
	s.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, changed := s.pauses, s.changed
		s.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			s.t.Fatalf("openaitest: waited %v for %d paused streams, got %d", timeout, n, got)
			return
		}
	}
}

// Paused is how many streams have held at WithPauseAfter so far.
func (s *Server) Paused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pauses
}

func (s *Server) recordChunk(c Chunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, c)
	s.notify()
}

// record records r and, when no handler is installed, takes the queue's
// next reply for it in the same step: replies go to requests in the order
// they arrived, even when their handlers run in another order (a retry
// can overtake the attempt it replaces).
func (s *Server) record(r *Request) (reply Reply, taken bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Seq = len(s.requests) + 1
	s.requests = append(s.requests, r.clone())
	s.notify()
	if r.DecodeErr == nil && s.handler == nil && len(s.queue) > 0 {
		reply, s.queue = s.queue[0], s.queue[1:]
		return reply, true
	}
	return Reply{}, false
}

// next picks the reply for r: the handler's, else the queue's head, else a
// "script ran out" error.
func (s *Server) next(r Request) Reply {
	s.mu.Lock()
	h := s.handler
	s.mu.Unlock()
	if h != nil {
		if reply, ok := h(r.clone()); ok {
			return reply
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return Error(http.StatusInternalServerError, ScriptExhaustedCode, fmt.Sprintf(
			"openaitest: script ran out: no reply queued for request %d (model %q, last user message %q)",
			r.Seq, r.Chat.Model, r.LastUser()))
	}
	reply := s.queue[0]
	s.queue = s.queue[1:]
	return reply
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			"openaitest: use GET for /v1/models")
		return
	}
	s.mu.Lock()
	ids := append([]string(nil), s.models...)
	s.mu.Unlock()
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: 1700000000, OwnedBy: "openaitest"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inflight--
		close(s.changed)
		s.changed = make(chan struct{})
	}()
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			"openaitest: use POST for /v1/chat/completions")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err == nil {
		err = json.Unmarshal(body, &req.Chat)
	}
	if err != nil {
		req.Chat, req.DecodeErr = ChatRequest{}, err
	}
	reply, taken := s.record(&req)
	if req.DecodeErr != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json",
			"openaitest: the body is not a chat completion request: "+req.DecodeErr.Error())
		return
	}
	if !taken {
		reply = s.next(req)
	}
	if reply.delay > 0 {
		t := time.NewTimer(reply.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
	for k, vs := range reply.header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	switch reply.kind {
	case kindError:
		writeError(w, reply.status, reply.errType, reply.errCode, reply.errMessage)
	case kindRaw:
		w.Header().Set("Content-Type", reply.contentType)
		w.WriteHeader(reply.status)
		_, _ = io.WriteString(w, reply.body)
	default:
		s.writeCompletion(w, r, req, reply)
	}
}
