package openaitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func client(s *Server, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.URL()
	return openai.NewClientWithConfig(cfg)
}

func chatReq(user string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are mnemo."},
			{Role: openai.ChatMessageRoleUser, Content: user},
		},
	}
}

// post sends body to path and returns status, headers and the decoded JSON
// body (nil when it is not JSON).
func post(t *testing.T, s *Server, method, path, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		m = nil
	}
	return res.StatusCode, res.Header, m
}

func TestURLIsLoopbackV1(t *testing.T) {
	s := New(t)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/v1") {
		t.Fatalf("URL() = %q, want http://127.0.0.1:PORT/v1", s.URL())
	}
}

func TestTextReply(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("Hello, Ada."))
	resp, err := client(s, "sk-test").CreateChatCompletion(context.Background(), chatReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Created == 0 {
		t.Errorf("envelope = %q %q %d", resp.Object, resp.ID, resp.Created)
	}
	if resp.Model != "gpt-test" {
		t.Errorf("model = %q, want the requested gpt-test", resp.Model)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("choices = %d", len(resp.Choices))
	}
	c := resp.Choices[0]
	if c.Message.Role != "assistant" || c.Message.Content != "Hello, Ada." || c.FinishReason != openai.FinishReasonStop {
		t.Errorf("choice = %+v", c)
	}
	if len(c.Message.ToolCalls) != 0 {
		t.Errorf("tool calls = %v", c.Message.ToolCalls)
	}
	u := resp.Usage
	if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage = %+v", u)
	}
	if s.Pending() != 0 {
		t.Errorf("Pending() = %d after the only reply was used", s.Pending())
	}
}

func TestWireFormat(t *testing.T) {
	s := New(t)
	s.Enqueue(
		ToolCalls(Call("memory_read", `{"path":"facts/user.md"}`)),
		Text("plain"),
	)
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`
	status, hdr, m := post(t, s, http.MethodPost, "/v1/chat/completions", body)
	if status != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", status, hdr.Get("Content-Type"))
	}
	for _, k := range []string{"id", "object", "created", "model", "choices", "usage"} {
		if _, ok := m[k]; !ok {
			t.Errorf("response lacks %q: %v", k, m)
		}
	}
	choice := m["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if content, ok := msg["content"]; !ok || content != nil {
		t.Errorf("content of a tool-call message = %v (present %v), want null", content, ok)
	}
	if choice["finish_reason"] != "tool_calls" || choice["index"] != 0.0 {
		t.Errorf("choice = %v", choice)
	}
	tc := msg["tool_calls"].([]any)[0].(map[string]any)
	fn := tc["function"].(map[string]any)
	if tc["id"] != "call_1" || tc["type"] != "function" || fn["name"] != "memory_read" ||
		fn["arguments"] != `{"path":"facts/user.md"}` {
		t.Errorf("tool call = %v", tc)
	}
	if _, ok := tc["index"]; ok {
		t.Errorf("a non-stream tool call carries an index: %v", tc)
	}
	usage := m["usage"].(map[string]any)
	for _, k := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
		if _, ok := usage[k]; !ok {
			t.Errorf("usage lacks %q", k)
		}
	}

	_, _, m = post(t, s, http.MethodPost, "/v1/chat/completions", body)
	msg = m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "plain" {
		t.Errorf("content = %v", msg["content"])
	}
	if _, ok := msg["tool_calls"]; ok {
		t.Errorf("text reply has tool_calls: %v", msg)
	}
}

func TestToolCallsReply(t *testing.T) {
	s := New(t)
	s.Enqueue(
		ToolCalls(
			Call("memory_read", `{"path":"facts/user.md"}`),
			Call("memory_list", `{}`).WithID("call_fixed"),
		).WithContent("Let me look."),
		ToolCalls(Call("memory_list", `{}`)),
	)
	c := client(s, "k")
	resp, err := c.CreateChatCompletion(context.Background(), chatReq("what do you know?"))
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != openai.FinishReasonToolCalls || ch.Message.Content != "Let me look." {
		t.Errorf("choice = %+v", ch)
	}
	want := []openai.ToolCall{
		{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "memory_read", Arguments: `{"path":"facts/user.md"}`}},
		{ID: "call_fixed", Type: "function", Function: openai.FunctionCall{Name: "memory_list", Arguments: `{}`}},
	}
	if fmt.Sprint(ch.Message.ToolCalls) != fmt.Sprint(want) {
		t.Errorf("tool calls = %+v\nwant %+v", ch.Message.ToolCalls, want)
	}
	resp, err = c.CreateChatCompletion(context.Background(), chatReq("again"))
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.Choices[0].Message.ToolCalls[0].ID; id != "call_2" {
		t.Errorf("second generated id = %q, want call_2", id)
	}
}

func TestTruncatedToolCall(t *testing.T) {
	s := New(t)
	s.Enqueue(ToolCalls(Call("memory_write", `{"path":"facts/user.md","content":"# Us`)).
		WithFinishReason(FinishLength))
	resp, err := client(s, "k").CreateChatCompletion(context.Background(), chatReq("remember"))
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != openai.FinishReasonLength {
		t.Errorf("finish = %q", ch.FinishReason)
	}
	if got := ch.Message.ToolCalls[0].Function.Arguments; got != `{"path":"facts/user.md","content":"# Us` {
		t.Errorf("arguments = %q, want them cut short as scripted", got)
	}
}

