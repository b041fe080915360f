package control

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Bounds of the protocol's lines, the final newline included.
const (
	MaxRequest  = 4 << 10
	MaxResponse = 64 << 10
)

// requestTimeout bounds how long a client may take to send its request
// line, so that a stuck client does not hold a connection forever.
const requestTimeout = 10 * time.Second

// maxPath is the longest socket path the platform accepts (sun_path less
// its terminating NUL: 107 bytes on Linux, 103 on macOS).
var maxPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// Request asks the server to do one operation.
type Request struct {
	Op   string `json:"op"`
	User string `json:"user,omitempty"`
	Path string `json:"path,omitempty"`
	// KeepHistory: a forget leaves the earlier versions of the files.
	KeepHistory bool `json:"keep_history,omitempty"`
	// Arg is an operation's argument besides User and Path (access: the
	// id or code).
	Arg string `json:"arg,omitempty"`
}

// Response is the server's answer: OK with a Message saying what was done,
// or not OK with an Error saying why not.
type Response struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Handler does one request and says what it did (a line for the person who
// asked), or returns an error (shown to them as it is). ctx ends only when
// the server is closed and gives up waiting.
type Handler func(ctx context.Context, req Request) (string, error)

// ParseRequest decodes one request line (without or with its newline).
func ParseRequest(line []byte) (Request, error) {
	var r Request
	if err := decodeLine(line, MaxRequest, &r); err != nil {
		return Request{}, fmt.Errorf("control: bad request: %w", err)
	}
	if r.Op == "" {
		return Request{}, errors.New(`control: bad request: "op" is missing`)
	}
	return r, nil
}

// ParseResponse decodes one response line (without or with its newline).
func ParseResponse(line []byte) (Response, error) {
	var r Response
	if err := decodeLine(line, MaxResponse, &r); err != nil {
		return Response{}, fmt.Errorf("control: bad response: %w", err)
	}
	if !r.OK && r.Error == "" {
		return Response{}, errors.New("control: bad response: neither ok nor an error")
	}
	return r, nil
}

// decodeLine decodes exactly one JSON object from line: nothing after it
// but the newline, no unknown field, at most limit bytes.
func decodeLine(line []byte, limit int, v any) error {
	if len(line) > limit {
		return fmt.Errorf("the line is longer than %d bytes", limit)
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("more than one line")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// encodeLine renders v as one line. json.Marshal escapes every newline
// inside strings, so the line has none but its last.
func encodeLine(v any) []byte {
	b, _ := json.Marshal(v) // strings and a bool only: it cannot fail
	return append(b, '\n')
}

// readLine reads up to and including '\n', at most limit bytes.
func readLine(r io.Reader, limit int) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, int64(limit)+1), 512)
	line, err := br.ReadBytes('\n')
	switch {
	case err == nil:
		return line, nil
	case len(line) > limit:
		return nil, fmt.Errorf("the line is longer than %d bytes", limit)
	case errors.Is(err, io.EOF):
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

// Server serves a Handler on a unix socket.
type Server struct {
	path   string
	ln     *net.UnixListener
	h      Handler
	log    *slog.Logger
	ctx    context.Context // of the handlers; cancelled when Close gives up waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and the connections
	once   sync.Once
	// owner is the uid the server runs as: only it and root are answered.
	owner int

	ops         map[string]SessionHandler // Options.Sessions
	maxSessions int
	closing     chan struct{} // closed when Close begins
	mu          sync.Mutex
	sessions    map[*Session]struct{}
}

// Listen creates the socket at path (mode 0600) and serves h, and opts'
// session operations, on it until Close. A socket already at path is removed first: the caller owns the
// data folder, so it is one a dead process left. Anything else at path is
// an error naming it. A nil log discards.
func Listen(path string, h Handler, opts Options, log *slog.Logger) (*Server, error) {
	return listenShowing(path, h, opts, log, nil)
}

// listenShowing is Listen; made, when set, is shown the socket before it is
// renamed into place.
func listenShowing(path string, h Handler, opts Options, log *slog.Logger, made func(tmp string)) (*Server, error) {
	log = defaults.Logger(log)
	dir := filepath.Dir(path)
	// The socket is made as <dir>/.cXXXXXX/s first: no longer than
	// <dir>/mnemo.sock, since a socket path is bounded.
	if n := max(len(path), len(filepath.Join(dir, ".c123456", "s"))); n > maxPath {
		return nil, fmt.Errorf("control socket %s: the path is %d bytes long, and a unix socket's may be at most %d; set state.dir to a shorter folder", path, n, maxPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("control socket %s: %s is in the way; remove it", path, kind(fi.Mode()))
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control socket %s: remove the one a stopped process left: %w", path, err)
		}
	}
	// The socket is made in a new folder only this user may enter (0700),
	// so nobody else can connect to it while its mode is still what the
	// umask gave it (whatever the state folder's mode); it is made 0600,
	// then renamed into place.
	private := filepath.Join(dir, ".c"+rand.Text()[:6])
	if err := os.Mkdir(private, 0o700); err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer os.Remove(private) // empty once the socket is renamed out of it
	tmp := filepath.Join(private, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // it is renamed below; Close removes it by its final name
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		if made != nil {
			made(tmp)
		}
		// durable is the one package that renames: the socket moves from
		// its private folder into place.
		err = durable.Dir(dir).Rename(filepath.Join(filepath.Base(private), "s"), filepath.Base(path))
	}
	if err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	s := &Server{path: path, ln: ln, h: h, log: log, owner: os.Geteuid(),
		ops: opts.Sessions, maxSessions: opts.MaxSessions, closing: make(chan struct{}), sessions: map[*Session]struct{}{}}
	if s.maxSessions <= 0 {
		s.maxSessions = 8
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// kind names what a file is, for a message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file (" + m.Type().String() + ")"
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("control: accept failed; the control socket no longer answers", "socket", s.path, "err", err)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

// serve answers one connection.
func (s *Server) serve(c *net.UnixConn) {
	defer c.Close()
	if err := s.allowed(c); err != nil {
		// Told why, then closed unheard: the request is never read.
		s.log.Warn("control: refused a connection", "socket", s.path, "reason", err)
		_ = c.SetWriteDeadline(time.Now().Add(requestTimeout))
		_, _ = c.Write(encodeLine(Response{Error: "control: refused: " + err.Error()}))
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(requestTimeout))
	br := bufio.NewReaderSize(c, 4<<10)
	line, err := readEvent(br, MaxRequest)
	var req Request
	if err == nil {
		req, err = ParseRequest(line)
	} else {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		err = fmt.Errorf("control: reading the request: %w", err)
	}
	if sh, ok := s.ops[req.Op]; err == nil && ok {
		s.serveSession(c, br, req, sh)
		return
	}
	resp := Response{OK: true}
	if err == nil {
		resp.Message, err = s.h(s.ctx, req)
	}
	if err != nil {
		resp = Response{Error: err.Error()}
	}
	// The work is done whether or not the client is still there to hear it.
	_ = c.SetWriteDeadline(time.Now().Add(requestTimeout))
	if _, werr := c.Write(encodeLine(resp)); werr != nil {
		s.log.Warn("control: could not send the answer; the client left", "op", req.Op, "user", req.User, "err", werr)
	}
}

// allowed accepts the peer of c only when it runs as the server's own uid
// or as root: the socket's mode and folder keep others out, and this
// holds even if they are changed.
func (s *Server) allowed(c *net.UnixConn) error {
	uid, err := peerUID(c)
	if err != nil {
		return fmt.Errorf("cannot tell which user connected: %w", err)
	}
	if uid != s.owner && uid != 0 {
		return fmt.Errorf("the caller runs as uid %d; this mnemo answers only its own user (uid %d) and root: run the command as that user", uid, s.owner)
	}
	return nil
}

// Close stops taking requests, removes the socket and waits for the
// requests in progress to be answered; when ctx ends first, it cancels
// theirs and waits for them to return. A second Close returns nil at once.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		err = s.ln.Close()
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = rerr
		}
		done := make(chan struct{})
		go func() {
			s.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			s.hangUp()
			s.cancel()
			<-done
		}
		s.cancel()
		if err != nil {
			err = fmt.Errorf("control socket %s: %w", s.path, err)
		}
	})
	return err
}

