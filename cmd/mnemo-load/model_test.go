package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

func msg(role llm.Role, content string) llm.Message {
	return llm.Message{Role: role, Content: content}
}

// ask sends msgs to a server answered by f and returns the reply message.
func ask(t *testing.T, srv *openaitest.Server, msgs ...llm.Message) llm.Message {
	t.Helper()
	resp, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", MaxRetries: -1}).Complete(context.Background(),
		llm.Request{Model: "m", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Message
}

func newTestModel(t *testing.T) (*fakeModel, *openaitest.Server) {
	srv := openaitest.New(t)
	f := newFakeModel(srv, 0)
	srv.Handle(f.reply)
	return f, srv
}

func TestFakeThinker(t *testing.T) {
	f, srv := newTestModel(t)
	sys := msg("system", "You are mnemo, a helpful assistant.")
	index := msg("user", "Available memory:\n- facts/topic-001.md (1KB): x\n- facts/user.md (200B): name\n\nUse memory_read ...")
	user := msg("user", "hi")

	got := ask(t, srv, sys, index, user)
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "memory_read" || got.ToolCalls[0].Arguments != `{"path":"facts/user.md"}` {
		t.Errorf("iteration 1 with facts/user.md listed: %+v", got)
	}
	read := llm.Message{Role: "tool", ToolCallID: "call_1", Content: "# User Facts\n\n- Name: Ada\n- Role: x\n"}
	call := llm.Message{Role: "assistant", ToolCalls: got.ToolCalls}
	if got := ask(t, srv, sys, index, user, call, read); !strings.Contains(got.Content, "- Name: Ada.") {
		t.Errorf("after the read: %q", got.Content)
	}
	read.Content = "error: no such memory file"
	if got := ask(t, srv, sys, index, user, call, read); !strings.Contains(got.Content, "no name") {
		t.Errorf("after a failed read: %q", got.Content)
	}
	if got := ask(t, srv, sys, msg("user", "Available memory: none yet."), user); got.Content == "" || len(got.ToolCalls) > 0 {
		t.Errorf("no memory: %+v", got)
	}
	if f.reads.Load() != 1 || f.unexpected.Load() != 0 || f.thinkerCalls.Load() != 4 {
		t.Errorf("reads %d, unexpected %d, calls %d", f.reads.Load(), f.unexpected.Load(), f.thinkerCalls.Load())
	}
	ask(t, srv, user) // not a shape the Thinker sends
	if f.unexpected.Load() != 1 {
		t.Errorf("unexpected = %d, want 1", f.unexpected.Load())
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the fake keeps %d requests recorded", n)
	}
}

func TestFakeReflector(t *testing.T) {
	f, srv := newTestModel(t)
	sys := msg("system", "You are the memory reflector of mnemo.")
	prompt := msg("user", "Today's date: 2026-07-04 (Saturday).\nMemory of user \"load-0001\". Reflect...\n\n2 turn(s). Only blocks ...")

	got := ask(t, srv, sys, prompt)
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "memory_append" {
		t.Fatalf("first call: %+v", got)
	}
	var args struct{ Path, Entry string }
	if err := json.Unmarshal([]byte(got.ToolCalls[0].Arguments), &args); err != nil {
		t.Fatal(err)
	}
	wantEntry := entryMarker + "0000001\n- Summary: load run entry 0000001\n- Date: 2026-07-04\n- Turns: 2 reflected in this run\n"
	if args.Path != "episodes/2026-07.md" || args.Entry != wantEntry {
		t.Errorf("append %q %q, want episodes/2026-07.md %q", args.Path, args.Entry, wantEntry)
	}
	call := llm.Message{Role: "assistant", ToolCalls: got.ToolCalls}
	ok := llm.Message{Role: "tool", ToolCallID: "call_1", Content: `{"success":true}`}
	if got := ask(t, srv, sys, prompt, call, ok); got.Content != "saved" {
		t.Errorf("after the append: %q", got.Content)
	}
	bad := ok
	bad.Content = "error: episodes/2026-07.md is open in an editor"
	ask(t, srv, sys, prompt, call, bad)
	nudge := msg("user", "Stop calling tools now.")
	ask(t, srv, sys, prompt, call, ok, nudge)
	if f.reflections.Load() != 1 || f.turns.Load() != 2 || f.appendErrors.Load() != 1 || f.reflectorCalls.Load() != 4 {
		t.Errorf("reflections %d, turns %d, append errors %d, calls %d", f.reflections.Load(), f.turns.Load(), f.appendErrors.Load(), f.reflectorCalls.Load())
	}
	if got := f.issuedEntries(); len(got) != 1 || got["0000001"] != "load-0001" {
		t.Errorf("issued = %v", got)
	}

	// A prompt without the date or the user is not one the fake understands.
	if got := ask(t, srv, sys, msg("user", "hello")); got.Content != "nothing to remember" {
		t.Errorf("unknown prompt: %q", got.Content)
	}
	if f.unexpected.Load() != 1 {
		t.Errorf("unexpected = %d, want 1", f.unexpected.Load())
	}
}