func TestReplyOptions(t *testing.T) {
	s := New(t)
	base := Text("x")
	withHeader := base.WithHeader("X-A", "1")
	withTwo := withHeader.WithHeader("X-B", "2")
	s.Enqueue(base, withHeader, withTwo.WithModel("other-model").WithUsage(7, 3))
	c := client(s, "k")
	var got []openai.ChatCompletionResponse
	for range 3 {
		resp, err := c.CreateChatCompletion(context.Background(), chatReq("q"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp)
	}
	if h := got[0].Header(); h.Get("X-A") != "" || h.Get("X-B") != "" {
		t.Errorf("WithHeader changed the Reply it was called on: %v", h)
	}
	if h := got[1].Header(); h.Get("X-A") != "1" || h.Get("X-B") != "" {
		t.Errorf("WithHeader on a copy leaked: %v", h)
	}
	if h := got[2].Header(); h.Get("X-A") != "1" || h.Get("X-B") != "2" {
		t.Errorf("headers = %v", h)
	}
	if got[2].Model != "other-model" {
		t.Errorf("model = %q", got[2].Model)
	}
	if u := got[2].Usage; u.PromptTokens != 7 || u.CompletionTokens != 3 || u.TotalTokens != 10 {
		t.Errorf("usage = %+v", u)
	}
}

func TestDefaultModelWhenRequestNamesNone(t *testing.T) {
	s := New(t)
	s.Enqueue(Reply{})
	_, _, m := post(t, s, http.MethodPost, "/v1/chat/completions", `{"messages":[]}`)
	if m["model"] != DefaultModel {
		t.Errorf("model = %v, want %q", m["model"], DefaultModel)
	}
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if content, ok := msg["content"]; !ok || content != "" {
		t.Errorf("zero Reply content = %v (present %v), want empty text", content, ok)
	}
}

func TestNoChoices(t *testing.T) {
	s := New(t)
	s.Enqueue(NoChoices())
	resp, err := client(s, "k").CreateChatCompletion(context.Background(), chatReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices == nil || len(resp.Choices) != 0 || resp.Object != "chat.completion" {
		t.Errorf("choices = %#v, object %q", resp.Choices, resp.Object)
	}
}

func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name     string
		reply    Reply
		status   int
		code     any
		typ      string
		retryHdr string
	}{
		{"rate limit", Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("1"), 429, "rate_limit_exceeded", "rate_limit_error", "1"},
		{"quota", Error(429, "insufficient_quota", "pay up"), 429, "insufficient_quota", "insufficient_quota", ""},
		{"auth", Error(401, "invalid_api_key", "bad key"), 401, "invalid_api_key", "invalid_request_error", ""},
		// go-openai decodes "code": null as the int 0 (json.Unmarshal of null into an int succeeds).
		{"server", Error(503, "", "overloaded"), 503, 0, "server_error", ""},
		{"custom type", Error(400, "context_length_exceeded", "too long").WithType("tokens"), 400, "context_length_exceeded", "tokens", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			s.Enqueue(tt.reply)
			resp, err := client(s, "k").CreateChatCompletion(context.Background(), chatReq("q"))
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %T %v, want *openai.APIError", err, err)
			}
			if apiErr.HTTPStatusCode != tt.status || apiErr.Code != tt.code || apiErr.Type != tt.typ {
				t.Errorf("APIError = status %d code %#v type %q", apiErr.HTTPStatusCode, apiErr.Code, apiErr.Type)
			}
			wantMsg := map[string]string{"rate limit": "slow down", "quota": "pay up", "auth": "bad key",
				"server": "overloaded", "custom type": "too long"}[tt.name]
			if apiErr.Message != wantMsg {
				t.Errorf("message = %q, want %q", apiErr.Message, wantMsg)
			}
			if got := resp.Header().Get("Retry-After"); got != tt.retryHdr {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryHdr)
			}
		})
	}
}

