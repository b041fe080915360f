package openaitest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestNewServerOutsideATest(t *testing.T) {
	s := NewServer()
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL() = %q, want 127.0.0.1", s.URL())
	}
	s.Handle(func(r Request) (Reply, bool) { return Text("echo: " + r.LastUser()), true })
	resp, err := client(s, "k").CreateChatCompletion(context.Background(), chatReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: hi" {
		t.Errorf("reply = %q", got)
	}
	if got := s.WaitRequests(1, time.Second); len(got) != 1 || got[0].LastUser() != "hi" {
		t.Errorf("WaitRequests = %+v", got)
	}

	// Nothing closes it but Close; after that it is gone.
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
	s.Close()
	closed = true
	s.Close() // a second Close is harmless
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("server still listening on %s after Close", addr)
	}
}

func TestNewServerWaitRequestsTimeoutPanics(t *testing.T) {
	s := NewServer()
	defer s.Close()
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "waited") || !strings.Contains(msg, "for 1 requests, got 0") {
			t.Errorf("recovered %q, want the WaitRequests timeout message", msg)
		}
	}()
	s.WaitRequests(1, 10*time.Millisecond)
	t.Error("WaitRequests returned instead of panicking")
}

func TestDiscardRequests(t *testing.T) {
	s := New(t)
	s.Handle(func(Request) (Reply, bool) { return Text("ok"), true })
	c := client(s, "k")
	for _, msg := range []string{"one", "two"} {
		if _, err := c.CreateChatCompletion(context.Background(), chatReq(msg)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.DiscardRequests(); n != 2 {
		t.Errorf("DiscardRequests = %d, want 2", n)
	}
	if got := s.Requests(); len(got) != 0 {
		t.Errorf("Requests after discard = %d, want 0", len(got))
	}
	if n := s.DiscardRequests(); n != 0 {
		t.Errorf("second DiscardRequests = %d, want 0", n)
	}
	if _, err := c.CreateChatCompletion(context.Background(), chatReq("three")); err != nil {
		t.Fatal(err)
	}
	got := s.WaitRequests(1, time.Second)
	if len(got) != 1 || got[0].Seq != 1 || got[0].LastUser() != "three" {
		t.Errorf("after discard: %d requests, first Seq %d %q; want 1, Seq 1, three", len(got), got[0].Seq, got[0].LastUser())
	}
}

// A handler may discard from inside itself, as a long-running server does.
func TestDiscardRequestsFromHandler(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Handle(func(Request) (Reply, bool) {
		s.DiscardRequests()
		return Text("ok"), true
	})
	c := client(s, "k")
	for range 5 {
		if _, err := c.CreateChatCompletion(context.Background(), chatReq("x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Requests(); len(got) != 0 {
		t.Errorf("recorded %d requests, want 0", len(got))
	}
}
