package console

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// indent starts every line of a reply after the first, under its text
// ("mnemo> " is as wide).
const indent = "       "

// cleaner is clean.Text for a text that comes in pieces: the same
// result as cleaning the whole, and white space at the end held back
// until more text follows (a reply is printed trimmed, as clean does).
type cleaner struct {
	cr   bool   // the last piece ended with "\r": a "\n" next is its pair
	held string // white space at the end, not yet given out
	any  bool   // text was given out
}

// next cleans piece and returns what can be shown of it now.
func (c *cleaner) next(piece string) string {
	if c.cr {
		piece = strings.TrimPrefix(piece, "\n")
	}
	if piece == "" {
		return ""
	}
	c.cr = strings.HasSuffix(piece, "\r")
	s := c.held + clean.Text(piece)
	if !c.any {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	c.held = s[len(body):]
	if body != "" {
		c.any = true
	}
	return body
}

// pipedStream writes a reply to a pipe as it comes: the reply text
// alone, exactly what the reply's cleanReply() would print at once.
type pipedStream struct {
	out     io.Writer
	start   time.Time
	visible func(time.Duration) // Config.FirstVisible
	clean   cleaner
}

func (p *pipedStream) Text(delta string) {
	first := !p.clean.any
	if text := p.clean.next(delta); text != "" {
		io.WriteString(p.out, text)
		if first && p.visible != nil {
			p.visible(time.Since(p.start))
		}
	}
}

func (p *pipedStream) Status(string) {}

// finish ends reply's output: the cut note after a cut stream, then the
// line break; a reply that was not streamed is printed whole.
func (p *pipedStream) finish(reply Said) {
	switch {
	case !reply.Streamed || !p.clean.any:
		fmt.Fprintln(p.out, cleanReply(reply.Text))
	case reply.Cut:
		fmt.Fprintln(p.out, "\n\n"+strings.TrimSpace(mnemo.CutNote))
	default:
		fmt.Fprintln(p.out)
	}
}

// termStream shows a reply at a terminal as it comes: the spinner until
// the first words (its label says what a tool does meanwhile), then the
// words as they arrive. With colour, each line is rendered as Markdown
// (style) once it is complete; the line being written shows plain until
// then. Its methods are called from the task's goroutine; finish from
// the chat's, once the task is done.
type termStream struct {
	out     io.Writer
	color   bool
	width   func() int // the terminal's columns; <= 0 unknown
	start   time.Time
	visible func(time.Duration) // Config.FirstVisible
	spin    *spinner

	clean  cleaner
	shown  bool   // the first words are out
	line   string // the line being written, shown plain
	lines  int    // lines completed
	fenced bool   // inside a fenced code block (for style)
}

func (s *termStream) Status(status string) {
	if !s.shown {
		s.spin.label(status)
	}
}

func (s *termStream) Text(delta string) {
	text := s.clean.next(delta)
	if text == "" {
		return
	}
	if !s.shown {
		s.shown = true
		s.spin.stop()
		if s.visible != nil {
			s.visible(time.Since(s.start))
		}
		prefix := "mnemo> "
		if s.color {
			prefix = ansiMnemo + "mnemo>" + ansiReset + " "
		}
		io.WriteString(s.out, prefix)
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			b.WriteString(text)
			s.line += text
			break
		}
		b.WriteString(text[:i])
		s.line += text[:i]
		s.endLine(&b)
		b.WriteString("\n" + indent)
		text = text[i+1:]
	}
	io.WriteString(s.out, b.String())
}

// endLine renders the complete line s.line in place of its plain text.
func (s *termStream) endLine(b *strings.Builder) {
	line := s.line
	s.line = ""
	defer func() { s.lines++ }()
	if !s.color {
		return
	}
	io.WriteString(s.out, b.String())
	b.Reset()
	// Back to the start of the plain line (it may have wrapped), clear it
	// and what follows, and write it styled.
	if up := rowsUp(len(indent)+displayWidth(line), s.width()); up > 0 {
		fmt.Fprintf(b, "\r\x1b[%dA", up)
	}
	b.WriteString("\r" + ansiReset + "\x1b[J")
	if s.lines == 0 {
		b.WriteString(ansiMnemo + "mnemo>" + ansiReset + " ")
	} else {
		b.WriteString(indent)
	}
	b.WriteString(styleLine(line, &s.fenced))
}

// finish ends what the terminal shows of reply: the line being written
// rendered, the cut note after a cut stream; a reply that was never
// streamed (a failure before any word) is printed whole, as before.
func (s *termStream) finish(reply Said) {
	s.spin.stop()
	if !s.shown {
		out := "mnemo> " + cleanReply(reply.Text)
		if s.color {
			out = ansiMnemo + "mnemo>" + ansiReset + " " + style(cleanReply(reply.Text))
		}
		fmt.Fprintln(s.out, strings.ReplaceAll(out, "\n", "\n"+indent))
		return
	}
	var b strings.Builder
	s.endLine(&b)
	if reply.Cut {
		note := strings.TrimSpace(mnemo.CutNote)
		if s.color { // Markdown, rendered as the reply's lines are
			note = style(note)
		}
		b.WriteString("\n\n" + indent + note)
	}
	b.WriteString("\n")
	io.WriteString(s.out, b.String())
}

// rowsUp is how many rows above the cursor a text of width columns,
// written from the left edge, began: a text that fills its last row
// exactly leaves the cursor there (the wrap waits for the next
// character). Unknown columns: no wrap assumed.
func rowsUp(width, columns int) int {
	if columns <= 0 || width <= 0 {
		return 0
	}
	return (width - 1) / columns
}

// displayWidth is how many columns s takes at a terminal: wide East
// Asian characters and most emoji two, combining marks none, a tab to
// the next multiple of 8.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case r == '\t':
			w += 8 - w%8
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		case wide(r):
			w += 2
		default:
			w++
		}
	}
	return w
}

func wide(r rune) bool {
	return r >= 0x1100 && r <= 0x115F || r >= 0x2E80 && r <= 0xA4CF || r >= 0xAC00 && r <= 0xD7A3 ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0xFE30 && r <= 0xFE4F || r >= 0xFF00 && r <= 0xFF60 ||
		r >= 0xFFE0 && r <= 0xFFE6 || r >= 0x1F300 && r <= 0x1F64F || r >= 0x1F900 && r <= 0x1F9FF ||
		r >= 0x20000 && r <= 0x3FFFD
}
