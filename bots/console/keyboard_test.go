package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/logtest"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// chunked hands out its parts one Read at a time, as a terminal does.
type chunked struct {
	parts []string
	err   error // after the parts; nil → io.EOF
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// keyChat runs an interactive chat on keys (in parts) and returns what it
// sent and showed.
func keyChat(t *testing.T, cfg Config, parts ...string) ([]string, string, error) {
	t.Helper()
	h := bottest.NewHandler()
	var out strings.Builder
	cfg.In, cfg.Out, cfg.Interactive, cfg.User, cfg.Chat = &chunked{parts: parts}, &out, true, "alice", chatOf(t, "alice", h)
	err := Run(context.Background(), cfg)
	return texts(h.Tasks()), out.String(), err
}

func TestMultiLineMessages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		want  []string
	}{
		{"backslash", []string{"first\\\r", "  second \\\r", "third\r"}, []string{"first\n  second \nthird"}},
		{"block", []string{"\"\"\"\r", "  indented\r", "\r", "end\\\r", "\"\"\"\r"}, []string{"  indented\n\nend\\"}},
		{"paste then Enter", []string{"\x1b[200~a\nb\x1b[201~", "\r"}, []string{"a\nb"}},
		{"paste in a block", []string{"\"\"\"\r", "\x1b[200~a\nb\x1b[201~", "c\r", "\"\"\"\r"}, []string{"a\nb\nc"}},
		{"paste, line, backslash", []string{"\x1b[200~a\r\nb\r\n\x1b[201~", "c\\\r", "d\r"}, []string{"a\nb\nc\nd"}},
		{"one-line paste is not sent", []string{"x \x1b[200~pasted\n\x1b[201~", " y\r"}, []string{"x pasted y"}},
		{"paste split over reads", []string{"\x1b[2", "00~a\nb\x1b[2", "01", "~\r"}, []string{"a\nb"}},
		{"blank lines are not sent", []string{"\r", "   \r", "\\\r", "\r", "ok\r"}, []string{"ok"}},
		{"CRLF is one Enter", []string{"one\r\ntwo\r"}, []string{"one", "two"}},
		{"LF is Enter", []string{"one\ntwo\n"}, []string{"one", "two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := keyChat(t, Config{}, tc.parts...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("sent %q; want %q\nscreen: %q", got, tc.want, out)
			}
		})
	}
}

// Ctrl-C drops a half-typed message (also one over several lines); at an
// empty prompt it warns first, and the second in a row ends the chat.
// Ctrl-D ends it at an empty prompt and deletes a character elsewhere.
func TestCtrlCAndCtrlDAtThePrompt(t *testing.T) {
	got, out, err := keyChat(t, Config{}, "one\\\r", "two\x03", "\x03", "x\x03", "\x03", "\x03", "never\r")
	if err != nil || len(got) != 0 {
		t.Errorf("sent %q, err %v; screen %q", got, err, out)
	}
	if strings.Count(out, "Ctrl-C again") != 2 || !strings.Contains(out, "two^C") || !strings.Contains(out, "x^C") {
		t.Errorf("screen %q", out)
	}
	got, _, err = keyChat(t, Config{}, "abc\x01\x04\r")
	if err != nil || strings.Join(got, "|") != "bc" {
		t.Errorf("Ctrl-D in a line: sent %q, err %v", got, err)
	}
	// Ctrl-D inside a multi-line message ends the chat; nothing is sent.
	got, _, err = keyChat(t, Config{}, "one\\\r", "\x04", "never\r")
	if err != nil || len(got) != 0 {
		t.Errorf("sent %q, err %v", got, err)
	}
}

