package openaitest

import (
	"fmt"
)

// NewServer starts a server on 127.0.0.1 outside a test, for a program such
// as a load generator (cmd/mnemo-load). It is the same server New returns,
// with two differences: nothing closes it by itself, so the caller must
// call Close; and WaitRequests, which fails a test when it times out, panics
// instead.
//
// A server records every chat completion request it answers; one that
// serves many of them should drop them from time to time with
// DiscardRequests.
func NewServer() *Server {
	return New(standaloneTB{})
}

// DiscardRequests drops the requests recorded so far, so that a server
// answering many requests does not keep them all in memory, and returns how
// many it dropped (the stream chunks recorded go too). Requests afterwards are numbered (Request.Seq) from 1
// again, and Requests and WaitRequests see only those.
func (s *Server) DiscardRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.requests)
	s.requests, s.chunks = nil, nil
	return n
}

// standaloneTB is the fake.T of a server made by NewServer: its methods
// behave sensibly outside a test.
type standaloneTB struct{}

func (standaloneTB) Helper() {}

// Cleanup drops f: the caller of NewServer closes the server itself.
func (standaloneTB) Cleanup(func()) {}

func (standaloneTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
