package control

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/logtest"
)

// wait bounds the waits of these tests; reached only when one fails.
const wait = 30 * time.Second

// echo is a session handler: it opens, answers each event with its text
// upper-cased, and on Closing says "end" and returns. ended gets why the
// events stopped.
func echo(ended chan<- error) SessionHandler {
	return func(ctx context.Context, req Request, s *Session) error {
		if req.User == "nobody" {
			return errors.New("nobody may chat")
		}
		if err := s.Open("hello " + req.User); err != nil {
			return err
		}
		for {
			select {
			case <-s.Closing():
				s.Send(Event{Type: "end", Text: "stopping"})
				return nil
			case e, ok := <-s.Events():
				if !ok {
					ended <- s.Err()
					return nil
				}
				if e.Type == "stuck" { // ignores Closing until the server gives up
					s.Send(Event{Type: "stuck"})
					<-ctx.Done()
					ended <- s.Send(Event{Type: "late"})
					return nil
				}
				if err := s.Send(Event{Type: "echo", Text: strings.ToUpper(e.Text)}); err != nil {
					return err
				}
			}
		}
	}
}

func listenSessions(t *testing.T, path string, h SessionHandler, max int) (*Server, *logtest.Buffer) {
	t.Helper()
	var logs logtest.Buffer
	s, err := Listen(path, func(context.Context, Request) (string, error) { return "", errors.New("unknown control operation") },
		Options{Sessions: map[string]SessionHandler{"chat": h}, MaxSessions: max}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, &logs
}

func recv(t *testing.T, c *Conn) Event {
	t.Helper()
	e, err := c.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return e
}

// A session carries events both ways until the client ends it; the
// handler sees the end as io.EOF.
func TestSessionExchangesEvents(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	ended := make(chan error, 1)
	listenSessions(t, path, echo(ended), 2)
	c, err := Open(context.Background(), path, Request{Op: "chat", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Message != "hello bob" {
		t.Errorf("Message %q", c.Message)
	}
	for _, text := range []string{"hi", strings.Repeat("x\n\u0001", 1<<18)} {
		if err := c.Send(Event{Type: "say", Text: text}); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, c); e.Type != "echo" || e.Text != strings.ToUpper(text) {
			t.Fatalf("got %q (%d bytes)", e.Type, len(e.Text))
		}
	}
	c.CloseWrite()
	if err := <-ended; !errors.Is(err, io.EOF) {
		t.Errorf("the handler saw %v, want EOF", err)
	}
	if _, err := c.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the end Recv = %v, want EOF", err)
	}
	// A plain request is still answered by the Handler.
	if _, err := Call(context.Background(), path, Request{Op: "forget"}); err == nil || err.Error() != "unknown control operation" {
		t.Errorf("Call = %v", err)
	}
}

// Refusals: by the handler before it opens, past MaxSessions, and an
// operation the server does not know (an older mnemo).
func TestSessionRefusals(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	ended := make(chan error, 2)
	listenSessions(t, path, echo(ended), 1)
	if _, err := Open(context.Background(), path, Request{Op: "chat", User: "nobody"}); err == nil || err.Error() != "nobody may chat" {
		t.Errorf("refused by the handler: %v", err)
	}
	c, err := Open(context.Background(), path, Request{Op: "chat", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), path, Request{Op: "chat", User: "carol"})
	if err == nil || err.Error() != `control: refused: 1 "chat" sessions are open, the most this process takes; end one and try again` {
		t.Errorf("past the limit: %v", err)
	}
	c.CloseWrite()
	<-ended
	if _, err := c.Recv(); !errors.Is(err, io.EOF) { // hung up: its place is free
		t.Fatalf("after the end: %v", err)
	}
	c.Close()
	c, err = Open(context.Background(), path, Request{Op: "chat", User: "carol"})
	if err != nil {
		t.Fatalf("once the first ended: %v", err)
	}
	c.Close()
	<-ended

	old := filepath.Join(shortDir(t), "mnemo.sock")
	listen(t, old, func(_ context.Context, r Request) (string, error) {
		return "", errors.New(`unknown control operation "` + r.Op + `"`)
	})
	if _, err := Open(context.Background(), old, Request{Op: "chat"}); err == nil || err.Error() != `unknown control operation "chat"` {
		t.Errorf("an older server: %v", err)
	}
	if _, err := Open(context.Background(), filepath.Join(shortDir(t), "none.sock"), Request{Op: "chat"}); !errors.Is(err, ErrNoServer) {
		t.Errorf("no server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, path, Request{Op: "chat"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Close ends the sessions: an idle one is told (Closing); one that does
// not heed it is hung up on when Close's context ends, and Close returns.
func TestCloseEndsSessions(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	ended := make(chan error, 1)
	s, _ := listenSessions(t, path, echo(ended), 2)
	idle, err := Open(context.Background(), path, Request{Op: "chat", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	stuck, err := Open(context.Background(), path, Request{Op: "chat", User: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if err := stuck.Send(Event{Type: "stuck"}); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, stuck); e.Type != "stuck" {
		t.Fatalf("got %+v", e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	if e := recv(t, idle); e.Type != "end" || e.Text != "stopping" {
		t.Errorf("idle session got %+v", e)
	}
	if _, err := idle.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("idle session after the end: %v", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a session running", err)
	default:
	}
	cancel()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err == nil {
		t.Error("a write after the hang-up succeeded")
	}
	if _, err := stuck.Recv(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("stuck session: %v", err)
	}
}

// A client that breaks the protocol ends its session: the handler is told
// why.
func TestSessionBadEvents(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	ended := make(chan error, 1)
	listenSessions(t, path, echo(ended), 2)
	for _, bad := range []struct{ line, want string }{
		{`{"text":"no type"}` + "\n", `"type" is missing`},
		{`{"type":"say","extra":1}` + "\n", `unknown field "extra"`},
		{`{"type":"say"}`, "unexpected EOF"},
		{strings.Repeat("x", MaxEvent+1), "longer than"},
	} {
		c, err := Open(context.Background(), path, Request{Op: "chat", User: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		c.c.Write([]byte(bad.line))
		c.CloseWrite()
		if err := <-ended; err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%.40q: handler saw %v, want %q", bad.line, err, bad.want)
		}
		c.Close()
	}
}

// A request line followed at once by events: nothing is lost between the
// request and the session.
func TestSessionEventsRightAfterTheRequest(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	ended := make(chan error, 1)
	listenSessions(t, path, echo(ended), 2)
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte(`{"op":"chat","user":"bob"}` + "\n" + `{"type":"say","text":"one"}` + "\n"))
	br := bufio.NewReader(nc)
	for _, want := range []string{`{"ok":true,"message":"hello bob"}`, `{"type":"echo","text":"ONE"}`} {
		line, err := br.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != want {
			t.Fatalf("got %q, %v; want %s", line, err, want)
		}
	}
	nc.(*net.UnixConn).CloseWrite()
	<-ended
}

func TestEventEncodingBounds(t *testing.T) {
	if _, err := encodeEvent(Event{Type: "reply", Text: strings.Repeat("\u0001", MaxEvent/6+1)}); err == nil {
		t.Error("an event longer than MaxEvent was encoded")
	}
	c := &Conn{}
	if err := c.Send(Event{Type: "say", Text: strings.Repeat("\u0001", MaxEvent/6+1)}); err == nil {
		t.Error("Send took an event longer than MaxEvent")
	}
	s := &Session{}
	if err := s.Send(Event{Type: "say", Text: strings.Repeat("\u0001", MaxEvent/6+1)}); err == nil {
		t.Error("Session.Send took an event longer than MaxEvent")
	}
}

// Handlers that misuse a session, and servers that answer a session's
// request badly: each is an error that says what happened.
func TestSessionMisuse(t *testing.T) {
	path := filepath.Join(shortDir(t), "mnemo.sock")
	twice := make(chan error, 1)
	s, err := Listen(path, nil, Options{Sessions: map[string]SessionHandler{
		"silent": func(context.Context, Request, *Session) error { return nil },
		"twice": func(_ context.Context, _ Request, s *Session) error {
			s.Open("")
			twice <- s.Open("")
			return nil
		},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := Open(context.Background(), path, Request{Op: "silent"}); err == nil || err.Error() != "control: the session was not opened" {
		t.Errorf("a handler that never opens: %v", err)
	}
	c, err := Open(context.Background(), path, Request{Op: "twice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the handler returned: %v", err)
	}
	c.Close()
	if err := <-twice; err == nil || err.Error() != "control: session already open" {
		t.Errorf("a second Open: %v", err)
	}

	for _, tc := range []struct {
		name   string
		answer func(c net.Conn)
		want   string
	}{
		{"hangs up", func(net.Conn) {}, "hung up without an answer (did it stop?)"},
		{"garbage", func(c net.Conn) { c.Write([]byte("hello\n")) }, "control: bad response"},
		{"too long", func(c net.Conn) { c.Write([]byte(strings.Repeat("x", MaxResponse+1))) }, "longer than"},
	} {
		p := filepath.Join(shortDir(t), "fake.sock")
		fakeServer(t, p, tc.answer)
		if _, err := Open(context.Background(), p, Request{Op: "chat"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkSessionRoundTrip is one event to the server and its answer
// back over a session: the cost a chat through the owner adds per streamed
// piece of a reply, and per message.
func BenchmarkSessionRoundTrip(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.sock")
	if len(path) > maxPath {
		path = filepath.Join("/tmp", fmt.Sprintf("ctlb%d.sock", os.Getpid()))
	}
	ended := make(chan error, 1)
	s, err := Listen(path, nil, Options{Sessions: map[string]SessionHandler{"chat": echo(ended)}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	c, err := Open(context.Background(), path, Request{Op: "chat", User: "bob"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	e := Event{Type: "text", Text: "the next few words of a reply "}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Send(e); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	<-ended
}

// The bounds are exact: an event line of MaxEvent bytes (its newline
// included) is sent and read; one byte more is refused on both sides.
func TestEventBoundsExact(t *testing.T) {
	base := len(encodeLine(Event{Type: "text", Text: "x"})) // {"type":"text","text":"x"}\n
	at := Event{Type: "text", Text: strings.Repeat("x", MaxEvent-base+1)}
	line, err := encodeEvent(at)
	if err != nil || len(line) != MaxEvent {
		t.Fatalf("an event of exactly MaxEvent bytes: %d bytes, %v", len(line), err)
	}
	if _, err := encodeEvent(Event{Type: "text", Text: at.Text + "x"}); err == nil {
		t.Error("an event of MaxEvent+1 bytes was encoded")
	}
	got, err := readEvent(bufio.NewReaderSize(bytes.NewReader(line), 4096), MaxEvent)
	if err != nil || len(got) != MaxEvent {
		t.Errorf("reading a line of exactly the limit: %d bytes, %v", len(got), err)
	}
	long := append(bytes.Repeat([]byte("y"), MaxEvent), '\n')
	if _, err := readEvent(bufio.NewReaderSize(bytes.NewReader(long), 4096), MaxEvent); err == nil {
		t.Error("a line of MaxEvent+1 bytes was read")
	}
}
