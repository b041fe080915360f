package console

import (
	"bytes"
	"io"
	"sync"
)

// Screen is a terminal the chat shares with its log (stdout and stderr
// at the same terminal): a log line that comes while the chat is in the
// middle of a line (a reply being written, the prompt being edited) is
// held and written once that line is finished, so it never lands inside
// it. The spinner's line, which redraws itself, is cleared for it instead.
// Write is the chat's output; Log the log's.
type Screen struct {
	mu   sync.Mutex
	out  io.Writer // the chat's
	log  io.Writer // the log's
	line lineState
	held bytes.Buffer
	done bool // Release: the chat is over, the log writes through
}

// lineState is what the chat's last line on the screen is.
type lineState int

const (
	lineStart     lineState = iota // at the start of an empty line
	lineTransient                  // the spinner's: cleared and redrawn at will
	lineMiddle                     // a line being written
)

// NewScreen is the screen of a chat writing to out whose log writes to log.
func NewScreen(out, log io.Writer) *Screen { return &Screen{out: out, log: log} }

// Write writes the chat's p, then the log lines held while its line was
// unfinished once p finishes it.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.out.Write(p)
	if len(p) == 0 {
		return n, err
	}
	switch {
	case bytes.HasSuffix(p, []byte("\n")), string(p) == "\r"+clearRight: // a line ended, or the spinner's cleared
		s.line = lineStart
	case bytes.HasPrefix(p, []byte("\r")) && bytes.HasSuffix(p, []byte(clearRight)):
		s.line = lineTransient
	default:
		s.line = lineMiddle
	}
	if s.line == lineStart && s.held.Len() > 0 {
		s.held.WriteTo(s.log)
	}
	return n, err
}

// Log is the writer of the chat's log.
func (s *Screen) Log() io.Writer { return logWriter{s} }

// Release writes what the log holds and lets it write through from now
// on: the chat no longer writes.
func (s *Screen) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.held.Len() > 0 {
		s.held.WriteTo(s.log)
	}
}

type logWriter struct{ s *Screen }

func (w logWriter) Write(p []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.done || s.line == lineStart:
		return s.log.Write(p)
	case s.line == lineTransient:
		// The spinner's line: cleared, the log written, and the spinner
		// draws itself again below at its next turn.
		io.WriteString(s.out, "\r"+clearRight)
		s.line = lineStart
		return s.log.Write(p)
	}
	return s.held.Write(p)
}
