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
	"unicode"
	"unicode/utf8"

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

// Wire types: the chat.completions format as OpenAI sends it. go-openai's
// response types are for decoding; encoding them would add Azure-only
// fields (content_filter_results) and drop "content": null.

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireToolCall struct {
	Index    *int         `json:"index,omitempty"` // stream fragments only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

// wireChoice is a choice of a completion (Message) or of a stream chunk
// (Delta; FinishReason null until the last chunk).
type wireChoice struct {
	Index        int          `json:"index"`
	Message      *wireMessage `json:"message,omitempty"`
	Delta        *wireDelta   `json:"delta,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// wireCompletion is a completion, or a chunk of a streamed one (Usage
// only in the usage chunk).
type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}

type wireDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

// completion is a reply resolved against its request: ids assigned, model,
// finish reason and usage filled in.
type completion struct {
	id, model string
	created   int64
	reply     Reply
	calls     []ToolCall
	finish    string
	usage     wireUsage
}

func (s *Server) resolve(req Request, reply Reply) completion {
	s.mu.Lock()
	s.respSeq++
	c := completion{
		id:      fmt.Sprintf("chatcmpl-openaitest-%d", s.respSeq),
		model:   reply.model,
		created: time.Now().Unix(),
		reply:   reply,
		calls:   make([]ToolCall, len(reply.toolCalls)),
	}
	for i, tc := range reply.toolCalls {
		if tc.ID == "" {
			s.callSeq++
			tc.ID = fmt.Sprintf("call_%d", s.callSeq)
		}
		c.calls[i] = tc
	}
	s.mu.Unlock()
	if c.model == "" {
		c.model = req.Chat.Model
	}
	if c.model == "" {
		c.model = DefaultModel
	}
	c.finish = string(reply.finish)
	if c.finish == "" {
		c.finish = FinishStop
		if len(c.calls) > 0 {
			c.finish = FinishToolCalls
		}
	}
	if reply.usage != nil {
		c.usage = wireUsage{PromptTokens: reply.usage.prompt, CompletionTokens: reply.usage.completion}
	} else {
		var prompt, out strings.Builder
		for _, m := range req.Chat.Messages {
			prompt.WriteString(messageText(m))
		}
		out.WriteString(reply.content)
		for _, tc := range c.calls {
			out.WriteString(tc.Name + tc.Arguments)
		}
		c.usage = wireUsage{PromptTokens: tokens(prompt.String()), CompletionTokens: tokens(out.String())}
	}
	c.usage.TotalTokens = c.usage.PromptTokens + c.usage.CompletionTokens
	return c
}

// tokens is a rough, deterministic token count: a quarter of the runes, at
// least 1.
func tokens(s string) int {
	return utf8.RuneCountInString(s)/4 + 1
}

func (s *Server) writeCompletion(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	c := s.resolve(req, reply)
	if req.Chat.Stream {
		s.writeStream(w, r, req, c)
		return
	}
	out := wireCompletion{
		ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []wireChoice{}, Usage: &c.usage,
	}
	if !reply.noChoices {
		msg := wireMessage{Role: "assistant"}
		if reply.hasContent || len(c.calls) == 0 {
			content := reply.content
			msg.Content = &content
		}
		for _, tc := range c.calls {
			msg.ToolCalls = append(msg.ToolCalls, wireToolCall{
				ID: tc.ID, Type: "function",
				Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		out.Choices = append(out.Choices, wireChoice{Index: 0, Message: &msg, FinishReason: &c.finish})
	}
	writeJSON(w, http.StatusOK, out)
}

// writeStream sends c as server-sent events the way OpenAI does: a first
// chunk with the role, the text in pieces, each tool call as a fragment with
// its id and name followed by fragments carrying pieces of its arguments
// (all keyed by index), a last chunk with the finish reason, a usage chunk
// when stream_options.include_usage asks for it, then [DONE]. The reply's
// streaming options (WithWordDelay, WithPauseAfter, WithCutAfter,
// WithErrorAfter) pace and break it. Every event is recorded (Chunks).
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, req Request, c completion) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n := 0
	flush := func(line, kind, text string) {
		_, _ = io.WriteString(w, line)
		_ = rc.Flush()
		n++
		s.recordChunk(Chunk{Request: req.Seq, N: n, Time: time.Now(), Text: text, Kind: kind})
	}
	send := func(choices []wireChoice, u *wireUsage, kind, text string) {
		b, _ := json.Marshal(wireCompletion{
			ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: choices, Usage: u,
		})
		flush(fmt.Sprintf("data: %s\n\n", b), kind, text)
	}
	delta := func(d wireDelta, finish *string) []wireChoice {
		return []wireChoice{{Index: 0, Delta: &d, FinishReason: finish}}
	}
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
		case <-s.closing:
		}
		return false
	}
	rp := c.reply
	if !rp.noChoices {
		empty := ""
		send(delta(wireDelta{Role: "assistant", Content: &empty}, nil), nil, "role", "")
		pieces := split(rp.content, 3)
		if rp.wordDelay > 0 || rp.pauseAfter > 0 || rp.cutAfter > 0 || rp.errAfter > 0 {
			pieces = words(rp.content)
		}
		for i, piece := range pieces {
			if !wait(rp.wordDelay) {
				return
			}
			send(delta(wireDelta{Content: &piece}, nil), nil, "text", piece)
			switch i + 1 {
			case rp.pauseAfter:
				if !s.pause(r.Context().Done()) {
					return
				}
			case rp.cutAfter:
				s.recordChunk(Chunk{Request: req.Seq, N: n + 1, Time: time.Now(), Kind: "cut"})
				panic(http.ErrAbortHandler) // drops the connection: no finish, no [DONE]
			case rp.errAfter:
				e := rp.errEvent
				b, _ := json.Marshal(struct {
					Error apiError `json:"error"`
				}{newAPIError(e.errType, e.errCode, e.errMessage)})
				flush(fmt.Sprintf("data: %s\n\n", b), "error", "")
				return
			}
		}
		for i, tc := range c.calls {
			send(delta(wireDelta{ToolCalls: []wireToolCall{{
				Index: &i, ID: tc.ID, Type: "function",
				Function: wireFunction{Name: tc.Name},
			}}}, nil), nil, "tool_call", "")
			for _, piece := range split(tc.Arguments, 3) {
				send(delta(wireDelta{ToolCalls: []wireToolCall{{
					Index: &i, Function: wireFunction{Arguments: piece},
				}}}, nil), nil, "tool_call", "")
			}
		}
		send(delta(wireDelta{}, &c.finish), nil, "finish", "")
	}
	if o := req.Chat.StreamOptions; o != nil && o.IncludeUsage {
		send([]wireChoice{}, &c.usage, "usage", "")
	}
	flush("data: [DONE]\n\n", "done", "")
}

// words cuts s into its words, each with the white space after it (the
// first also with any before it); "" gives none.
func words(s string) []string {
	var out []string
	start, inSpace := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space && inSpace && strings.TrimSpace(s[start:i]) != "" {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// split cuts s into at most n pieces of about equal length, never inside a
// UTF-8 sequence; "" gives no pieces.
func split(s string, n int) []string {
	runes := []rune(s)
	var out []string
	for i := range n {
		lo, hi := len(runes)*i/n, len(runes)*(i+1)/n
		if hi > lo {
			out = append(out, string(runes[lo:hi]))
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // only our own wire types get here: they always encode
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func newAPIError(errType, code, message string) apiError {
	e := apiError{Message: message, Type: errType}
	if code != "" {
		e.Code = &code
	}
	return e
}

func writeError(w http.ResponseWriter, status int, errType, code, message string) {
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{newAPIError(errType, code, message)})
}
