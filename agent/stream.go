package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/text"
)

// errReplyFull stops a stream whose reply reached MaxReplyChars: what was
// shown, closed with the cut note, is the reply.
var errReplyFull = errors.New("agent: the reply reached maxReplyChars")

// fenceReserve is room kept for closing a code block the cut leaves
// open ("\n" and the fence, which is rarely longer than 6).
const fenceReserve = 8

// shower shows a task's reply on its Task.Stream as the model writes it,
// and is the one record of what was shown: Reply.Text of a streamed reply
// is shown(), so it is exactly the deltas joined.
//
// The text of every model call of the task is shown: words written
// before a tool call are part of the reply, the next call's words follow
// after a blank line. White space at the very start is not shown; an
// answer longer than MaxReplyChars is cut, as cutReply would, while it
// streams.
type shower struct {
	stream mnemo.Stream
	limit  int // MaxReplyChars
	shown  strings.Builder
	runes  int
	step   int  // the model call whose words came last
	full   bool // cut at limit: nothing more is shown
}

func newShower(s mnemo.Stream, limit int) *shower { return &shower{stream: s, limit: limit} }

// text shows delta, the next words of model call step.
func (s *shower) text(step int, delta string) error {
	if s.full {
		return errReplyFull
	}
	if step != s.step && s.runes > 0 {
		delta = strings.TrimLeftFunc(delta, unicode.IsSpace)
		if delta == "" {
			return nil // the break waits for words
		}
		delta = paragraphBreak(s.shown.String()) + delta
	}
	s.step = step
	if s.runes == 0 {
		delta = strings.TrimLeftFunc(delta, unicode.IsSpace)
	}
	if delta == "" {
		return nil
	}
	n := utf8.RuneCountInString(delta)
	note := cutNote(s.limit)
	room := s.limit - utf8.RuneCountInString(note) - fenceReserve
	if s.runes+n <= room {
		s.show(delta, n)
		return nil
	}
	head := string([]rune(delta)[:max(room-s.runes, 0)])
	if k := strings.LastIndexAny(head, " \n"); k > 0 {
		head = head[:k] // at a break, as cutReply cuts
	}
	head = strings.TrimRight(head, " \t")
	tail := note
	if mark := openFence(s.shown.String() + head); mark != "" {
		tail = "\n" + mark + note
	}
	s.show(head+tail, utf8.RuneCountInString(head+tail))
	s.full = true
	return errReplyFull
}

func (s *shower) show(delta string, n int) {
	s.shown.WriteString(delta)
	s.runes += n
	s.stream.Text(delta)
}

// paragraphBreak is what separates the words of two model calls: a blank
// line, less the line breaks shown already ends with.
func paragraphBreak(shown string) string {
	trail := len(shown) - len(strings.TrimRight(shown, "\n"))
	return strings.Repeat("\n", max(2-trail, 0))
}

// status tells the stream what the agent does meanwhile.
func (s *shower) status(st string) { s.stream.Status(st) }

// finish ends a complete reply: an answer with no words gets
// emptyAnswerText. It returns the reply's text.
func (s *shower) finish() string {
	if s.runes == 0 {
		s.show(emptyAnswerText, utf8.RuneCountInString(emptyAnswerText))
	}
	return s.shown.String()
}

// toolStatus is what a person is told while call runs, e.g. "reading
// facts/user.md…".
func toolStatus(call llm.ToolCall) string {
	switch call.Name {
	case "memory_list":
		return "looking through memory…"
	case "memory_read":
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal([]byte(call.Arguments), &a) == nil {
			if p := text.OneLine(a.Path); p != "" && utf8.RuneCountInString(p) <= 80 {
				return "reading " + p + "…"
			}
		}
		return "reading memory…"
	}
	name := text.OneLine(call.Name)
	if name == "" || utf8.RuneCountInString(name) > 64 {
		name = "a tool"
	}
	return "using " + name + "…"
}
