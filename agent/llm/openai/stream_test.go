package openai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// modes are the ways a request is sent: both, or Complete alone.
func modes(stream bool) []string {
	if stream {
		return []string{"complete", "stream"}
	}
	return []string{"complete"}
}

// callMode sends req with Complete or Stream and returns the reply's text
// (for Stream, the text handed on, which must be all of it).
func callMode(c *Client, mode string, req goopenai.ChatCompletionRequest) (string, error) {
	if mode == "complete" {
		resp, err := c.complete(context.Background(), req)
		if len(resp.Choices) == 0 {
			return "", err
		}
		return resp.Choices[0].Message.Content, err
	}
	var shown strings.Builder
	resp, err := c.Stream(context.Background(), fromWireRequest(req), func(d string) error {
		shown.WriteString(d)
		return nil
	})
	if err == nil && shown.String() != resp.Message.Content {
		return "", &Error{Kind: ErrBadResponse, Detail: "handed on " + shown.String() + ", returned " + resp.Message.Content}
	}
	return shown.String(), err
}

// fromWireRequest is req (roles and texts) in llm's types.
func fromWireRequest(req goopenai.ChatCompletionRequest) llm.Request {
	out := llm.Request{Model: req.Model}
	for _, m := range req.Messages {
		out.Messages = append(out.Messages, llm.Message{Role: llm.Role(m.Role), Content: m.Content})
	}
	return out
}

// streamed collects what Stream hands on, on a channel as it arrives.
type streamed struct {
	deltas chan string
	all    strings.Builder
}

func newStreamed() *streamed { return &streamed{deltas: make(chan string, 100)} }

func (s *streamed) onText(d string) error {
	s.all.WriteString(d)
	s.deltas <- d
	return nil
}

type streamResult struct {
	resp llm.Response
	err  error
}

// streamAsync runs Stream in a goroutine; its result comes on the channel.
func streamAsync(ctx context.Context, c *Client, req llm.Request, onText func(string) error) chan streamResult {
	done := make(chan streamResult, 1)
	go func() {
		resp, err := c.Stream(ctx, req, onText)
		done <- streamResult{resp, err}
	}()
	return done
}

func userRequest(text string) llm.Request {
	return llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// The first words are handed on while the model is still writing; the
// request asks for a stream with usage; the response is the whole reply.
func TestStreamHandsOnWordsAsTheyCome(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.Text("Hello there, Ada. How are you?").WithPauseAfter(2).WithUsage(7, 5))
	s := newStreamed()
	done := streamAsync(context.Background(), c, userRequest("hi"), s.onText)
	if got := <-s.deltas + <-s.deltas; got != "Hello there, " {
		t.Errorf("first words %q", got)
	}
	select {
	case r := <-done:
		t.Fatalf("Stream returned while the model was still writing: %+v", r)
	default:
	}
	srv.WaitPaused(1, 5*time.Second) // the model holds after them
	srv.Resume()
	r := <-done
	if r.err != nil || r.resp.Message.Content != "Hello there, Ada. How are you?" || s.all.String() != r.resp.Message.Content {
		t.Fatalf("resp %+v err %v, handed on %q", r.resp, r.err, s.all.String())
	}
	if r.resp.FinishReason != llm.FinishStop || r.resp.Usage != (llm.Usage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 12}) {
		t.Errorf("finish %q usage %+v", r.resp.FinishReason, r.resp.Usage)
	}
	req := srv.Requests()[0].Chat
	if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
		t.Errorf("request stream %v options %+v", req.Stream, req.StreamOptions)
	}
	if u := c.Usage(); u.Calls != 1 || u.TotalTokens != 12 || u.Failures != 0 {
		t.Errorf("usage %+v", u)
	}
	var texts []string
	for _, ch := range srv.Chunks() {
		if ch.Kind == "text" {
			texts = append(texts, ch.Text)
		}
	}
	if strings.Join(texts, "|") != "Hello |there, |Ada. |How |are |you?" {
		t.Errorf("chunks %q", texts)
	}
}

