package openaitest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// kinds is the Kind of each chunk, joined.
func kinds(chunks []Chunk) string {
	var k []string
	for _, c := range chunks {
		k = append(k, c.Kind)
	}
	return strings.Join(k, ",")
}

// WithWordDelay sends a word per chunk, each at least d after the one
// before; every event is recorded in order with its request and time.
func TestStreamWordByWord(t *testing.T) {
	s := New(t)
	const d = 20 * time.Millisecond
	s.Enqueue(Text(" Hello  brave new\nworld").WithWordDelay(d))
	req := chatReq("hi")
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	var text []string
	for _, chunk := range streamChunks(t, s, req) {
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				text = append(text, c.Delta.Content)
			}
		}
	}
	if strings.Join(text, "|") != " Hello  |brave |new\n|world" {
		t.Errorf("words %q", text)
	}
	chunks := s.WaitChunks(8, time.Second)
	if got := kinds(chunks); got != "role,text,text,text,text,finish,usage,done" {
		t.Errorf("chunk kinds %s", got)
	}
	for i, c := range chunks {
		if c.Request != 1 || c.N != i+1 {
			t.Errorf("chunk %d: %+v", i, c)
		}
		if i > 0 && c.Kind == "text" && c.Time.Sub(chunks[i-1].Time) < d {
			t.Errorf("chunk %d came %v after the one before, less than the delay", i, c.Time.Sub(chunks[i-1].Time))
		}
	}
	if chunks[1].Text != " Hello  " || chunks[0].Text != "" {
		t.Errorf("texts %q %q", chunks[0].Text, chunks[1].Text)
	}
	if n := s.DiscardRequests(); n != 1 || len(s.Chunks()) != 0 {
		t.Errorf("discard: %d requests, %d chunks left", n, len(s.Chunks()))
	}
}

// WithPauseAfter holds a stream until Resume; a Resume that comes first
// lets the next pause through at once.
func TestStreamPauseAndResume(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("one two three").WithPauseAfter(1), Text("four five").WithPauseAfter(1))
	stream, err := client(s, "k").CreateChatCompletionStream(context.Background(), chatReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	recvText := func() string {
		for {
			chunk, err := stream.Recv()
			if err != nil {
				t.Fatalf("recv: %v", err)
			}
			if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
				return chunk.Choices[0].Delta.Content
			}
		}
	}
	if w := recvText(); w != "one " {
		t.Fatalf("first word %q", w)
	}
	s.WaitPaused(1, time.Second)
	if got := kinds(s.Chunks()); got != "role,text" || s.Paused() != 1 {
		t.Errorf("sent while paused: %s", got)
	}
	s.Resume()
	if w := recvText(); w != "two " {
		t.Errorf("after Resume %q", w)
	}
	s.Resume() // before the second stream pauses
	if got := strings.Join(textsOf(streamChunks(t, s, chatReq("again"))), ""); got != "four five" {
		t.Errorf("second stream %q", got)
	}
}

func textsOf(chunks []openai.ChatCompletionStreamResponse) []string {
	var out []string
	for _, c := range chunks {
		for _, ch := range c.Choices {
			out = append(out, ch.Delta.Content)
		}
	}
	return out
}

// WithCutAfter drops the connection after n words: no finish, no [DONE];
// WithErrorAfter sends an error event after n words.
func TestStreamCutAndErrorEvent(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("one two three").WithCutAfter(2),
		Text("one two").WithErrorAfter(1, Error(500, "", "overloaded")))
	stream, err := client(s, "k").CreateChatCompletionStream(context.Background(), chatReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("a dropped stream ended with %v", err)
			}
			break
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				t.Errorf("a cut stream finished: %q", c.FinishReason)
			}
		}
	}
	stream.Close()
	if text.String() != "one two " || kinds(s.Chunks()) != "role,text,text,cut" {
		t.Errorf("text %q, chunks %s", text.String(), kinds(s.Chunks()))
	}
	stream, err = client(s, "k").CreateChatCompletionStream(context.Background(), chatReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var apiErr *openai.APIError
	for {
		_, err := stream.Recv()
		if err != nil {
			if !errors.As(err, &apiErr) || apiErr.Message != "overloaded" || apiErr.Type != "server_error" {
				t.Errorf("error event: %v", err)
			}
			break
		}
	}
	// The error event is recorded as it is sent: the client may read it
	// first.
	if got := kinds(s.WaitChunks(7, time.Second)); !strings.HasSuffix(got, "cut,role,text,error") {
		t.Errorf("chunks %s", got)
	}
}

// A stream whose client goes away while it waits between words ends
// there, as does one held at a pause.
func TestStreamEndsWhenTheClientLeaves(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("one two").WithWordDelay(time.Hour), Text("a b").WithPauseAfter(1))
	for i := range 2 {
		before := len(s.Chunks())
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := client(s, "k").CreateChatCompletionStream(ctx, chatReq("hi"))
		if err != nil {
			t.Fatal(err)
		}
		n := len(s.WaitChunks(before+1, time.Second)) // the role chunk
		if i == 1 {
			s.WaitPaused(1, time.Second) // held after its first word
			n = len(s.Chunks())
		}
		cancel()
		stream.Close()
		s.waitIdle(t)
		if got := len(s.Chunks()); got > n+1 {
			t.Errorf("%d chunks sent after the client left", got-n)
		}
	}
}

// waitIdle waits until no chat handler runs.
func (s *Server) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		idle, changed := s.inflight == 0, s.changed
		s.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("a chat handler is still running")
		}
	}
}

func TestWaitChunksTimeoutFailsTest(t *testing.T) {
	s := New(t)
	fake := &fatalTB{TB: t}
	s.t = fake
	done := make(chan []Chunk)
	go func() {
		defer close(done)
		done <- s.WaitChunks(1, 30*time.Millisecond)
	}()
	if got, ok := <-done; ok {
		t.Fatalf("WaitChunks returned %v instead of failing", got)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if !strings.Contains(fake.msg, "waited 30ms for 1 stream chunks, got 0") {
		t.Errorf("Fatalf message = %q", fake.msg)
	}
	fake.msg = ""
	fake.mu.Unlock()
	paused := make(chan struct{})
	go func() {
		defer close(paused)
		s.WaitPaused(1, 30*time.Millisecond)
	}()
	<-paused
	fake.mu.Lock()
	if !strings.Contains(fake.msg, "waited 30ms for 1 paused streams, got 0") {
		t.Errorf("Fatalf message = %q", fake.msg)
	}
}

func TestWords(t *testing.T) {
	for s, want := range map[string]string{"": "", "a": "a", "  a b ": "  a |b ", "a\n\nb\tc": "a\n\n|b\t|c", "日本 語": "日本 |語"} {
		if got := strings.Join(words(s), "|"); got != want {
			t.Errorf("words(%q) = %q, want %q", s, got, want)
		}
	}
}

// WithoutUsage: a stream sends no usage chunk though the request asks for
// one, and a completion has no "usage" field.
func TestWithoutUsage(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("hello there").WithoutUsage(), Text("whole").WithoutUsage())
	req := chatReq("hi")
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	for _, chunk := range streamChunks(t, s, req) {
		if chunk.Usage != nil {
			t.Errorf("a usage chunk: %+v", chunk.Usage)
		}
	}
	if got := kinds(s.WaitChunks(5, time.Second)); strings.Contains(got, "usage") {
		t.Errorf("chunk kinds %s", got)
	}
	_, _, body := post(t, s, http.MethodPost, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if _, ok := body["usage"]; ok || body["choices"] == nil {
		t.Errorf("completion %v", body)
	}
}
