package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"

	"github.com/mnemo-agent/mnemo/agent"
)

// echoModel answers every request with the number of messages it got.
type echoModel struct{}

func (echoModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{
		Role: llm.RoleAssistant, Content: fmt.Sprintf("I got %d messages and %d tools.", len(req.Messages), len(req.Tools))}}, nil
}

// storeMemory stands in for what cmd builds from the memory package:
// Index renders memory.RenderIndex of the user's files, ReadTools returns
// memory.ReadTools of a fresh session of the user.
type storeMemory struct{}

func (storeMemory) Index(mnemo.Scope) (string, error) { return "Available memory: none yet.", nil }

func (storeMemory) ReadTools(mnemo.Scope) ([]mnemo.Tool, error) {
	noop := func(context.Context, json.RawMessage) (string, error) { return "[]", nil }
	return []mnemo.Tool{{Name: "memory_list", Call: noop}, {Name: "memory_read", Call: noop}}, nil
}

func Example() {
	a, err := agent.New(agent.Config{
		Model:     echoModel{}, // in production: openai.New(openai.Config{BaseURL: ..., APIKey: ...})
		ModelName: "gpt-4o-mini",
		Memory:    storeMemory{},
		OnTurn: func(t mnemo.Turn) {
			fmt.Printf("turn for the reflector: %s said %q\n", t.User, t.UserText)
		},
	})
	if err != nil {
		panic(err)
	}
	reply, err := a.Handle(context.Background(), mnemo.Task{
		User: "ada", Conversation: "console:ada", Platform: "console", Text: "Hello!",
	})
	if err != nil {
		panic(err) // only when the context ended before the task started
	}
	fmt.Println(reply.Text, reply.Failed)
	// Output:
	// turn for the reflector: ada said "Hello!"
	// I got 3 messages and 2 tools. false
}
