package agent

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// TestHandleSendsDefaultHistory: with the default HistoryTurns every
// earlier turn, up to ten, goes to the model in order; the eleventh-oldest
// is dropped.
func TestHandleSendsDefaultHistory(t *testing.T) {
	a, srv := agentFixture(t, &fakeMemory{}, nil)
	const asked = DefaultHistoryTurns + 2
	for i := range asked {
		srv.Enqueue(openaitest.Text(fmt.Sprint("answer ", i)))
	}
	for i := range asked {
		if r := mustHandle(t, a, dmTask(fmt.Sprint("question ", i))); r.Failed || r.Text != fmt.Sprint("answer ", i) {
			t.Fatalf("task %d: reply %+v", i, r)
		}
		// The request of task i carries turns max(0, i-10) .. i-1.
		var want []roleText
		for j := max(0, i-DefaultHistoryTurns); j < i; j++ {
			want = append(want, roleText{"user", fmt.Sprint("question ", j)}, roleText{"assistant", fmt.Sprint("answer ", j)})
		}
		want = append(want, roleText{"user", noneYet}, roleText{"user", fmt.Sprint("question ", i)})
		if got := roles(srv.Requests()[i].Chat.Messages); !slices.Equal(got[1:], want) {
			t.Fatalf("task %d sent %q\nwant %q", i, got[1:], want)
		}
	}
}

// TestOnTurnPanicIsLogged: a panicking OnTurn (the journal, in mnemo) is
// reported at ERROR with its value, so the lost turn is visible; a
// working OnTurn logs no error.
func TestOnTurnPanicIsLogged(t *testing.T) {
	for _, panics := range []bool{false, true} {
		var logs bytes.Buffer
		a, srv := agentFixture(t, &fakeMemory{}, func(c *Config) {
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			c.OnTurn = func(mnemo.Turn) {
				if panics {
					panic("journal exploded")
				}
			}
		})
		srv.Enqueue(openaitest.Text("hello"))
		if r := mustHandle(t, a, dmTask("hi")); r.Failed || r.Text != "hello" {
			t.Errorf("panics %v: reply %+v", panics, r)
		}
		out := logs.String()
		logged := strings.Contains(out, "level=ERROR") && strings.Contains(out, "OnTurn panicked") &&
			strings.Contains(out, "journal exploded")
		if logged != panics || strings.Contains(out, "level=ERROR") != panics {
			t.Errorf("OnTurn panics %v; log:\n%s", panics, out)
		}
	}
}

// TestCutReplyBreaks pins where a long reply is cut. With limit 100 the
// note takes 65 characters, leaving room for 35: the cut is at the last
// line break in runes 17..35 (a break at 35 itself, just past the room,
// keeps all 35), else the last space there, else at 35.
func TestCutReplyBreaks(t *testing.T) {
	const limit = 100
	note := cutNote(limit)
	if room := limit - utf8.RuneCountInString(note); room != 35 {
		t.Fatalf("room %d: the cases below assume 35", room)
	}
	a, b := func(n int) string { return strings.Repeat("a", n) }, func(n int) string { return strings.Repeat("b", n) }
	tests := []struct{ name, text, head string }{
		{"one character over", a(limit + 1), a(35)},
		{"just over, with the note's length to spare", a(limit + 60), a(35)},
		{"line break inside", a(30) + "\n" + b(200), a(30)},
		{"line break preferred to a later space", a(20) + "\n" + a(10) + " " + b(200), a(20)},
		{"line break just past the room", a(20) + " " + b(14) + "\n" + b(200), a(20) + " " + b(14)},
		{"space just past the room", a(20) + "-" + b(14) + " " + b(200), a(20) + "-" + b(14)},
		{"line break at the start of the second half", a(17) + "\n" + b(200), a(17)},
		{"space at the start of the second half", a(17) + " " + b(200), a(17)},
		{"line break in the first half is not used", a(16) + "\n" + b(200), a(16) + "\n" + b(18)},
		{"break past the room is not used", a(36) + "\n" + b(200), a(35)},
	}
	for _, tt := range tests {
		got, cut := cutReply(tt.text, limit)
		if !cut || got != tt.head+note {
			t.Errorf("%s: got %q (cut %v), want %q + note", tt.name, got, cut, tt.head)
		}
	}
}

// TestHistoryCapsInvalidUTF8: a text over the history limit with no rune
// start to cut at (invalid UTF-8 a platform passed on) is replaced by the
// cut mark instead of crashing the task.
func TestHistoryCapsInvalidUTF8(t *testing.T) {
	h := newHistory(1, 1)
	h.add("c", turn{Text: strings.Repeat("\x80", historyTextLimit+1), Reply: "ok"})
	if got := h.get("c"); len(got) != 1 || got[0].Text != historyCut || got[0].Reply != "ok" {
		t.Errorf("turns = %q", got)
	}
}

// TestRunLoopTextCutAtTokenLimitIsTheAnswer: a text reply (no tool calls)
// that hit the token limit is the answer as it is: the loop does not ask
// again, only cut-off tool calls make it retry.
func TestRunLoopTextCutAtTokenLimitIsTheAnswer(t *testing.T) {
	spy := &toolSpy{}
	cfg, srv := loopFixture(t, spy.tool("memory_read"))
	srv.Enqueue(openaitest.Text("A long answer that was cu").WithFinishReason(openaitest.FinishLength),
		openaitest.Text("unused"))
	res, err := RunLoop(context.Background(), cfg, loopInput("q"))
	if err != nil || res.Text != "A long answer that was cu" || res.Steps != 1 || res.Stopped != "" {
		t.Errorf("err %v, result %+v", err, res)
	}
	if srv.Pending() != 1 {
		t.Errorf("the model was asked %d times", len(srv.Requests()))
	}
}
