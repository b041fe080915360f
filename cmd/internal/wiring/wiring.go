// Package wiring assembles mnemo's core — the memory store, the reflector
// and the Thinker — with one Open and one Close (Core), and connects the
// store to the small interfaces the agent and the reflector define. The
// commands that run mnemo (cmd/mnemo's chat and serve, and the load tool)
// all open the core here, so they run the same code.
package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

// Memory satisfies agent.Memory and reflector.Memory with a store.
type Memory struct {
	Store       *memory.Store
	IndexBudget int // bytes of the iteration-1 index; 0: memory.DefaultIndexBudget
	// OnToolCall, when set, is told of every memory tool call and its
	// error (nil when it succeeded): the metrics count them.
	OnToolCall func(tool string, err error)
}

// observed wraps tools so OnToolCall hears of each call.
func (m Memory) observed(tools []mnemo.Tool) []mnemo.Tool {
	if m.OnToolCall == nil {
		return tools
	}
	out := make([]mnemo.Tool, len(tools))
	for i, t := range tools {
		call := t.Call
		t.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
			res, err := call(ctx, args)
			m.OnToolCall(t.Name, err)
			return res, err
		}
		out[i] = t
	}
	return out
}

var (
	_ agent.Memory     = Memory{}
	_ reflector.Memory = Memory{}
)

// Files opens user in store and lists their memory files.
func Files(store *memory.Store, user string) (*memory.User, []memory.FileInfo, error) {
	u, err := store.User(user)
	if err != nil {
		return nil, nil, err
	}
	files, err := u.List()
	return u, files, err
}

// View is the memory a scope may see (memory.NewView): the one place
// where a task's or a reflection's scope becomes files.
func View(store *memory.Store, s mnemo.Scope) (*memory.View, error) {
	u, err := store.User(s.User)
	if err != nil {
		return nil, err
	}
	var ch *memory.User
	if s.Channel != "" {
		if err := mnemo.ValidateChannel(s.Channel); err != nil {
			return nil, err
		}
		if ch, err = store.User(s.Channel); err != nil {
			return nil, err
		}
	}
	return memory.NewView(u, s.Shared, ch), nil
}

// Index is the scope's memory index as the Thinker injects it.
func (m Memory) Index(s mnemo.Scope) (string, error) {
	v, err := View(m.Store, s)
	if err != nil {
		return "", err
	}
	return v.Index(m.IndexBudget)
}

// ReadTools are the Thinker's tools, on a fresh view of the scope.
func (m Memory) ReadTools(s mnemo.Scope) ([]mnemo.Tool, error) {
	v, err := View(m.Store, s)
	if err != nil {
		return nil, err
	}
	return m.observed(memory.ReadTools(v)), nil
}

// Prepare opens a reflection on a view of the scope: pre-loaded facts,
// the episode index and all six tools bound to that view, whose changes
// are told to onCommit just before they are made, each line stamped with
// the turn of said (the batch, oldest first) that said it
// (memory.SetSources).
func (m Memory) Prepare(scope mnemo.Scope, said []mnemo.Turn, factsBudget int, onCommit func(reflector.Commit) error) (reflector.Prepared, error) {
	s, err := View(m.Store, scope)
	if err != nil {
		return reflector.Prepared{}, err
	}
	batch := make([]memory.Said, len(said))
	for i, t := range said {
		batch[i] = memory.SaidOf(t)
	}
	s.SetSources(batch)
	if onCommit != nil {
		s.OnCommit(func(c memory.Commit) error {
			return onCommit(reflector.Commit{Path: c.Path, Kind: string(c.Kind), Before: versionID(c.Before), After: versionID(c.After)})
		})
	}
	facts, episodes, err := s.Preload(factsBudget)
	if err != nil {
		return reflector.Prepared{}, err
	}
	version := func(p string) (string, error) {
		v, err := s.Version(p)
		return versionID(v), err
	}
	return reflector.Prepared{Facts: facts, Episodes: episodes, Tools: m.observed(memory.AllTools(s)), Version: version}, nil
}

// versionID names a content: its size and SHA-256, "" for no file.
func versionID(v memory.Version) string {
	if !v.Exists {
		return ""
	}
	return fmt.Sprintf("%d:%x", v.Size, v.Hash)
}

// ModelWriteBuffer is the size of the buffer a connection to the model
// server writes a request through: a request up to it (headers and body:
// a Thinker's, and a reflector's, which mnemo keeps under about 22 KB) goes
// out in one write, one system call and one TCP segment burst, where Go's
// default of 4 KB cut every request of more than 4 KB in two (the buffer
// full, then the rest of the body).
const ModelWriteBuffer = 32 << 10

// ModelTransport is the HTTP transport for the model server: enough idle
// connections per host for the tasks that run at once (Go's default of 2
// would make most model calls open a new connection, and a TLS handshake),
// each writing its requests through a buffer of ModelWriteBuffer.
func ModelTransport(maxConcurrent int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(maxConcurrent*2, 16)
	t.WriteBufferSize = ModelWriteBuffer
	return t
}