func TestErrorWireFormat(t *testing.T) {
	s := New(t)
	s.Enqueue(Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("2"))
	status, hdr, m := post(t, s, http.MethodPost, "/v1/chat/completions", `{"model":"m","messages":[]}`)
	if status != 429 || hdr.Get("Retry-After") != "2" || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, headers %v", status, hdr)
	}
	e := m["error"].(map[string]any)
	if e["message"] != "slow down" || e["type"] != "rate_limit_error" || e["code"] != "rate_limit_exceeded" {
		t.Errorf("error = %v", e)
	}
	if p, ok := e["param"]; !ok || p != nil {
		t.Errorf("param = %v (present %v), want null", p, ok)
	}
}

func TestBadGatewayIsRequestError(t *testing.T) {
	s := New(t)
	s.Enqueue(BadGateway(), Raw(200, "text/plain", "not json"))
	c := client(s, "k")
	_, err := c.CreateChatCompletion(context.Background(), chatReq("q"))
	var reqErr *openai.RequestError
	if !errors.As(err, &reqErr) {
		t.Fatalf("err = %T %v, want *openai.RequestError", err, err)
	}
	if reqErr.HTTPStatusCode != 502 || string(reqErr.Body) != BadGatewayHTML {
		t.Errorf("RequestError = %d %q", reqErr.HTTPStatusCode, reqErr.Body)
	}
	_, err = c.CreateChatCompletion(context.Background(), chatReq("q"))
	var syntaxErr *json.SyntaxError
	if !errors.As(err, &syntaxErr) {
		t.Errorf("200 with a non-JSON body: err = %T %v, want a JSON syntax error", err, err)
	}
}

func TestScriptRanOut(t *testing.T) {
	s := New(t)
	_, err := client(s, "k").CreateChatCompletion(context.Background(), chatReq("one too many"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %T %v", err, err)
	}
	if apiErr.HTTPStatusCode != 500 || apiErr.Code != ScriptExhaustedCode ||
		!strings.Contains(apiErr.Message, "script ran out") || !strings.Contains(apiErr.Message, "one too many") {
		t.Errorf("APIError = %d %v %q", apiErr.HTTPStatusCode, apiErr.Code, apiErr.Message)
	}
}

func TestHandler(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("from the queue"))
	var seen []int
	var mu sync.Mutex
	s.Handle(func(r Request) (Reply, bool) {
		mu.Lock()
		seen = append(seen, r.Seq)
		mu.Unlock()
		if strings.Contains(r.System(), "reflector") {
			return Text("reflected on " + r.LastUser()), true
		}
		if r.Chat.Model == "special" {
			return ToolCalls(Call("memory_list", "{}")), true
		}
		return Reply{}, false
	})
	c := client(s, "k")
	ctx := context.Background()

	refl := chatReq("the transcript")
	refl.Messages[0].Content = "You are the reflector."
	resp, err := c.CreateChatCompletion(ctx, refl)
	if err != nil || resp.Choices[0].Message.Content != "reflected on the transcript" {
		t.Fatalf("reflector: %v %+v", err, resp.Choices)
	}
	special := chatReq("x")
	special.Model = "special"
	resp, err = c.CreateChatCompletion(ctx, special)
	if err != nil || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("by model: %v %+v", err, resp.Choices)
	}
	if s.Pending() != 1 {
		t.Fatalf("the handler's answers used the queue: Pending() = %d", s.Pending())
	}
	resp, err = c.CreateChatCompletion(ctx, chatReq("hello"))
	if err != nil || resp.Choices[0].Message.Content != "from the queue" {
		t.Fatalf("fall through: %v %+v", err, resp.Choices)
	}
	mu.Lock()
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Errorf("handler saw %v", seen)
	}
	mu.Unlock()

	s.Handle(nil)
	_, err = c.CreateChatCompletion(ctx, refl)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != ScriptExhaustedCode {
		t.Errorf("after Handle(nil): %v", err)
	}
}

