package reflector

// "Remember this": a person points at a message and asks mnemo to keep it
// (mnemo.Turn.Explicit). The turn is reflected at once, in a run of its
// own, with the system prompt's explicit variant; when the model writes
// nothing (it judged the message casual) or cannot be reached, the
// reflector appends the message itself to the month's episode file, so an
// explicit request always leaves a line the person can see and undo.

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
)

//go:embed prompts/remember.md
var rememberPrompt string

// keptTextLimit bounds the message text the fallback entry keeps (bytes):
// an episode entry is a note, not an archive; the link leads to the rest.
const keptTextLimit = 1500

// sameRun reports whether turns a and b may be reflected in one run: the
// same scope, and neither an explicit request (each has a run of its
// own, so its outcome is its alone).
func sameRun(a, b Turn) bool {
	return !a.Explicit && !b.Explicit && a.Scope() == b.Scope()
}

// private makes an explicit turn a private conversation's: what a person
// asks to keep goes to their private memory, wherever they chose it.
func private(t Turn) Turn {
	if t.Explicit {
		t.Channel, t.ChannelKey = false, ""
	}
	return t
}

// keptMessage is the message an explicit turn asks to keep.
func keptMessage(t Turn) ContextMessage {
	if len(t.Context) > 0 {
		return t.Context[len(t.Context)-1]
	}
	return ContextMessage{Text: t.UserText, FromSpeaker: true}
}

// writeExplicit renders an explicit turn for the model: the one message,
// who wrote it, where and when.
func writeExplicit(b *strings.Builder, t Turn, speaker string, loc *time.Location) {
	m := keptMessage(t)
	fmt.Fprintf(b, "\n## The message to keep · written %s", t.Time.In(loc).Format("2006-01-02 15:04 MST"))
	if t.Platform != "" {
		b.WriteString(" · " + oneLine(t.Platform, 32))
	}
	if t.Origin.Place != "" {
		b.WriteString(" · " + oneLine(t.Origin.Place, 64))
	}
	b.WriteString("\n\n")
	if m.FromSpeaker {
		fmt.Fprintf(b, "USER (%q) wrote this message and asked you to remember it:\n", speaker)
	} else {
		fmt.Fprintf(b, "OTHER PERSON %q (not the user) wrote this message; USER (%q) asked you to remember it:\n", authorOf(m), speaker)
	}
	quote(b, m.Text)
}

func authorOf(m ContextMessage) string {
	if a := oneLine(m.Author, 64); a != "" {
		return a
	}
	return "someone"
}

// keepItself appends the message of explicit turn t to the episode file
// of its month through the run's memory_append (journaled as any call),
// when the model wrote nothing. It returns the tool's error.
func keepItself(ctx context.Context, tools []mnemo.Tool, t Turn) error {
	var appendTool *mnemo.Tool
	for i := range tools {
		if tools[i].Name == "memory_append" {
			appendTool = &tools[i]
		}
	}
	if appendTool == nil {
		return errors.New("keep the message: no memory_append tool")
	}
	args, _ := json.Marshal(map[string]string{"path": "episodes/" + t.Time.Format("2006-01") + ".md", "entry": keptEntry(t)}) // strings always encode
	_, err := appendTool.Call(ctx, args)
	return err
}

// keptEntry is the episode entry the reflector writes for a message kept
// as it is: "Ana said …" for someone else's, the words alone for the
// person's own. Its source (place, date, link) is stamped by the memory.
func keptEntry(t Turn) string {
	m := keptMessage(t)
	words := text.OneLine(m.Text)
	if len(words) > keptTextLimit {
		words = text.Cut(words, keptTextLimit) + "…"
	}
	said := words
	if !m.FromSpeaker {
		said = authorOf(m) + " said: " + words
	}
	title := oneLine(words, 60)
	if title == "" {
		title = "(an empty message)"
	}
	return fmt.Sprintf("## Kept: %s\n- Summary: %s\n- Date: %s\n- %s\n",
		title, oneLine(summaryOf(m), 70), t.Time.Format(time.DateOnly), said)
}

// summaryOf is a kept message's summary line: who, and its first words.
func summaryOf(m ContextMessage) string {
	first := strings.Fields(text.OneLine(m.Text))
	if len(first) > 6 {
		first = first[:6]
	}
	s := strings.Join(first, " ")
	if m.FromSpeaker {
		return "kept on request: " + s
	}
	return authorOf(m) + " said: " + s
}

// told tells Config.OnExplicit how the run of an explicit turn ended.
func (r *Reflector) told(batch []entry, run *runLog, outcome string, err error) {
	if r.cfg.OnExplicit == nil || len(batch) != 1 || !batch[0].turn.Explicit {
		return
	}
	switch outcome {
	case "ok":
		r.cfg.OnExplicit(batch[0].turn, run.commits, nil)
	case "forgotten":
		r.cfg.OnExplicit(batch[0].turn, nil, errForgotten)
	default: // failed or canceled: the turn stays journaled
		r.cfg.OnExplicit(batch[0].turn, nil, fmt.Errorf("reflection %s: %w", outcome, err))
	}
}
