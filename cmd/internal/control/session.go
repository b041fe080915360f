package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxEvent bounds one event line of a session, the final newline included:
// a message or a reply of 1 MiB, every byte of it escaped by JSON.
const MaxEvent = 8 << 20

// writeTimeout bounds each write of a session: a peer that stops reading
// is dropped rather than waited for.
const writeTimeout = requestTimeout

// Event is one line of a session, either way. Type says what it is; the
// other fields are that type's (the session operation's handler and its
// client give them their meaning; see doc.go).
type Event struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
	// Error is why a request failed, or why a session ended.
	Error string `json:"error,omitempty"`
	// Flags of a reply.
	Failed   bool `json:"failed,omitempty"`
	Forgot   bool `json:"forgot,omitempty"`
	Streamed bool `json:"streamed,omitempty"`
	Cut      bool `json:"cut,omitempty"`
}

// ParseEvent decodes one event line (without or with its newline).
func ParseEvent(line []byte) (Event, error) {
	var e Event
	if err := decodeLine(line, MaxEvent, &e); err != nil {
		return Event{}, fmt.Errorf("control: bad event: %w", err)
	}
	if e.Type == "" {
		return Event{}, errors.New(`control: bad event: "type" is missing`)
	}
	return e, nil
}

// encodeEvent is e as one line, or an error when it is longer than MaxEvent.
func encodeEvent(e Event) ([]byte, error) {
	line := encodeLine(e)
	if len(line) > MaxEvent {
		return nil, fmt.Errorf("control: a %q event of %d bytes is longer than %d", e.Type, len(line), MaxEvent)
	}
	return line, nil
}

