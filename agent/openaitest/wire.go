package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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
	if reply.noUsage {
		out.Usage = nil
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
	if o := req.Chat.StreamOptions; o != nil && o.IncludeUsage && !rp.noUsage {
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