func TestRecordsRequests(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("a"), Text("b"))
	c := client(s, "sk-secret")
	r1 := chatReq("first")
	r1.Tools = []openai.Tool{
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "memory_list", Parameters: json.RawMessage(`{"type":"object"}`)}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "memory_read", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	if _, err := c.CreateChatCompletion(context.Background(), r1); err != nil {
		t.Fatal(err)
	}
	if _, err := client(s, "").CreateChatCompletion(context.Background(), chatReq("second")); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("recorded %d requests", len(reqs))
	}
	r := reqs[0]
	if r.Seq != 1 || reqs[1].Seq != 2 || r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Errorf("request = seq %d %s %s", r.Seq, r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-secret" {
		t.Errorf("Authorization = %q", got)
	}
	if got := reqs[1].Header.Get("Authorization"); got != "" {
		t.Errorf("empty key sent Authorization %q", got)
	}
	if !strings.Contains(string(r.Body), `"content":"first"`) {
		t.Errorf("raw body = %s", r.Body)
	}
	if r.Chat.Model != "gpt-test" || r.System() != "You are mnemo." || r.LastUser() != "first" || r.DecodeErr != nil {
		t.Errorf("decoded = %+v", r.Chat)
	}
	if fmt.Sprint(r.ToolNames()) != "[memory_list memory_read]" {
		t.Errorf("ToolNames = %v", r.ToolNames())
	}
	// A copy: changing it does not change the record.
	reqs[0].Header.Set("Authorization", "changed")
	reqs[0].Body[0] = 'X'
	again := s.Requests()
	if again[0].Header.Get("Authorization") != "Bearer sk-secret" || again[0].Body[0] != '{' {
		t.Error("Requests() returned the server's own records, not copies")
	}
}

func TestRequestHelpers(t *testing.T) {
	r := Request{Chat: ChatRequest{Messages: []Message{
		{Role: "developer", MultiContent: []ContentPart{{Type: "text", Text: "be "}, {Type: "text", Text: "brief"}}},
		{Role: "user", Content: "one"},
		{Role: "user", Content: "two"},
		{Role: "assistant", Content: "answer"},
	}, Tools: []Tool{{Type: "web_search"}}}}
	if r.System() != "be brief" || r.LastUser() != "two" || r.ToolNames() != nil {
		t.Errorf("System %q LastUser %q ToolNames %v", r.System(), r.LastUser(), r.ToolNames())
	}
	var empty Request
	if empty.System() != "" || empty.LastUser() != "" {
		t.Error("helpers on an empty request are not empty")
	}
}

func TestBadRequestBodyIsRecorded(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("unused"))
	status, _, m := post(t, s, http.MethodPost, "/v1/chat/completions", `{"model":`)
	if status != 400 || m["error"].(map[string]any)["code"] != "invalid_json" {
		t.Errorf("status %d, body %v", status, m)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].DecodeErr == nil || string(reqs[0].Body) != `{"model":` {
		t.Errorf("recorded %+v", reqs)
	}
	if s.Pending() != 1 {
		t.Error("a malformed request used a scripted reply")
	}
}