// readEvent reads one line of at most limit bytes from br.
func readEvent(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > limit {
			return nil, fmt.Errorf("the line is longer than %d bytes", limit)
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// SessionHandler serves a session operation: it calls Session.Open to take
// the request (or returns an error, sent as the answer, to refuse it), then
// exchanges events until the peer ends (Events is closed) or the server
// closes (Closing), and returns; the server then hangs up. ctx ends when
// the server is closed and gives up waiting.
type SessionHandler func(ctx context.Context, req Request, s *Session) error

// Options are a server's session operations.
type Options struct {
	// Sessions maps an operation to its handler: its connection stays open
	// after the answer and carries events both ways.
	Sessions map[string]SessionHandler
	// MaxSessions bounds the sessions open at once (more are refused,
	// saying so); <= 0: 8.
	MaxSessions int
}

// Session is one connection of a session operation, on the server.
type Session struct {
	c       *net.UnixConn
	br      *bufio.Reader
	closing <-chan struct{}
	events  chan Event
	opened  bool
	onOpen  func() // starts the reader
	readErr error  // why events was closed: io.EOF when the peer ended

	mu     sync.Mutex  // orders writes
	broken error       // the first write that failed: later ones fail at once
	hung   atomic.Bool // the server hung up (hangUp): every write fails
}

// errHungUp is a write's error once the server hung up on the session.
var errHungUp = errors.New("control: the server hung up: it is closing")

// Open takes the request, answering it OK with message; events flow from
// now on.
func (s *Session) Open(message string) error {
	if s.opened {
		return errors.New("control: session already open")
	}
	s.opened = true
	if err := s.write(encodeLine(Response{OK: true, Message: message})); err != nil {
		close(s.events)
		s.readErr = err
		return err
	}
	s.onOpen()
	return nil
}

// Events are the peer's events, in order; it is closed when the peer ends
// the session, breaks the protocol, or the server closes (Err says which).
func (s *Session) Events() <-chan Event { return s.events }

// Err is why Events was closed: io.EOF when the peer ended the session.
// Read it only once Events is closed.
func (s *Session) Err() error { return s.readErr }

// Closing is closed when the server begins to close: end the session.
func (s *Session) Closing() <-chan struct{} { return s.closing }

// Send writes e to the peer. A write waits at most writeTimeout; after one
// fails, every later Send fails at once with its error.
func (s *Session) Send(e Event) error {
	line, err := encodeEvent(e)
	if err != nil {
		return err
	}
	return s.write(line)
}

func (s *Session) write(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	_ = s.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if s.hung.Load() { // checked after the deadline is set: hangUp's may have been overwritten
		s.broken = errHungUp
		return s.broken
	}
	if _, err := s.c.Write(line); err != nil {
		s.broken = fmt.Errorf("control: the client no longer listens: %w", err)
		return s.broken
	}
	return nil
}

// read feeds Events until the connection ends.
func (s *Session) read() {
	defer close(s.events)
	for {
		line, err := readEvent(s.br, MaxEvent)
		var e Event
		if err == nil {
			e, err = ParseEvent(line)
		}
		if err != nil {
			s.readErr = err
			return
		}
		s.events <- e
	}
}

// serveSession runs h on c for req: refused when MaxSessions are open.
func (s *Server) serveSession(c *net.UnixConn, br *bufio.Reader, req Request, h SessionHandler) {
	sess := &Session{c: c, br: br, closing: s.closing, events: make(chan Event)}
	s.mu.Lock()
	full := len(s.sessions) >= s.maxSessions
	if !full {
		s.sessions[sess] = struct{}{}
	}
	s.mu.Unlock()
	if full {
		s.log.Warn("control: refused a session: too many open", "op", req.Op, "max", s.maxSessions)
		_ = sess.write(encodeLine(Response{Error: fmt.Sprintf("control: refused: %d %q sessions are open, the most this process takes; end one and try again", s.maxSessions, req.Op)}))
		return
	}
	var once sync.Once
	release := func() { // its place is free before the client hears of the refusal
		once.Do(func() {
			s.mu.Lock()
			delete(s.sessions, sess)
			s.mu.Unlock()
		})
	}
	defer release()
	// A session waits on a person: no read deadline; its writes are bounded.
	_ = c.SetReadDeadline(time.Time{})
	sess.onOpen = func() { go sess.read() }
	err := h(s.ctx, req, sess)
	if !sess.opened {
		if err == nil {
			err = errors.New("control: the session was not opened")
		}
		release()
		_ = sess.write(encodeLine(Response{Error: err.Error()}))
		return
	}
	if err != nil {
		s.log.Warn("control: session ended with an error", "op", req.Op, "user", req.User, "err", err)
	}
	// The reader stops at the deadline; what it still hands over is dropped.
	_ = c.SetReadDeadline(time.Now())
	for range sess.events {
	}
}

// hangUp makes every session's reads and writes fail at once (Close,
// when it gives up waiting).
func (s *Server) hangUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sess := range s.sessions {
		sess.hung.Store(true)
		_ = sess.c.SetDeadline(time.Now()) // a write in progress fails now, a later one at once
	}
}

// Conn is the client end of a session (Open): events flow both ways.
type Conn struct {
	c  *net.UnixConn
	br *bufio.Reader
	mu sync.Mutex
	// Message is the server's answer to the request.
	Message string
}

// Open asks the server at path for the session req and returns it once the
// server took it. Errors are as Call's: a *NoServerError when nothing
// answers, the server's own text when it refuses.
func Open(ctx context.Context, path string, req Request) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var sys *os.SyscallError
		if errors.As(err, &sys) {
			err = sys
		}
		return nil, &NoServerError{Path: path, Err: err}
	}
	c := nc.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	_, werr := c.Write(encodeLine(req))
	br := bufio.NewReaderSize(c, 64<<10)
	line, err := readEvent(br, MaxResponse)
	if err != nil && werr != nil {
		err = werr
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("stopped waiting for the answer: %w", ctx.Err())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return nil, fmt.Errorf("the process on %s hung up without an answer (did it stop?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	resp, err := ParseResponse(line)
	if err != nil {
		return nil, err
	}
	if !resp.OK {
		return nil, errors.New(resp.Error)
	}
	_ = c.SetDeadline(time.Time{})
	ok = true
	return &Conn{c: c, br: br, Message: resp.Message}, nil
}

// Send writes e to the server, waiting at most writeTimeout.
func (c *Conn) Send(e Event) error {
	line, err := encodeEvent(e)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = c.c.Write(line)
	return err
}

// Recv reads the server's next event; io.EOF when the server hung up
// between events.
func (c *Conn) Recv() (Event, error) {
	line, err := readEvent(c.br, MaxEvent)
	if err != nil {
		return Event{}, err
	}
	return ParseEvent(line)
}

// CloseWrite tells the server the session is over; Recv still reads what
// it sends until it hangs up.
func (c *Conn) CloseWrite() error { return c.c.CloseWrite() }

// Close hangs up; a Recv waiting returns.
func (c *Conn) Close() error { return c.c.Close() }
