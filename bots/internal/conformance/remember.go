package conformance

import (
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/remember/remembertest"
)

// Keeping is a Bot whose platform lets a person ask to keep a message
// (Remember this; Feature Keep).
type Keeping interface {
	// Remember has the test's user ask to keep a message with text: their
	// own (own), or another person's, written in a channel (inChannel)
	// or in their DM. It returns what they are told.
	Remember(text string, own, inChannel bool) Kept
}

// Kept is the confirmation a person got for Remember this.
type Kept struct {
	Text string // the confirmation's text
	// Undo presses its Undo as the test's user, UndoOther as someone
	// else (nil where nobody else can: a terminal); each returns the
	// answer's text.
	Undo, UndoOther func() string
}

// rememberThis: a message a person asks to keep goes to their own memory
// (never a channel's), theirs or another person's (in their name, with
// its link), is confirmed to them alone naming the file, and can be
// undone by them only, once; nothing of it reaches the model as a
// message or is posted for others.
func rememberThis(t *testing.T, d Driver) {
	var lacks Feature
	if l, ok := d.(Lacker); ok {
		lacks = l.Lacks()
	}
	k := &remembertest.Keeper{}
	b := d.Start(t, Setup{Keeper: k})
	kb, ok := b.(Keeping)
	expect(t, ok, "%T keeps messages (it does not lack Keep) but is not a Keeping", b)
	own := kb.Remember("see you at 5", true, false)
	expect(t, strings.Contains(own.Text, "Kept in your private memory: `episodes/2026-11.md`"), "the confirmation is %q; want it to name the file", own.Text)
	kept := k.Kept()
	expect(t, len(kept) == 1 && kept[0].User == b.MemoryUser() && kept[0].Own && kept[0].Text == "see you at 5",
		"kept %+v; want the user's own message, in their memory", kept)
	last := own
	if lacks&Channels == 0 {
		last = kb.Remember("the release moves to Friday", false, true)
		kept = k.Kept()
		expect(t, len(kept) == 2 && kept[1].User == b.MemoryUser() && !kept[1].Own && kept[1].Author != "" &&
			kept[1].Origin.Link != "" && strings.HasPrefix(kept[1].Origin.Place, "#"),
			"kept %+v; want another person's channel message in the user's own memory, with its author, place and link", kept)
	}
	if last.UndoOther != nil {
		got := last.UndoOther()
		expect(t, strings.Contains(got, "Only the person who kept this message can undo it"), "someone else's Undo answered %q", got)
	}
	got := last.Undo()
	expect(t, strings.Contains(got, "Undone: episodes/2026-11.md") && len(k.Undone()) == 1, "Undo answered %q; undone %v", got, k.Undone())
	posted := texts(b.Settle())
	expect(t, len(posted) == 1 && posted[0] == "echo: settle", "posted %q; want only the settle answer (a confirmation is the person's alone)", posted)
	tasks := b.Handler().Tasks()
	expect(t, len(tasks) == 1 && tasks[0].Text == "settle", "tasks %+v; want only the settle message (nothing kept reaches the model as a message)", tasks)
}

// expect fails t, stopping the row, unless ok.
func expect(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
