package main

import (
	"testing"
)

// The first model request of a one-line chat (system prompt, the three
// Thinker tools' schemas and descriptions, the empty index and the
// message) fits in 3.75 KB: every byte of it is paid on every message
// (3 KB before memory_search, which costs about 550 bytes with its line
// in the prompt).
func TestFirstRequestFitsInThreeAndThreeQuarterKB(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "hi\n", "--user", "bob").want(t, 0, "Noted.\n", "")
	reqs := w.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	first := reqs[0]
	if got := first.ToolNames(); len(got) != 3 || first.LastUser() != "hi" {
		t.Fatalf("first request is not the Thinker's: tools %v, last %q", got, first.LastUser())
	}
	t.Logf("first model request: %d bytes", len(first.Body))
	if n := len(first.Body); n > 3840 {
		t.Errorf("first model request is %d bytes, over 3.75 KB (%d):\n%s", n, 3840, first.Body)
	}
}
