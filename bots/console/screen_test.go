package console

import (
	"io"
	"strings"
	"testing"
)

// A log line waits while the chat's line is unfinished and comes after
// it; the spinner's line is cleared for it; at the start of a line, and
// once released, it is written at once.
func TestScreenKeepsLogsOffTheChatsLine(t *testing.T) {
	var all strings.Builder // the terminal: both streams in the order written
	sc := NewScreen(&all, &all)
	log := sc.Log()
	for _, step := range []struct {
		chat, log string
	}{
		{log: "L1\n"},                        // nothing written yet: at once
		{chat: "mnemo> d1 d2"},               // a line begins
		{log: "L2\n"},                        // held
		{chat: " d3"},                        // still the same line
		{log: "L3\n"},                        // held
		{chat: "\r\n"},                       // the line ends: L2, L3 follow
		{chat: "\r⠋ thinking…" + clearRight}, // the spinner
		{log: "L4\n"},                        // the spinner's line cleared, L4 written
		{chat: "\r⠙ thinking…" + clearRight},
		{chat: "\r" + clearRight}, // the spinner stops: a clean line
		{log: "L5\n"},
		{chat: "you> hi"},
		{log: "L6\n"},
		{chat: ""}, // nothing written: no change
	} {
		if step.chat != "" || step.log == "" {
			io.WriteString(sc, step.chat)
		}
		if step.log != "" {
			io.WriteString(log, step.log)
		}
	}
	want := "L1\nmnemo> d1 d2 d3\r\nL2\nL3\n\r⠋ thinking…" + clearRight + "\r" + clearRight + "L4\n\r⠙ thinking…" + clearRight + "\r" + clearRight + "L5\nyou> hi"
	if all.String() != want {
		t.Fatalf("screen\n got %q\nwant %q", all.String(), want)
	}
	sc.Release()
	io.WriteString(log, "L7\n")
	if want += "L6\nL7\n"; all.String() != want {
		t.Errorf("after Release\n got %q\nwant %q", all.String(), want)
	}
}
