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
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
)

// Handler answers one task; *agent.Agent satisfies it.
type Handler = mnemo.Handler

// Config configures a console session.
type Config struct {
	In  io.Reader
	Out io.Writer
	// Interactive: a person at a terminal. The chat greets, edits lines
	// (in raw mode when In is a terminal), keeps History, shows that the
	// model is working, and Ctrl-C cancels a reply.
	Interactive bool
	Color       bool // render the model's Markdown and the prompts with ANSI styles
	User        string
	Handler     Handler
	// Memory, when set, answers the /memory command with what is
	// remembered about the user, each file marked private or shared.
	Memory func(user string) (string, error)
	// Visibility, when set with Memory, carries out /memory share FILE
	// and /memory private FILE for the user (memorycmd's texts, as in Slack
	// and Discord).
	Visibility Visibility
	// Why, when set, answers /memory why TEXT: the user's lines that
	// match, where they came from and their history (memorycmd's Why).
	Why func(user, text string) (string, error)
	// Forget, when set, deletes all that is remembered about the user
	// (/forget, confirmed with "/forget yes") and says what it deleted.
	Forget func(user string) (string, error)
	// History is the file of the messages sent in interactive chats, for
	// the up arrow ("" → this session only). It is created with mode 0600.
	History string
	// HistoryRoot, when set, is History's folder, opened (the caller's,
	// who closes it): the file is opened through it. nil: History's
	// folder is made and opened here.
	HistoryRoot *os.Root
	// Withdraw, when set, is called with a task's ID before Ctrl-C
	// cancels it, so the turn is kept from the reflector.
	Withdraw func(taskID string)
	// FirstVisible, when set, is told for each streamed reply how long
	// after the message its first words were written.
	FirstVisible func(time.Duration)
	Now          func() time.Time
}

// Visibility is what /memory share and /memory private need of the
// memory store.
type Visibility = memorycmd.Visibility

// maxLine bounds one input line (a pasted log is fine; a runaway pipe is not).
const maxLine = 1 << 20

const help = `Type a message and press Enter. Commands:
  /memory                what mnemo remembers about you, each file private or shared
  /memory share FILE     let mnemo use FILE in Slack and Discord channels too
  /memory private FILE   keep FILE to private conversations again (the default)
  /memory why TEXT       where mnemo learned what it remembers about TEXT, and who changed it
  /forget                delete all of it (asks first)
  /help                  this help
  /quit                  end the chat (or Ctrl-D)`

const interactiveHelp = help + `
Lines: ←/→, Home/End, Ctrl-W deletes a word, ↑/↓ recall earlier messages.
Several lines: paste them, end a line with \ to go on, or put the message between """ lines.
While mnemo thinks, Ctrl-C cancels the reply (that message is not remembered); Ctrl-C twice quits.`

// Run reads messages until the input ends, /quit or ctx ends, answering
// each. It returns nil at the end of input (Ctrl-D, or Ctrl-C twice at a
// terminal) and ctx.Err() when cancelled. A message already sent is
// answered even when ctx ends meanwhile; at a terminal Ctrl-C cancels it.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interactive {
		return runInteractive(ctx, cfg)
	}
	// The messages are answered on the reader's goroutine, as they are
	// read: no hand-off (and no wake-up of another goroutine) per message.
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
// error means the task could not run at all.
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
	case isMemory(text) && cfg.Memory != nil:
		fmt.Fprintln(cfg.Out, memoryCommand(cfg, text))
		return false, nil
	case isForget(text) && cfg.Forget != nil:
		out, _ := forget(cfg, text)
		fmt.Fprintln(cfg.Out, out)
		return false, nil
	}
	// The reply streams to the pipe as it is written: the text alone.
	ps := &pipedStream{out: cfg.Out, start: time.Now(), visible: cfg.FirstVisible}
	t := task(cfg, text, "")
	t.Stream = ps
	reply, err := cfg.Handler.Handle(context.WithoutCancel(ctx), t)
	if err != nil {
		return false, err
	}
	ps.finish(reply)
	return false, nil
}

func task(cfg Config, text, id string) mnemo.Task {
	return mnemo.Task{ID: id, User: cfg.User, Conversation: "console:" + cfg.User, Platform: "console",
		Speaker: cfg.User, Text: text, Time: cfg.Now()}
}

// isMemory reports whether text is a /memory command (one line: a
// message of several lines that starts with /memory is a message).
func isMemory(text string) bool {
	f := strings.Fields(text)
	return len(f) > 0 && f[0] == "/memory" && !strings.Contains(text, "\n")
}

// memoryCommand answers /memory [show], /memory share FILE, /memory
// private FILE and /memory why TEXT (the grammar and texts of memorycmd.Parse and
// memorycmd.SetVisibility), and anything else after /memory with the commands.
func memoryCommand(cfg Config, text string) string {
	cmd := memorycmd.Parse(strings.TrimPrefix(text, "/memory"))
	switch {
	case cmd.Kind == memorycmd.Show:
		out, err := cfg.Memory(cfg.User)
		if err != nil {
			out = "mnemo: cannot show your memory: " + err.Error()
		}
		return out
	case (cmd.Kind == memorycmd.Share || cmd.Kind == memorycmd.Private) && cfg.Visibility != nil:
		return memorycmd.SetVisibility(cfg.Visibility, cfg.User, cmd.Target, cmd.Kind == memorycmd.Share, nil)
	case cmd.Kind == memorycmd.Why && cfg.Why != nil:
		if strings.TrimSpace(cmd.Target) == "" {
			return memorycmd.WhyWhatText
		}
		out, err := cfg.Why(cfg.User, cmd.Target)
		if err != nil {
			out = "mnemo: cannot look through your memory: " + err.Error()
		}
		return out
	case cmd.Kind == memorycmd.Help:
		return help
	}
	return "I don't know " + memorycmd.CodeSpan(strings.Join(strings.Fields(text), " ")) + " here.\n" + help
}

// isForget reports whether text is the /forget command (with or
// without its confirmation).
func isForget(text string) bool {
	f := strings.Fields(text)
	return len(f) > 0 && f[0] == "/forget"
}

// forget answers /forget: it asks for the confirmation first, and deletes
// only on "/forget yes".
func forget(cfg Config, text string) (answer string, forgotten bool) {
	if f := strings.Fields(text); len(f) != 2 || f[1] != "yes" {
		return "This deletes everything mnemo remembers about you, " + cfg.User + ", and what you typed here earlier; it cannot be undone. To go ahead, type: /forget yes", false
	}
	out, err := cfg.Forget(cfg.User)
	if err != nil {
		return "mnemo: could not forget: " + err.Error(), false
	}
	return out, true
}

// clean keeps the model's text from driving the terminal: no escape
// sequences, no bidi or zero-width tricks.
func cleanReply(s string) string { return strings.TrimSpace(clean.Text(s)) }