// Tool calls come in fragments keyed by index and are assembled whole;
// text before them is handed on; their arguments are not.
func TestStreamAssemblesToolCalls(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.ToolCalls(
		openaitest.Call("memory_read", `{"path":"facts/user.md"}`).WithID("call_a"),
		openaitest.Call("memory_list", `{}`),
	).WithContent("Let me look."))
	s := newStreamed()
	resp, err := c.Stream(context.Background(), userRequest("hi"), s.onText)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{{ID: "call_a", Name: "memory_read", Arguments: `{"path":"facts/user.md"}`},
		{ID: "call_1", Name: "memory_list", Arguments: `{}`}}
	if fmt.Sprint(resp.Message.ToolCalls) != fmt.Sprint(want) || resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("calls %+v finish %q", resp.Message.ToolCalls, resp.FinishReason)
	}
	if s.all.String() != "Let me look." || resp.Message.Content != "Let me look." {
		t.Errorf("handed on %q, content %q", s.all.String(), resp.Message.Content)
	}
}

// A server that sends tool calls without an index (each whole, or its
// fragments in order) is understood too.
func TestStreamToolCallsWithoutIndex(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	chunk := func(delta string) string {
		return `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	body := chunk(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"memory_read","arguments":"{\"pa"}}]}`) +
		chunk(`{"tool_calls":[{"function":{"arguments":"th\":\"facts/a.md\"}"}}]}`) +
		chunk(`{"tool_calls":[{"id":"c2","type":"function","function":{"name":"memory_list","arguments":"{}"}}]}`) +
		`data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	srv.Enqueue(openaitest.Raw(200, "text/event-stream", body))
	resp, err := c.Stream(context.Background(), userRequest("hi"), func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{{ID: "c1", Name: "memory_read", Arguments: `{"path":"facts/a.md"}`}, {ID: "c2", Name: "memory_list", Arguments: `{}`}}
	if fmt.Sprint(resp.Message.ToolCalls) != fmt.Sprint(want) {
		t.Errorf("calls %+v", resp.Message.ToolCalls)
	}
}

// Before the first word a failure is retried as in Complete (here a 429
// whose Retry-After go-openai's stream would have dropped); the words
// then come once.
func TestStreamRetriesBeforeTheFirstWord(t *testing.T) {
	c, srv2, sl := llmFixture(t, nil)
	srv2.Enqueue(
		openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("2"),
		openaitest.Raw(200, "text/event-stream", `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`+"\n\n"),
		openaitest.Text("Hello once."),
	)
	s := newStreamed()
	resp, err := c.Stream(context.Background(), userRequest("hi"), s.onText)
	if err != nil || resp.Message.Content != "Hello once." || s.all.String() != "Hello once." {
		t.Fatalf("resp %q err %v handed on %q", resp.Message.Content, err, s.all.String())
	}
	if got := fmt.Sprint(sl.get()); got != "[2s 1.5s]" {
		t.Errorf("slept %s", got)
	}
	if n := len(srv2.Requests()); n != 3 {
		t.Errorf("%d requests", n)
	}
}

// After the first word nothing is retried: a dropped connection, an error
// event and a reply over MaxResponseBytes each end the call with the
// text handed on and an error that says it was cut, of the same kind as
// before.
func TestStreamCutAfterTheFirstWords(t *testing.T) {
	long := strings.Repeat("word ", 400)
	tests := []struct {
		name  string
		edit  func(*Config)
		reply openaitest.Reply
		kind  error
		shown string
		inMsg string
	}{
		{"connection dropped", nil, openaitest.Text("one two three four").WithCutAfter(2), ErrUnavailable, "one two ", "unexpected EOF"},
		{"error event", nil, openaitest.Text("one two three").WithErrorAfter(1, openaitest.Error(500, "", "overloaded")),
			ErrUnavailable, "one ", "overloaded"},
		{"too large", func(c *Config) { c.MaxResponseBytes = 1024 }, openaitest.Text(long).WithWordDelay(time.Nanosecond),
			ErrResponseTooLarge, "", "llm.maxResponseBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv, sl := llmFixture(t, tt.edit)
			srv.Enqueue(tt.reply, openaitest.Text("a second copy"))
			s := newStreamed()
			resp, err := c.Stream(context.Background(), userRequest("hi"), s.onText)
			if !errors.Is(err, tt.kind) || !errors.Is(err, llm.ErrCut) {
				t.Fatalf("err = %v", err)
			}
			if tt.shown != "" && s.all.String() != tt.shown {
				t.Errorf("handed on %q", s.all.String())
			}
			if s.all.String() == "" || resp.Message.Content != s.all.String() {
				t.Errorf("content %q, handed on %q", resp.Message.Content, s.all.String())
			}
			if !strings.Contains(err.Error(), tt.inMsg) || !strings.Contains(err.Error(), "broke off") {
				t.Errorf("message %q", err)
			}
			if len(srv.Requests()) != 1 || len(sl.get()) != 0 || srv.Pending() != 1 {
				t.Errorf("%d requests, sleeps %v: retried after words were handed on", len(srv.Requests()), sl.get())
			}
			if u := c.Usage(); u.Failures != 1 || u.Retries != 0 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}

// The caller's context ends a stream at once; what was handed on is
// returned with the context's error.
func TestStreamCancelled(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.Text("one two three").WithPauseAfter(1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStreamed()
	done := streamAsync(ctx, c, userRequest("hi"), s.onText)
	<-s.deltas
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, llm.ErrCut) || errors.Is(r.err, ErrUnavailable) || r.resp.Message.Content != "one " {
		t.Errorf("resp %q err %v", r.resp.Message.Content, r.err)
	}
}

// onText's error stops the stream and comes back as it is; it is no
// failure of the model.
func TestStreamStoppedByTheCaller(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.Text("one two three four").WithPauseAfter(3))
	enough := errors.New("enough")
	n := 0
	resp, err := c.Stream(context.Background(), userRequest("hi"), func(string) error {
		if n++; n == 2 {
			return enough
		}
		return nil
	})
	if err != enough || resp.Message.Content != "one two " {
		t.Errorf("resp %q err %v", resp.Message.Content, err)
	}
	if u := c.Usage(); u.Failures != 0 || u.Calls != 1 {
		t.Errorf("usage %+v", u)
	}
}

// fakeTimers stands in for the attempts' timeouts: a test fires them.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
	made   chan struct{} // a timer was started
}

type fakeTimer struct {
	mu     sync.Mutex
	fire   func()
	d      time.Duration
	resets int
}

func (f *fakeTimers) afterFunc(d time.Duration, fire func()) attemptTimer {
	t := &fakeTimer{fire: fire, d: d}
	f.mu.Lock()
	f.timers = append(f.timers, t)
	f.mu.Unlock()
	f.made <- struct{}{}
	return t
}

func (t *fakeTimer) Reset(time.Duration) bool { t.mu.Lock(); t.resets++; t.mu.Unlock(); return true }
func (t *fakeTimer) Stop() bool               { return true }

func (f *fakeTimers) get(i int) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.timers[i]
}

// Timeout bounds the wait for the first chunk and then for each next one,
// not the whole reply: it restarts at every chunk; when it runs out before
// the first word the attempt is retried, after it the reply is cut.
func TestStreamTimeoutIsBetweenChunks(t *testing.T) {
	c, srv, sl := llmFixture(t, func(c *Config) { c.Timeout = 42 * time.Second })
	ft := &fakeTimers{made: make(chan struct{}, 10)}
	c.afterFunc = ft.afterFunc
	srv.Enqueue(openaitest.Text("late").WithDelay(time.Hour), openaitest.Text("a b c d"),
		openaitest.Text("one two three").WithPauseAfter(1))

	done := streamAsync(context.Background(), c, userRequest("hi"), func(string) error { return nil })
	<-ft.made
	srv.WaitRequests(1, 5*time.Second)
	ft.get(0).fire() // no answer within the timeout: retried
	<-ft.made
	r := <-done
	if r.err != nil || r.resp.Message.Content != "a b c d" || len(sl.get()) != 1 || len(srv.Requests()) != 2 {
		t.Fatalf("resp %q err %v, sleeps %v", r.resp.Message.Content, r.err, sl.get())
	}
	// role, the text in 3 pieces, finish, usage: each restarts the timeout.
	if tm := ft.get(1); tm.d != 42*time.Second || tm.resets != 6 {
		t.Errorf("timeout %v restarted %d times", tm.d, tm.resets)
	}

	s := newStreamed()
	done = streamAsync(context.Background(), c, userRequest("hi"), s.onText)
	<-ft.made
	<-s.deltas
	srv.WaitPaused(1, 5*time.Second)
	ft.get(2).fire() // the model stalls after its first word
	r = <-done
	if !errors.Is(r.err, ErrUnavailable) || !errors.Is(r.err, llm.ErrCut) || !strings.Contains(r.err.Error(), "attempt timed out after 42s") ||
		r.resp.Message.Content != "one " || len(srv.Requests()) != 3 {
		t.Errorf("resp %q err %v", r.resp.Message.Content, r.err)
	}
}

// A model that does not stream gets one onText with the whole text
// (llm.Stream), and none for a failure.
func TestStreamFallsBackToComplete(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.Text("whole"), openaitest.Error(401, "invalid_api_key", "no"))
	var got []string
	onText := func(d string) error { got = append(got, d); return nil }
	m := struct{ llm.Model }{c} // hides Stream
	if resp, err := llm.Stream(context.Background(), m, userRequest("hi"), onText); err != nil || resp.Message.Content != "whole" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if _, err := llm.Stream(context.Background(), m, userRequest("hi"), onText); !errors.Is(err, ErrAuth) {
		t.Errorf("err = %v", err)
	}
	if fmt.Sprint(got) != "[whole]" {
		t.Errorf("onText got %q", got)
	}
	if srv.Requests()[0].Chat.Stream {
		t.Error("the fallback asked for a stream")
	}
}

// What a server should not send is passed over: a second choice, a tool
// call with a nonsense index; a stream with no role is the assistant's.
func TestStreamOddChunks(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	event := func(choices string) string {
		return `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[` + choices + `]}` + "\n\n"
	}
	body := event(`{"index":0,"delta":{"content":"Hi"},"finish_reason":null},{"index":1,"delta":{"content":"other"},"finish_reason":null}`) +
		event(`{"index":0,"delta":{"tool_calls":[{"index":9999,"id":"big","type":"function","function":{"name":"x","arguments":"{}"}}]},"finish_reason":null}`) +
		event(`{"index":0,"delta":{},"finish_reason":"stop"}`) + "data: [DONE]\n\n"
	srv.Enqueue(openaitest.Raw(200, "text/event-stream", body))
	s := newStreamed()
	resp, err := c.Stream(context.Background(), userRequest("hi"), s.onText)
	if err != nil || resp.Message.Content != "Hi" || resp.Message.Role != llm.RoleAssistant || len(resp.Message.ToolCalls) != 0 || s.all.String() != "Hi" {
		t.Errorf("resp %+v err %v", resp, err)
	}
	enough := errors.New("enough")
	if st := (stopped{enough}); st.Error() != "enough" || !errors.Is(st, enough) {
		t.Errorf("stopped: %v", st)
	}
}

// A server that ignores "stream": true and answers with a whole JSON
// completion: not retried, and the error says which setting fits it.
func TestStreamFromAServerThatDoesNotStream(t *testing.T) {
	c, srv, _ := llmFixture(t, nil)
	srv.Enqueue(openaitest.Raw(200, "application/json",
		`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	_, err := c.Stream(context.Background(), userRequest("hi"), func(string) error { return nil })
	if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), "set llm.stream: false") || len(srv.Requests()) != 1 {
		t.Errorf("err = %v, %d requests", err, len(srv.Requests()))
	}
}
