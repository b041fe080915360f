package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestToolResult(t *testing.T) {
	m := ToolResult(ToolCall{ID: "c1", Name: "memory_read", Arguments: `{}`}, "text")
	if m.Role != RoleTool || m.ToolCallID != "c1" || m.Name != "memory_read" || m.Content != "text" || m.ToolCalls != nil {
		t.Errorf("ToolResult = %+v", m)
	}
}

type completer struct {
	resp Response
	err  error
}

func (c completer) Complete(context.Context, Request) (Response, error) { return c.resp, c.err }

type streamer struct{ completer }

func (s streamer) Stream(_ context.Context, _ Request, onText func(string) error) (Response, error) {
	return s.resp, onText("streamed")
}

// Stream streams a Streamer; a Model that does not stream is completed
// and its text handed on once (also with a truncation), never a failure's;
// onText's error comes back.
func TestStream(t *testing.T) {
	text := func(s string) Response { return Response{Message: Message{Content: s}} }
	var got []string
	onText := func(d string) error { got = append(got, d); return nil }
	stop := errors.New("stop")
	for _, c := range []struct {
		m       Model
		onText  func(string) error
		want    string
		wantErr error
	}{
		{streamer{completer{resp: text("x")}}, onText, "streamed", nil},
		{completer{resp: text("whole")}, onText, "whole", nil},
		{completer{resp: text("cut short"), err: ErrTruncated}, onText, "cut short", ErrTruncated},
		{completer{resp: text("no"), err: ErrAuth}, onText, "", ErrAuth},
		{completer{resp: text("")}, onText, "", nil},
		{completer{resp: text("stopped")}, func(string) error { return stop }, "", stop},
	} {
		got = nil
		_, err := Stream(context.Background(), c.m, Request{}, c.onText)
		if strings.Join(got, "|") != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
			t.Errorf("%T: handed on %q, err %v; want %q, %v", c.m, got, err, c.want, c.wantErr)
		}
	}
}
