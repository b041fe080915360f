package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"golang.org/x/term"
)

// session is an interactive chat: a person at a terminal.
type session struct {
	cfg   Config
	kb    *keyboard
	hist  *history
	fd    int  // the terminal's, for its width; -1 when In is not one
	armed bool // the last key was Ctrl-C at an empty prompt (or cancelled a reply)
}

// errQuit ends a chat at the second Ctrl-C.
var errQuit = errors.New("console: quit")

const (
	promptYou  = "you> "
	promptMore = "...  "
)

func runInteractive(ctx context.Context, cfg Config) (err error) {
	s := &session{cfg: cfg, fd: -1}
	if fd, ok := terminalFd(cfg.In); ok {
		restore, rerr := rawMode(fd)
		if rerr != nil {
			return fmt.Errorf("console: cannot read keys from the terminal: %w", rerr)
		}
		s.fd = fd
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				err = fmt.Errorf("console: cannot restore the terminal (run `reset`): %w", rerr)
			}
		}()
		out := cfg.Out
		if sc, ok := out.(*Screen); ok {
			out = sc.out
		}
		if _, ok := terminalFd(out); ok {
			// Bracketed paste: the terminal marks pasted text, so
			// several pasted lines are one message.
			fmt.Fprint(cfg.Out, "\x1b[?2004h")
			defer fmt.Fprint(cfg.Out, "\x1b[?2004l")
		}
	}
	s.kb = newKeyboard(cfg.In)
	s.kb.ctx = ctx
	defer s.kb.close()
	hist, herr := openHistory(cfg.HistoryRoot, cfg.History)
	s.hist = hist
	defer hist.close()

	fmt.Fprintf(cfg.Out, "mnemo: chatting as %s. %s\n", cfg.User, help)
	if herr != nil {
		s.notice(fmt.Sprintf("%v; ↑ recalls only this chat's messages (check that folder's owner and permissions)", herr))
	}
	for {
		fmt.Fprintln(cfg.Out)
		text, err := s.readMessage()
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, errQuit):
			fmt.Fprintln(cfg.Out)
			return nil
		case err != nil:
			fmt.Fprintln(cfg.Out)
			return err
		}
		if !strings.Contains(text, "\n") {
			if herr := s.hist.record(text); herr != nil {
				s.notice(fmt.Sprintf("%v; earlier messages are kept for this chat only", herr))
			}
		}
		switch text {
		case "/quit", "/exit":
			return nil
		case "/help":
			fmt.Fprintln(cfg.Out, interactiveHelp)
			continue
		}
		if err := s.turn(ctx, text); err != nil {
			return err
		}
	}
}

// terminalFd returns the descriptor of r when it is a terminal. Not by
// f.Fd, which would make f's reads blocking (so that closing f could no
// longer end a read waiting on it).
func terminalFd(r any) (int, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return -1, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, false
	}
	fd := -1
	rc.Control(func(u uintptr) { fd = int(u) })
	return fd, fd >= 0 && term.IsTerminal(fd)
}

// notice tells the person something about the chat itself.
func (s *session) notice(msg string) {
	if s.cfg.Color {
		msg = ansiDim + msg + ansiReset
	}
	fmt.Fprintf(s.cfg.Out, "mnemo: %s\n", msg)
}

// readLine edits one line with a fresh editor (its state is one line's).
func (s *session) readLine(prompt string) (string, error) {
	if s.cfg.Color {
		c := ansiYou
		if prompt == promptMore {
			c = ansiDim
		}
		prompt = c + prompt + ansiReset
	}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{s.kb, s.cfg.Out}, prompt)
	t.History = s.hist
	if s.fd >= 0 {
		if w, h, err := term.GetSize(s.fd); err == nil && w > 0 {
			t.SetSize(w, h)
		}
	}
	// No term.ErrPasteIndicator: the keyboard never hands over an Enter
	// inside a paste, so no line is only pasted.
	return t.ReadLine()
}

// readMessage reads one message: a line; or several, when a line ends
// with \, a paste holds several, or they stand between """ lines.
// Ctrl-C drops what was typed; at an empty prompt it warns, and a second
// one in a row returns errQuit.
func (s *session) readMessage() (string, error) {
	var lines []string
	block, more := false, false
	for {
		prompt := promptYou
		if block || more {
			prompt = promptMore
		}
		line, err := s.readLine(prompt)
		if err != nil {
			return "", err
		}
		if s.kb.pasteCut {
			s.kb.pasteCut = false
			s.notice(fmt.Sprintf("the paste was cut at %d bytes", maxLine))
		}
		if s.kb.interrupted {
			s.kb.interrupted = false
			line = strings.TrimSuffix(line, "^C")
			if line == "" && len(lines) == 0 {
				if s.armed {
					return "", errQuit
				}
				s.armed = true
				s.notice("press Ctrl-C again or Ctrl-D to quit")
			} else {
				s.armed = false
			}
			lines, block, more = nil, false, false
			continue
		}
		s.armed = false
		if pasted := s.kb.takePasted(); pasted != nil {
			// The editor showed the first line; show the rest as they
			// will be sent, then let the person add a line (or press Enter).
			for _, p := range pasted {
				fmt.Fprintln(s.cfg.Out, promptMore+p)
			}
			lines = append(append(lines, line), pasted...)
			more = !block
			continue
		}
		switch {
		case block && line == `"""`:
			return join(lines), nil
		case block:
			lines = append(lines, line)
			continue
		case len(lines) == 0 && strings.TrimSpace(line) == `"""`:
			block = true
			continue
		case strings.HasSuffix(line, `\`):
			lines = append(lines, strings.TrimSuffix(line, `\`))
			more = true
			continue
		}
		if line != "" || len(lines) == 0 {
			lines = append(lines, line)
		}
		if text := join(lines); text != "" {
			return text, nil
		}
		lines, more = nil, false
	}
}

// join makes lines one message: blank lines and spaces around it dropped,
// the indentation of its lines kept.
func join(lines []string) string {
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "\n") {
		return strings.TrimSpace(text)
	}
	return strings.Trim(strings.TrimRight(text, " \t\n"), "\n")
}

// turn sends text to the chat and shows the reply as it is written;
// Ctrl-C cancels it (what was shown stays).
func (s *session) turn(ctx context.Context, text string) error {
	id := mnemo.NewTaskID() // named here so that Cancel can name it
	done := make(chan struct{})
	var (
		said Said
		err  error
	)
	ts := &termStream{out: s.cfg.Out, color: s.cfg.Color, width: s.columns, start: time.Now(),
		visible: s.cfg.FirstVisible, spin: thinking(s.cfg.Out, s.cfg.Color)}
	go func() {
		defer close(done)
		said, err = s.cfg.Chat.Say(context.WithoutCancel(ctx), Line{ID: id, Text: text, Show: ts})
	}()
	if s.kb.watch(done) {
		s.cfg.Chat.Cancel(id)
		<-done
		ts.spin.stop()
		if ts.shown {
			ts.finish(Said{}) // keep what was shown, its last line rendered
		}
		s.armed = true
		s.notice("^C: reply cancelled; this message will not be remembered (Ctrl-C again quits)")
		return nil
	}
	if err != nil {
		ts.spin.stop()
		return err // only when the line could not be taken at all
	}
	if said.Forgot {
		s.hist.forget() // nothing typed before comes back with the up arrow
	}
	ts.finish(said)
	return nil
}

// columns is the terminal's width, or 0 when unknown.
func (s *session) columns() int {
	if s.fd < 0 {
		return 0
	}
	w, _, err := term.GetSize(s.fd)
	if err != nil {
		return 0
	}
	return w
}
