package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// Config configures the terminal chat of one person.
type Config struct {
	In  io.Reader
	Out io.Writer
	// Interactive: a person at a terminal. The chat greets, edits lines
	// (in raw mode when In is a terminal), keeps History, shows that the
	// model is working, and Ctrl-C cancels a reply.
	Interactive bool
	Color       bool   // render the model's Markdown and the prompts with ANSI styles
	User        string // the memory user, for the greeting
	// Chat answers every line but the chat's own words (/help, /quit):
	// messages, /memory and its aliases.
	Chat Conversation
	// History is the file of the messages sent in interactive chats, for
	// the up arrow ("" → this session only). It is created with mode 0600.
	History string
	// HistoryRoot, when set, is History's folder, opened (the caller's,
	// who closes it): the file is opened through it. nil: History's
	// folder is made and opened here.
	HistoryRoot *os.Root
	// FirstVisible, when set, is told for each streamed reply how long
	// after the message its first words were written.
	FirstVisible func(time.Duration)
	// Unanswered, when set, counts the messages that got no real answer
	// (a piped chat then exits 1).
	Unanswered *atomic.Int64
}

// maxLine bounds one input line (a pasted log is fine; a runaway pipe is not).
const maxLine = 1 << 20

const help = `Type a message and press Enter. Commands:
  /memory                what mnemo remembers about you, each file private or shared
  /memory share FILE     let mnemo use FILE in Slack and Discord channels too
  /memory private FILE   keep FILE to private conversations again (the default)
  /memory why TEXT       where mnemo learned what it remembers about TEXT, and who changed it
  /memory forget FILE    delete one file (asks first; /forget yes confirms)
  /memory forget all     delete all of it (asks first; also /forget)
  /memory remember TEXT  keep TEXT in your memory, as you asked (also /remember TEXT;
                         /remember alone keeps your message before it)
  /memory undo           take out what /memory remember kept last
  /help                  this help
  /quit                  end the chat (or Ctrl-D)`

const interactiveHelp = help + `
Lines: ←/→, Home/End, Ctrl-W deletes a word, ↑/↓ recall earlier messages.
Several lines: paste them, end a line with \ to go on, or put the message between """ lines.
While mnemo thinks, Ctrl-C cancels the reply (that message is not remembered); Ctrl-C twice quits.`

// Run reads messages until the input ends, /quit or ctx ends, answering
// each through cfg.Chat. It returns nil at the end of input (Ctrl-D, or
// Ctrl-C twice at a terminal) and ctx.Err() when cancelled. A message
// already sent is answered even when ctx ends meanwhile; at a terminal
// Ctrl-C cancels it.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Unanswered == nil {
		cfg.Unanswered = new(atomic.Int64)
	}
	if cfg.Interactive {
		return runInteractive(ctx, cfg)
	}
	// The messages are answered as they are read, one at a time: the next
	// line is read once the reply is written, so replies come in order.
	// mu is held while one is answered; ctx's end takes it, so a message
	// already sent is answered before Run returns, and none after.
	var mu sync.Mutex
	stopped := false
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(cfg.In)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			mu.Lock()
			if stopped {
				mu.Unlock()
				return
			}
			quit, err := pipedLine(ctx, cfg, sc.Text())
			mu.Unlock()
			if quit || err != nil {
				done <- err
				return
			}
		}
		err := sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("console: a line is longer than %d bytes", maxLine)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		mu.Lock()
		stopped = true
		mu.Unlock()
		return ctx.Err()
	}
}

// pipedLine answers one line of piped input; quit: /quit or /exit. An
// error means the line could not be taken at all.
func pipedLine(ctx context.Context, cfg Config, line string) (quit bool, err error) {
	text := strings.TrimSpace(line)
	switch {
	case text == "":
		return false, nil
	case text == "/quit" || text == "/exit":
		return true, nil
	case text == "/help":
		fmt.Fprintln(cfg.Out, help)
		return false, nil
	}
	// The reply streams to the pipe as it is written: the text alone.
	ps := &pipedStream{out: cfg.Out, start: time.Now(), visible: cfg.FirstVisible}
	said, err := cfg.Chat.Say(context.WithoutCancel(ctx), Line{ID: mnemo.NewTaskID(), Text: text, Show: ps})
	if err != nil {
		return false, err
	}
	if said.Failed {
		cfg.Unanswered.Add(1)
	}
	ps.finish(said)
	return false, nil
}

// clean keeps the model's text from driving the terminal: no escape
// sequences, no bidi or zero-width tricks.
func cleanReply(s string) string { return strings.TrimSpace(clean.Text(s)) }