func TestRoutes(t *testing.T) {
	s := New(t)
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/v1/chat/completions", 405, "method_not_allowed"},
		{http.MethodPost, "/v1/models", 405, "method_not_allowed"},
		{http.MethodGet, "/v1/embeddings", 404, "unknown_url"},
	}
	for _, tt := range tests {
		status, _, m := post(t, s, tt.method, tt.path, "")
		e, _ := m["error"].(map[string]any)
		if status != tt.status || e["code"] != tt.code {
			t.Errorf("%s %s = %d %v", tt.method, tt.path, status, m)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("recorded %d requests that were not chat completions", n)
	}
}

func TestModels(t *testing.T) {
	s := New(t)
	c := client(s, "k")
	list, err := c.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 1 || list.Models[0].ID != DefaultModel || list.Models[0].Object != "model" {
		t.Errorf("models = %+v", list.Models)
	}
	s.SetModels("llama3.2", "qwen3")
	list, err = c.ListModels(context.Background())
	if err != nil || len(list.Models) != 2 || list.Models[1].ID != "qwen3" {
		t.Errorf("after SetModels: %v %+v", err, list.Models)
	}
	s.SetModels()
	status, _, m := post(t, s, http.MethodGet, "/v1/models", "")
	if data, ok := m["data"].([]any); status != 200 || m["object"] != "list" || !ok || len(data) != 0 {
		t.Errorf("empty list = %d %v", status, m)
	}
}

func TestDelayHonoursClientTimeout(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("too late").WithDelay(time.Hour), Text("quick").WithDelay(20*time.Millisecond))
	c := client(s, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CreateChatCompletion(ctx, chatReq("q"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("client waited %v", d)
	}
	// The server stopped waiting too, not only the client.
	deadline := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		n, changed := s.inflight, s.changed
		s.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-changed: // a handler returned
		case <-deadline:
			t.Fatal("the handler kept waiting after the client gave up")
		}
	}
	start = time.Now()
	resp, err := c.CreateChatCompletion(context.Background(), chatReq("q"))
	if err != nil || resp.Choices[0].Message.Content != "quick" {
		t.Fatalf("%v %+v", err, resp)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("answered after %v, before its 20ms delay", d)
	}
}

func TestCloseEndsDelay(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("never").WithDelay(time.Hour))
	errc := make(chan error, 1)
	go func() {
		_, err := client(s, "k").CreateChatCompletion(context.Background(), chatReq("q"))
		errc <- err
	}()
	s.WaitRequests(1, 5*time.Second)
	closed := make(chan struct{})
	go func() {
		s.Close()
		s.Close() // idempotent
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a delayed reply")
	}
	if err := <-errc; err == nil {
		t.Error("the delayed request succeeded after Close")
	}
}

func TestWaitRequestsConcurrent(t *testing.T) {
	s := New(t)
	const n = 8
	for range n {
		s.Enqueue(Text("ok").WithDelay(5 * time.Millisecond))
	}
	c := client(s, "k")
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := c.CreateChatCompletion(context.Background(), chatReq(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		})
	}
	got := s.WaitRequests(n, 5*time.Second)
	if len(got) != n {
		t.Fatalf("WaitRequests returned %d", len(got))
	}
	seen := map[int]bool{}
	for _, r := range got {
		seen[r.Seq] = true
	}
	if len(seen) != n || !seen[1] || !seen[n] {
		t.Errorf("seqs = %v", seen)
	}
	wg.Wait()
	if s.Pending() != 0 {
		t.Errorf("Pending = %d", s.Pending())
	}
}

type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func TestWaitRequestsTimeoutFailsTest(t *testing.T) {
	s := New(t)
	fake := &fatalTB{TB: t}
	s.t = fake
	done := make(chan []Request)
	go func() {
		defer close(done)
		done <- s.WaitRequests(1, 30*time.Millisecond)
	}()
	if got, ok := <-done; ok {
		t.Fatalf("WaitRequests returned %v instead of failing", got)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if !strings.Contains(fake.msg, "waited 30ms for 1 requests, got 0") {
		t.Errorf("Fatalf message = %q", fake.msg)
	}
}

// streamChunks streams req from s and returns every chunk up to the end.
func streamChunks(t *testing.T, s *Server, req openai.ChatCompletionRequest) []openai.ChatCompletionStreamResponse {
	t.Helper()
	stream, err := client(s, "k").CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var chunks []openai.ChatCompletionStreamResponse
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return chunks
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, chunk)
	}
}