func TestKeysTheEditorDoesNotKnow(t *testing.T) {
	// ESC O x arrows, ESC[7~/ESC[8~ Home/End, Alt-b / Alt-f; a lone ESC
	// and an unknown sequence pass to the editor; input ending inside a
	// sequence is handed over as it is.
	got, out, err := keyChat(t, Config{}, "ac\x1bOD", "b\x1b[7~<\x1b[8~>\x1bb_\x1bf=\r", "x\x1b[5~y\r", "z\x1b[1")
	if err != nil || strings.Join(got, "|") != "_<abc>=|xy" {
		t.Errorf("sent %q, err %v; screen %q", got, err, out)
	}
	// Split over reads: a character, and the Delete key the editor parses.
	if got, out, err := keyChat(t, Config{}, "\xc3", "\xa9ab\x1b[D\x1b[3", "~\r"); err != nil || strings.Join(got, "|") != "éa" {
		t.Errorf("split keys: sent %q, err %v; screen %q", got, err, out)
	}
	if got, out, err := keyChat(t, Config{}, "\x1b[1"); err != nil || len(got) != 0 {
		t.Errorf("input ending in a sequence: sent %q, err %v; screen %q", got, err, out)
	}
}

// In colour, continuation prompts and notices are dimmed.
func TestColourPrompts(t *testing.T) {
	_, out, err := keyChat(t, Config{Color: true}, "a\\\r", "\x03", "\x03")
	if err != nil || !strings.Contains(out, ansiDim+promptMore+ansiReset) || !strings.Contains(out, "mnemo: "+ansiDim+"press Ctrl-C again") {
		t.Errorf("err %v; screen %q", err, out)
	}
}

func TestPasteLines(t *testing.T) {
	got := pasteLines("a\tb\x1b[31m\x07c\u0085\r\nd\re\n")
	if strings.Join(got, "|") != "a    b[31mc|d|e" {
		t.Errorf("pasteLines = %q", got)
	}
}

// A paste longer than maxLine is cut, and the chat says so.
func TestLongPasteIsCut(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	got, out, err := keyChat(t, Config{}, "\x1b[200~"+long[:maxLine/2], long[maxLine/2:]+"\x1b[201~", "\r")
	if err != nil || len(got) != 1 || len(got[0]) != maxLine || !strings.Contains(out, "the paste was cut") {
		t.Fatalf("sent %d message(s), err %v; screen ends %q", len(got), err, out[max(0, len(out)-300):])
	}
	// A paste the input ends inside is taken as far as it goes.
	got, _, err = keyChat(t, Config{}, "\x1b[200~a\nb")
	if err != nil || len(got) != 0 {
		t.Errorf("unterminated paste: sent %q, err %v", got, err)
	}
}

// A read error (not the end of input) ends the chat with that error,
// also in the middle of a paste.
func TestReadErrors(t *testing.T) {
	broken := errors.New("tty gone")
	for _, parts := range [][]string{{"abc"}, {"\x1b[200~abc"}} {
		h := bottest.NewHandler()
		err := Run(context.Background(), Config{In: &chunked{parts: parts, err: broken}, Out: io.Discard, Interactive: true, User: "a", Chat: chatOf(t, "a", h)})
		if !errors.Is(err, broken) || !strings.Contains(err.Error(), "console: reading the terminal: tty gone") {
			t.Errorf("%q: Run = %v; want %v", parts, err, broken)
		}
	}
}

// Cancelling Run's context ends a chat waiting for keys, and a paste
// waiting for its end, with ctx.Err().
func TestCancelWhileEditing(t *testing.T) {
	for _, keys := range []string{"typing", "\x1b[200~pasting"} {
		r, w := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{In: r, Out: io.Discard, Interactive: true, User: "a", Chat: chatOf(t, "a", bottest.NewHandler())})
		}()
		w.Write([]byte(keys)) // returns once the chat has the keys
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("%q: Run after cancel = %v", keys, err)
		}
		w.Close()
	}
}

