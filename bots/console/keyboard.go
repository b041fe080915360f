package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// keyboard stands between the terminal and the line editor
// (golang.org/x/term's Terminal). One goroutine reads the terminal, so
// keys can be watched for Ctrl-C while a reply is being written; at a
// prompt the editor reads through Read, which
//   - ends a line at Ctrl-C (the line comes back with interrupted set),
//   - turns a bracketed paste of several lines into one message part
//     (the editor would return each pasted line as if Enter was pressed),
//   - maps the Home/End/word keys the editor does not know (tmux's
//     ESC[1~, ESC[4~, Ctrl+arrows, Alt+Backspace, ESC O x) to ones it does,
//   - hands over at most one line, so no typed-ahead key is lost when the
//     editor returns.
type keyboard struct {
	chunks <-chan []byte
	stop   chan struct{}
	err    error // why chunks was closed: set before the close

	ctx   context.Context // ends a Read that waits for keys
	buf   []byte          // read, not yet looked at
	ready []byte          // looked at, for the editor
	eof   bool            // chunks is closed: no more keys

	interrupted bool     // the line just read ended with Ctrl-C
	pasted      []string // lines of a multi-line paste after the line just read
	pasteCut    bool     // a paste was longer than maxLine and was cut
}

const (
	keyCtrlC = 0x03
	keyCtrlD = 0x04
	keyEnd   = "\x05"
)

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
	// keyMap maps key sequences the editor does not know to ones it does.
	keyMap = map[string]string{
		"\x1b[1~": "\x01", "\x1b[7~": "\x01", "\x1bOH": "\x01", // Home
		"\x1b[4~": keyEnd, "\x1b[8~": keyEnd, "\x1bOF": keyEnd, // End
		"\x1bOA": "\x1b[A", "\x1bOB": "\x1b[B", "\x1bOC": "\x1b[C", "\x1bOD": "\x1b[D",
		"\x1b[1;5C": "\x1b[1;3C", "\x1b[1;5D": "\x1b[1;3D", // Ctrl+arrows: a word
		"\x1bf": "\x1b[1;3C", "\x1bb": "\x1b[1;3D", // Alt-f, Alt-b
		"\x1b\x7f": "\x17", // Alt-Backspace: delete a word
	}
)

// errInterrupt ends Read at Ctrl-C; never seen outside this file.
var errInterrupt = errors.New("console: interrupted")

func newKeyboard(in io.Reader) *keyboard {
	chunks := make(chan []byte)
	k := &keyboard{chunks: chunks, stop: make(chan struct{}), ctx: context.Background()}
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 4096)
			n, err := in.Read(b)
			if n > 0 {
				select {
				case chunks <- b[:n]:
				case <-k.stop:
					return
				}
			}
			if err != nil {
				k.err = err
				return
			}
		}
	}()
	return k
}

// close lets the reading goroutine end: at once when it is waiting to
// hand over keys, else at the terminal's next key or its end.
func (k *keyboard) close() { close(k.stop) }

// fill waits for more keys. At the end of input it returns io.EOF, or
// the read error.
func (k *keyboard) fill() error {
	if k.eof {
		return k.endErr()
	}
	select {
	case b, ok := <-k.chunks:
		if !ok {
			k.eof = true
			return k.endErr()
		}
		k.buf = append(k.buf, b...)
		return nil
	case <-k.ctx.Done():
		return k.ctx.Err()
	}
}

func (k *keyboard) endErr() error {
	if k.err == nil || errors.Is(k.err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("console: reading the terminal: %w", k.err)
}

// Read gives the editor the keys up to the end of one line.
func (k *keyboard) Read(p []byte) (int, error) {
	for len(k.ready) == 0 {
		more, err := k.scan()
		if err != nil {
			return 0, err
		}
		if !more {
			break
		}
		if err := k.fill(); err != nil {
			if len(k.buf) > 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				// The input ended inside a key sequence: hand it over as it is.
				k.ready, k.buf = append(k.ready, k.buf...), nil
				break
			}
			return 0, err
		}
	}
	n := copy(p, k.ready)
	k.ready = k.ready[n:]
	return n, nil
}

// scan moves keys from buf to ready until a line ends, and reports
// whether it needs more keys first.
func (k *keyboard) scan() (more bool, err error) {
	for len(k.buf) > 0 {
		b := k.buf
		switch c := b[0]; {
		case c == keyCtrlC:
			k.buf = b[1:]
			// End the line as Enter does, with "^C" shown after it; the
			// session drops the line.
			k.interrupted = true
			k.ready = append(k.ready, keyEnd+"\x1b[200~^C\x1b[201~\r"...)
			return false, nil
		case c == '\r' || c == '\n':
			n := 1
			if c == '\r' && len(b) > 1 && b[1] == '\n' {
				n = 2
			}
			k.ready = append(k.ready, b[:n]...)
			k.buf = b[n:]
			return false, nil
		case c == keyCtrlD:
			k.ready = append(k.ready, c)
			k.buf = b[1:]
			return false, nil
		case c == 0x1b:
			if bytes.HasPrefix(b, pasteStart) {
				if len(k.ready) > 0 {
					return false, nil // the keys before the paste first
				}
				return false, k.paste()
			}
			seq, to, partial := matchKey(b)
			if seq == 0 && !partial {
				seq, to, partial = escape(b)
			}
			if partial && !k.eof {
				return len(k.ready) == 0, nil
			}
			k.ready = append(k.ready, to...)
			k.buf = b[max(seq, 1):]
		case c >= utf8.RuneSelf:
			if !utf8.FullRune(b) && !k.eof {
				return len(k.ready) == 0, nil
			}
			// A byte that is not UTF-8 is dropped: the editor would wait
			// for more keys before it looks at the ones after it.
			r, n := utf8.DecodeRune(b)
			if r != utf8.RuneError || n > 1 {
				k.ready = append(k.ready, b[:n]...)
			}
			k.buf = b[n:]
		default:
			k.ready = append(k.ready, c)
			k.buf = b[1:]
		}
	}
	return len(k.ready) == 0, nil
}