func TestStreamText(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("Hello there, Ada Lovelace."))
	req := chatReq("hi")
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	var text strings.Builder
	var pieces int
	var finish openai.FinishReason
	var usage *openai.Usage
	for _, chunk := range streamChunks(t, s, req) {
		if chunk.Object != "chat.completion.chunk" || chunk.Model != "gpt-test" {
			t.Errorf("chunk = %+v", chunk)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
			if len(chunk.Choices) != 0 {
				t.Errorf("usage chunk has choices %+v", chunk.Choices)
			}
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				pieces++
			}
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if text.String() != "Hello there, Ada Lovelace." || pieces < 2 || finish != openai.FinishReasonStop {
		t.Errorf("text %q in %d pieces, finish %q", text.String(), pieces, finish)
	}
	if usage == nil || usage.TotalTokens == 0 {
		t.Errorf("usage = %+v", usage)
	}
	if !s.Requests()[0].Chat.Stream {
		t.Error("recorded request is not a stream request")
	}
}

func TestStreamToolCalls(t *testing.T) {
	s := New(t)
	calls := []ToolCall{
		Call("memory_read", `{"path":"facts/user.md"}`),
		Call("memory_read", `{"path":"episodes/2026-02.md"}`).WithID("call_x"),
	}
	s.Enqueue(ToolCalls(calls...).WithFinishReason(FinishLength))
	type acc struct {
		id, name, args string
		fragments      int
	}
	var got []acc
	var finish openai.FinishReason
	var role string
	for _, chunk := range streamChunks(t, s, chatReq("hi")) {
		if chunk.Usage != nil {
			t.Errorf("usage chunk without include_usage: %+v", chunk.Usage)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Role != "" {
				role = c.Delta.Role
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("fragment without index: %+v", tc)
				}
				for len(got) <= *tc.Index {
					got = append(got, acc{})
				}
				a := &got[*tc.Index]
				if tc.ID != "" {
					a.id = tc.ID
				}
				a.name += tc.Function.Name
				if tc.Function.Arguments != "" {
					a.args += tc.Function.Arguments
					a.fragments++
				}
			}
		}
	}
	if role != "assistant" || finish != openai.FinishReasonLength || len(got) != 2 {
		t.Fatalf("role %q finish %q calls %+v", role, finish, got)
	}
	wantIDs := []string{"call_1", "call_x"}
	for i, a := range got {
		if a.id != wantIDs[i] || a.name != calls[i].Name || a.args != calls[i].Arguments {
			t.Errorf("call %d = %+v, want %+v", i, a, calls[i])
		}
		if a.fragments < 2 {
			t.Errorf("call %d arguments came in %d fragment(s), want several", i, a.fragments)
		}
	}
}

func TestStreamErrorsAndNoChoices(t *testing.T) {
	s := New(t)
	s.Enqueue(Error(429, "rate_limit_exceeded", "slow"), BadGateway(), NoChoices())
	c := client(s, "k")
	_, err := c.CreateChatCompletionStream(context.Background(), chatReq("q"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 429 {
		t.Errorf("stream 429: %T %v", err, err)
	}
	_, err = c.CreateChatCompletionStream(context.Background(), chatReq("q"))
	var reqErr *openai.RequestError
	if !errors.As(err, &reqErr) || reqErr.HTTPStatusCode != 502 {
		t.Errorf("stream 502: %T %v", err, err)
	}
	stream, err := c.CreateChatCompletionStream(context.Background(), chatReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if chunk, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("no-choices stream sent %+v, %v before [DONE]", chunk, err)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "[]"},
		{"a", "[a]"},
		{"ab", "[a b]"},
		{"abcdef", "[ab cd ef]"},
		{"äöü€", "[ä ö ü€]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(split(tt.in, 3)); got != tt.want {
			t.Errorf("split(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