// Keys typed while the model works wait for the next prompt; a Ctrl-C
// typed ahead (before the reply started) still cancels it; an end of
// input meanwhile lets the reply finish.
func TestKeysWhileTheModelWorks(t *testing.T) {
	h := &ctxHandler{started: make(chan mnemo.Task, 1)}
	r, w := io.Pipe()
	var out logtest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{In: r, Out: &out, Interactive: true, User: "a", Chat: chatOf(t, "a", h)})
	}()
	w.Write([]byte("slow\r"))
	<-h.started
	w.Write([]byte("next\rslow\r")) // typed while the model works
	w.Write([]byte("\x03"))
	<-h.started // "next" was answered after the cancel, then "slow" again
	w.Write([]byte("\x03"))
	w.Write([]byte("slow\r\x03")) // Ctrl-C typed before the reply started
	<-h.started
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Count(s, "reply cancelled") != 3 || !strings.Contains(s, "mnemo> fast: next") {
		t.Errorf("screen %q", s)
	}

	// The input ends while the model works: the reply is still shown.
	hb := bottest.NewHandler()
	release := hb.Hold()
	r, w = io.Pipe()
	out = logtest.Buffer{}
	go func() {
		done <- Run(context.Background(), Config{In: r, Out: &out, Interactive: true, User: "a", Chat: chatOf(t, "a", hb)})
	}()
	w.Write([]byte("hi\r"))
	hb.WaitTasks(t, 1, wait)
	w.Close()
	release()
	if err := <-done; err != nil || !strings.Contains(out.String(), "mnemo> echo: hi") {
		t.Errorf("Run = %v; screen %q", err, out.String())
	}
}

// The spinner turns every spinEvery while the model works and its line
// is cleared when it stops (on a fake clock).
func TestThinkingIndicator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out logtest.Buffer
		sp := thinking(&out, false)
		if got := out.String(); got != "\r⠋ thinking… (Ctrl-C cancels)"+clearRight {
			t.Errorf("first frame %q", got)
		}
		time.Sleep(2*spinEvery + spinEvery/2)
		synctest.Wait()
		if got := out.String(); strings.Count(got, "thinking…") != 3 || !strings.Contains(got, "\r⠹ thinking") {
			t.Errorf("after two ticks %q", got)
		}
		sp.label("reading facts/user.md…")
		if got := out.String(); !strings.HasSuffix(got, "\r⠹ reading facts/user.md… (Ctrl-C cancels)"+clearRight) {
			t.Errorf("a status does not replace the label at once: %q", got)
		}
		time.Sleep(spinEvery)
		synctest.Wait()
		if got := out.String(); !strings.HasSuffix(got, "\r⠸ reading facts/user.md… (Ctrl-C cancels)"+clearRight) {
			t.Errorf("the status does not turn with the spinner: %q", got)
		}
		sp.label("")
		if got := out.String(); !strings.HasSuffix(got, "⠸ thinking… (Ctrl-C cancels)"+clearRight) {
			t.Errorf("an empty status does not bring the label back: %q", got)
		}
		sp.stop()
		sp.stop() // twice is once
		if got := out.String(); !strings.HasSuffix(got, "\r"+clearRight) || strings.HasSuffix(got, "\r"+clearRight+"\r"+clearRight) {
			t.Errorf("not cleared once: %q", got)
		}
		n := len(out.String())
		time.Sleep(10 * spinEvery)
		sp.label("late")
		if len(out.String()) != n {
			t.Error("the spinner turned or drew after stop")
		}
	})
	var out logtest.Buffer
	thinking(&out, true).stop()
	if !strings.HasPrefix(out.String(), "\r"+ansiDim+"⠋") {
		t.Errorf("coloured frame %q", out.String())
	}
}

// Keys the editor would wait on for ever do not stop a line: a byte that
// is not UTF-8 is dropped, and an escape sequence with no end loses its
// ESC (the editor would hold it, and what follows, until more keys came).
func TestKeysThatWouldStallTheEditor(t *testing.T) {
	h := bottest.NewHandler()
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{In: r, Out: io.Discard, Interactive: true, User: "a", Chat: chatOf(t, "a", h)})
	}()
	long := "\x1b[" + strings.Repeat("1", 300)
	w.Write([]byte("a\xffb\r" + long + "\r"))
	got := texts(h.WaitTasks(t, 2, wait))
	if got[0] != "ab" || got[1] != "["+strings.Repeat("1", 300) {
		t.Errorf("sent %q", got)
	}
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _, err := keyChat(t, Config{}, "c\x1b\x03d\r"); err != nil || strings.Join(got, "|") != "d" {
		t.Errorf("ESC then Ctrl-C: sent %q, err %v; want the line dropped", got, err)
	}
}