// matchKey finds a sequence of keyMap (or the paste start) at the start
// of b: its length and replacement, or partial when b is only its start.
func matchKey(b []byte) (n int, to string, partial bool) {
	if len(b) < len(pasteStart) && bytes.HasPrefix(pasteStart, b) {
		return 0, "", true
	}
	for from, to := range keyMap {
		switch {
		case bytes.HasPrefix(b, []byte(from)):
			return len(from), to, false
		case len(b) < len(from) && strings.HasPrefix(from, string(b)):
			partial = true
		}
	}
	return 0, "", partial
}

// maxEscape bounds a key's escape sequence; a longer one is not a key.
const maxEscape = 16

// escape finds the end of an escape sequence the editor parses itself (up
// to a letter or ~, as it does). One it would wait on for ever (no end
// within maxEscape) or cut by a control key loses its ESC, and the rest
// is typed as text.
func escape(b []byte) (n int, to string, partial bool) {
	for i := 1; i < len(b) && i < maxEscape; i++ {
		switch c := b[i]; {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '~':
			return i + 1, string(b[:i+1]), false
		case c < 0x20 || c == 0x7f:
			return 1, "", false // a control key (Ctrl-C) after a lone ESC is that key
		}
	}
	if len(b) < maxEscape {
		return 0, "", true
	}
	return 1, "", false
}

// paste takes a bracketed paste from buf (reading until its end). One
// line goes to the editor as a paste (inserted as it is, never sent); of
// several, the first ends the line being edited and the rest wait in
// pasted for the session.
func (k *keyboard) paste() error {
	k.buf = k.buf[len(pasteStart):]
	var text []byte
	for {
		if i := bytes.Index(k.buf, pasteEnd); i >= 0 {
			text = keep(text, k.buf[:i], &k.pasteCut)
			k.buf = k.buf[i+len(pasteEnd):]
			break
		}
		// Keep the tail that may be the start of the end marker.
		cut := max(0, len(k.buf)-len(pasteEnd)+1)
		text = keep(text, k.buf[:cut], &k.pasteCut)
		k.buf = k.buf[cut:]
		if err := k.fill(); err != nil {
			if errors.Is(err, io.EOF) {
				text = keep(text, k.buf, &k.pasteCut)
				k.buf = nil
				break
			}
			return err
		}
	}
	lines := pasteLines(string(text))
	k.ready = append(k.ready, "\x1b[200~"+lines[0]+"\x1b[201~"...)
	if len(lines) > 1 {
		k.ready = append(k.ready, '\r')
		k.pasted = lines[1:]
	}
	return nil
}

// keep appends b to text up to maxLine bytes, noting a cut.
func keep(text, b []byte, cut *bool) []byte {
	if room := maxLine - len(text); len(b) > room {
		*cut = true
		b = b[:room]
	}
	return append(text, b...)
}

// pasteLines splits pasted text into lines the editor can show: line
// ends of any kind, one final line end dropped, tabs as four spaces,
// other control characters removed.
func pasteLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				return -1
			}
			return r
		}, strings.ReplaceAll(l, "\t", "    "))
	}
	return lines
}

// takePasted returns (and forgets) the lines a paste left for the session.
func (k *keyboard) takePasted() []string {
	p := k.pasted
	k.pasted = nil
	return p
}

// watch waits for done while a reply is being written, and reports
// whether Ctrl-C was pressed first. Other keys wait for the next prompt.
func (k *keyboard) watch(done <-chan struct{}) bool {
	// A Ctrl-C typed ahead counts for this reply when no Enter came
	// between (after one, it is for the line typed ahead).
	if i := bytes.IndexAny(k.buf, "\x03\r\n"); i >= 0 && k.buf[i] == keyCtrlC {
		k.buf = append(k.buf[:i], k.buf[i+1:]...)
		return true
	}
	chunks := k.chunks
	if k.eof {
		chunks = nil
	}
	for {
		select {
		case <-done:
			return false
		case b, ok := <-chunks:
			if !ok {
				k.eof, chunks = true, nil
				continue
			}
			if i := bytes.IndexByte(b, keyCtrlC); i >= 0 {
				k.buf = append(k.buf, b[:i]...)
				k.buf = append(k.buf, b[i+1:]...)
				return true
			}
			k.buf = append(k.buf, b...)
		}
	}
}