// ErrNoServer matches (errors.Is) the error of Call when nothing answers
// at the socket: no socket file, or nobody listening on it.
var ErrNoServer = errors.New("nothing answers on the control socket")

// NoServerError is Call's error when nothing answers at Path; Err is the
// system's reason ("connect: connection refused").
type NoServerError struct {
	Path string
	Err  error
}

func (e *NoServerError) Error() string {
	return fmt.Sprintf("nothing answers on the control socket %s: %v", e.Path, e.Err)
}

func (e *NoServerError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoServer) true.
func (e *NoServerError) Is(target error) bool { return target == ErrNoServer }

// Call sends req to the server at path and waits for its answer, that is,
// until the server has done the work. It returns the server's message; an
// error the server reports is returned as it is (its text is the server's).
// When ctx ends first, the server may still finish the work.
func Call(ctx context.Context, path string, req Request) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var sys *os.SyscallError
		if errors.As(err, &sys) {
			err = sys // the dialer's error repeats the path
		}
		return "", &NoServerError{Path: path, Err: err}
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	// The answer is read even when the write fails: a server that refuses
	// the caller answers and hangs up without reading the request.
	_, werr := c.Write(encodeLine(req))
	line, err := readLine(c, MaxResponse)
	if err != nil && werr != nil {
		err = werr
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("stopped waiting for the answer (%w); the running process may still finish the request", ctx.Err())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return "", fmt.Errorf("the process on %s hung up without an answer (did it stop?): %w", path, err)
	}
	if err != nil {
		return "", fmt.Errorf("control socket %s: %w", path, err)
	}
	resp, err := ParseResponse(line)
	if err != nil {
		return "", err
	}
	if !resp.OK {
		return "", errors.New(resp.Error)
	}
	return resp.Message, nil
}
