package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/bots/internal/core"
)

// Handler answers one task; *agent.Agent satisfies it.
type Handler interface {
	Handle(ctx context.Context, t agent.Task) (agent.Reply, error)
}

var _ Handler = (*agent.Agent)(nil)

// Config configures a console session.
type Config struct {
	In          io.Reader
	Out         io.Writer
	Interactive bool // a person at a terminal: show a prompt and a greeting
	Color       bool // render **bold**, `code` and headings with ANSI styles
	User        string
	Handler     Handler
	// Memory, when set, answers the /memory command with what is
	// remembered about the user.
	Memory func(user string) (string, error)
	Now    func() time.Time
}

// maxLine bounds one input line (a pasted log is fine; a runaway pipe is not).
const maxLine = 1 << 20

const help = "Type a message and press Enter. /memory shows what mnemo remembers about you; /quit or Ctrl-D ends the chat."

// Run reads lines until EOF, /quit or ctx ends, answering each. It returns
// nil at EOF and ctx.Err() when cancelled.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lines := make(chan string)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		sc := bufio.NewScanner(cfg.In)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
		readErr <- sc.Err()
	}()
	if cfg.Interactive {
		fmt.Fprintf(cfg.Out, "mnemo: chatting as %s. %s\n", cfg.User, help)
	}
	for {
		if cfg.Interactive {
			fmt.Fprint(cfg.Out, "\nyou> ")
		}
		var line string
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if cfg.Interactive {
				fmt.Fprintln(cfg.Out)
			}
			if errors.Is(err, bufio.ErrTooLong) {
				return fmt.Errorf("console: a line is longer than %d bytes", maxLine)
			}
			return err
		case line = <-lines:
		}
		text := strings.TrimSpace(line)
		switch {
		case text == "":
			continue
		case text == "/quit" || text == "/exit":
			return nil
		case text == "/help":
			fmt.Fprintln(cfg.Out, help)
			continue
		case text == "/memory" && cfg.Memory != nil:
			out, err := cfg.Memory(cfg.User)
			if err != nil {
				out = "mnemo: cannot show your memory: " + err.Error()
			}
			fmt.Fprintln(cfg.Out, out)
			continue
		}
		reply, err := cfg.Handler.Handle(ctx, agent.Task{
			User: cfg.User, Conversation: "console:" + cfg.User, Platform: "console",
			Speaker: cfg.User, Text: text, Time: cfg.Now(),
		})
		if err != nil {
			return err // only when ctx ended before the task ran
		}
		// The model's text never drives the terminal: no escape sequences,
		// no bidi or zero-width tricks.
		text = strings.TrimSpace(core.CleanText(reply.Text))
		if cfg.Interactive {
			if cfg.Color {
				text = style(text)
			}
			fmt.Fprintf(cfg.Out, "\nmnemo> %s\n", strings.ReplaceAll(text, "\n", "\n       "))
		} else {
			fmt.Fprintln(cfg.Out, text)
		}
	}
}

const (
	ansiBold  = "\x1b[1m"
	ansiCode  = "\x1b[36m"
	ansiReset = "\x1b[0m"
)

var (
	boldRE = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)
	codeRE = regexp.MustCompile("`([^`\n]+)`")
)

// style renders the Markdown a model commonly writes for a terminal:
// headings and **bold** in bold, `code` in cyan; fenced blocks untouched.
func style(text string) string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if h := strings.TrimLeft(l, "#"); len(h) < len(l) && strings.HasPrefix(h, " ") {
			lines[i] = ansiBold + strings.TrimSpace(h) + ansiReset
			continue
		}
		l = boldRE.ReplaceAllString(l, ansiBold+"$1"+ansiReset)
		lines[i] = codeRE.ReplaceAllString(l, ansiCode+"$1"+ansiReset)
	}
	return strings.Join(lines, "\n")
}
