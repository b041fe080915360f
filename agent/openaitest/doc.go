// Package openaitest is a scripted, in-process OpenAI-compatible server for
// tests. It listens on 127.0.0.1 only, speaks the chat.completions wire
// format (plain JSON, or server-sent events when the request says
// "stream": true) and records every request it gets.
//
// A test queues the replies it wants, in order, points the code under test
// at URL(), and afterwards inspects Requests():
//
//	srv := openaitest.New(t)
//	srv.Enqueue(
//		openaitest.Error(429, "rate_limit_exceeded", "slow down").WithRetryAfter("1"),
//		openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`)),
//		openaitest.Text("Hello again, Ada."),
//	)
//	model := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "test-key"}) // mnemo's llm/openai
//	// ... run the code under test with model ...
//	reqs := srv.Requests()
//	if got := reqs[0].Header.Get("Authorization"); got != "Bearer test-key" { ... }
//
// Instead of (or in front of) the queue, a Handler can decide each reply
// from the decoded request, for example to answer a background reflector
// differently from the main conversation:
//
//	srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
//		if strings.Contains(r.System(), "reflector") {
//			return openaitest.Text("nothing to remember"), true
//		}
//		return openaitest.Reply{}, false // let the queue answer
//	})
//
// When neither the handler nor the queue has a reply, the server answers
// HTTP 500 with an OpenAI error whose message says the script ran out, so a
// test that makes more calls than it scripted fails visibly.
//
// Requests are decoded with the server's own types (ChatRequest, Message,
// Tool), not a client library's, so the fake cannot share a client's
// mistakes and tests need no client library to read them.
//
// Replies are values: the With* methods return modified copies, so a Reply
// can be kept in a variable and reused.
//
// A request with "stream": true is answered as server-sent events, as
// OpenAI sends them: the text in pieces, tool calls in fragments keyed by
// index, the finish reason, a usage chunk when stream_options asks for it,
// then [DONE]. A reply can pace and break its stream: WithWordDelay sends
// a word per chunk with a model's timing, WithPauseAfter holds it until
// Resume (so a test sees what the first words did while the model is
// still writing), WithCutAfter drops the connection mid-reply and
// WithErrorAfter sends an error event. Every event is recorded with its
// time (Chunks, WaitChunks, WaitPaused), so tests wait on what was sent
// rather than sleeping:
//
//	srv.Enqueue(openaitest.Text("Hello there, Ada.").WithPauseAfter(2))
//	// ... start the code under test; wait until it shows "Hello there, " ...
//	srv.Resume()
//
// Besides POST /v1/chat/completions the server answers GET /v1/models with
// a model list (see SetModels), which is enough for liveness probes. Only
// chat completion requests are recorded.
package openaitest
