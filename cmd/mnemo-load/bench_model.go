package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	goopenai "github.com/sashabaranov/go-openai"
)

// benchReply starts every answer of the bench's model, so that the driver
// knows a reply line from anything else.
const benchReply = "bench-reply"

// benchModel is the scripted model of the bench: it answers at once, the
// Thinker with one line of text (a casual message needs no tool), the
// reflector with "nothing to remember", the roll-up job with a summary
// naming no record (nothing written: the seed's roll-ups leave it none to
// make, so a call counted here is the seed's fault). A person's message that carries a
// tool marker (searchMarker, readMarker) makes the Thinker call that tool
// first, and answer with the line of text once the tool's result is
// there. It counts the calls and the tool results and keeps the Thinker's
// request bodies, for the bare client to replay.
type benchModel struct {
	srv          *openaitest.Server
	thinker      atomic.Int64
	reflector    atomic.Int64
	rollups      atomic.Int64
	replaying    atomic.Bool
	keepBodies   int // at most this many bodies kept
	mu           sync.Mutex
	bodies       [][]byte
	firstThinker int // bytes of the first Thinker request
	maxReflector int // bytes of the largest reflector request
	tools        toolResults
}

// toolResults is what the bench's model was given back for the tool calls
// it made.
type toolResults struct {
	calls, results, bytes int
	errors, misses        int    // results that are an error; searches that found nothing
	firstError            string // the first error's text
}

func newBenchModel(keepBodies int) *benchModel {
	m := &benchModel{srv: openaitest.NewServer(), keepBodies: keepBodies}
	m.srv.Handle(m.reply)
	return m
}

func (m *benchModel) close() { m.srv.Close() }

func (m *benchModel) reply(r openaitest.Request) (openaitest.Reply, bool) {
	m.srv.DiscardRequests()
	if m.replaying.Load() {
		return openaitest.Text(benchReply + " ok"), true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.Contains(r.System(), "memory reflector") {
		m.reflector.Add(1)
		m.maxReflector = max(m.maxReflector, len(r.Body))
		return openaitest.Text("Nothing worth remembering."), true
	}
	if strings.Contains(r.System(), "roll-up writer") {
		m.rollups.Add(1)
		return openaitest.Text("Summary: none"), true
	}
	if m.thinker.Add(1) == 1 {
		m.firstThinker = len(r.Body)
	}
	if len(m.bodies) < m.keepBodies {
		m.bodies = append(m.bodies, bytes.Clone(r.Body))
	}
	if msgs := r.Chat.Messages; len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		m.tools.add(msgs[len(msgs)-1].Content)
	} else if call, ok := benchToolCall(r.LastUser()); ok {
		m.tools.calls++
		return openaitest.ToolCalls(call), true
	}
	return openaitest.Text(benchReply + " ok"), true
}

// The markers of a person's message that makes the bench's model call a
// memory tool before it answers: memory_search with the rest of the line
// as its query, memory_read with it as the path.
const (
	searchMarker = "bench-search:"
	readMarker   = "bench-read:"
)

// benchToolCall is the call the bench's model makes for a person's message
// (its last user message) that carries a tool marker; false for any other.
func benchToolCall(lastUser string) (openaitest.ToolCall, bool) {
	for _, t := range [...]struct{ marker, tool, arg string }{
		{searchMarker, "memory_search", "query"},
		{readMarker, "memory_read", "path"},
	} {
		_, rest, ok := strings.Cut(lastUser, t.marker)
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "\n")
		args, _ := json.Marshal(map[string]string{t.arg: strings.TrimSpace(rest)})
		return openaitest.Call(t.tool, string(args)), true
	}
	return openaitest.ToolCall{}, false
}

// add counts one tool result: mnemo's agent words a failed call as
// "error: ..."; memory_search's "No entries match" found nothing.
func (t *toolResults) add(text string) {
	t.results++
	t.bytes += len(text)
	switch {
	case strings.HasPrefix(text, "error"):
		t.errors++
		if t.firstError == "" {
			t.firstError = text
		}
	case strings.HasPrefix(text, "No entries match"):
		t.misses++
	}
}

// reset forgets the counts and bodies.
func (m *benchModel) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.thinker.Store(0)
	m.reflector.Store(0)
	m.rollups.Store(0)
	m.bodies, m.firstThinker, m.maxReflector = nil, 0, 0
	m.tools = toolResults{}
}

// toolCounts is a copy of the tool calls and results so far.
func (m *benchModel) toolCounts() toolResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tools
}

// startReplay returns the kept Thinker bodies and a transport of one
// connection, the model answering as to a replay until done is called.
func (m *benchModel) startReplay() (bodies [][]byte, tr *http.Transport, done func()) {
	m.mu.Lock()
	bodies = m.bodies
	m.mu.Unlock()
	m.replaying.Store(true)
	tr = &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	return bodies, tr, func() {
		tr.CloseIdleConnections()
		m.replaying.Store(false)
	}
}

// replay sends the kept Thinker bodies again, one after the other on one
// connection, as a bare client would, and returns each round trip's time.
func (m *benchModel) replay(ctx context.Context) ([]time.Duration, error) {
	bodies, tr, done := m.startReplay()
	defer done()
	client := &http.Client{Transport: tr}
	url := m.srv.URL() + "/chat/completions"
	var out []time.Duration
	for _, body := range bodies {
		t0 := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bare client: %w", err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("bare client: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("bare client: the fake model answered %s", resp.Status)
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// replayClient sends the kept Thinker requests again through go-openai
// alone, the client library mnemo itself uses (each body decoded into its
// request type, streamed when the body asks for it and read to the end),
// one after the other on one connection, and returns each round trip's
// time: the part of a message's time that is the library's, not mnemo's.
func (m *benchModel) replayClient(ctx context.Context) ([]time.Duration, error) {
	bodies, tr, done := m.startReplay()
	defer done()
	cfg := goopenai.DefaultConfig("sk-bench")
	cfg.BaseURL, cfg.HTTPClient = m.srv.URL(), &http.Client{Transport: tr}
	client := goopenai.NewClientWithConfig(cfg)
	var out []time.Duration
	for _, body := range bodies {
		var req goopenai.ChatCompletionRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("go-openai client: a kept request: %w", err)
		}
		t0 := time.Now()
		if err := completeWith(ctx, client, req); err != nil {
			return nil, fmt.Errorf("go-openai client: %w", err)
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// completeWith sends req with client, streamed when req asks for it, and
// reads the reply to its end.
func completeWith(ctx context.Context, client *goopenai.Client, req goopenai.ChatCompletionRequest) error {
	if !req.Stream {
		_, err := client.CreateChatCompletion(ctx, req)
		return err
	}
	s, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		if _, err := s.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
