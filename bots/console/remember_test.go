package console

import (
	"context"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/remember/remembertest"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// The terminal's Remember this: /memory remember TEXT and /remember TEXT
// keep TEXT, /remember alone the message before it; /memory undo takes
// out the last keeping, once; none of them reaches the model.
func TestRememberCommand(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     string   // the output
		kept     []string // the texts kept
		undone   int
		tasks    int
	}{
		{"/memory remember TEXT", "/memory remember  the wifi is on the fridge\n",
			"Kept in your private memory: `episodes/2026-11.md`. `/memory undo` takes it out again.\n", []string{"the wifi is on the fridge"}, 0, 0},
		{"/remember TEXT, then undo twice", "/remember lunch at noon\n/memory undo\n/memory undo\n",
			"Kept in your private memory: `episodes/2026-11.md`. `/memory undo` takes it out again.\n" +
				"Undone: episodes/2026-11.md is as it was before.\n" +
				"There is nothing to undo: `/memory undo` takes out what `/memory remember` kept last.\n", []string{"lunch at noon"}, 1, 0},
		{"/remember alone keeps the message before", "my desk is on the 4th floor\n/remember\n",
			"echo: my desk is on the 4th floor\nline two\nKept in your private memory: `episodes/2026-11.md`. `/memory undo` takes it out again.\n",
			[]string{"my desk is on the 4th floor"}, 0, 1},
		{"/remember with nothing before", "/remember\n",
			"There is nothing to remember yet: `/memory remember TEXT` keeps TEXT, and `/remember` after a message keeps that message.\n", nil, 0, 0},
		{"/rememberful is a message", "/rememberful\n", "echo: /rememberful\nline two\n", nil, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHandler{}
			k := &remembertest.Keeper{}
			var out strings.Builder
			err := Run(context.Background(), Config{In: strings.NewReader(c.in), Out: &out, User: "ann",
				Chat: chatOf(t, "ann", h, withMemory(checked()), func(d *platform.Deps) { d.Keeper = k })})
			var kept []string
			for _, m := range k.Kept() {
				kept = append(kept, m.Text)
				if m.User != "ann" || !m.Own || m.Platform != Name || m.Origin.Place != "" {
					t.Errorf("kept %+v", m)
				}
			}
			if err != nil || out.String() != c.want || strings.Join(kept, "|") != strings.Join(c.kept, "|") ||
				len(k.Undone()) != c.undone || len(h.tasks) != c.tasks {
				t.Errorf("err %v, kept %q, undone %d, tasks %d, output\n%s\nwant\n%s", err, kept, len(k.Undone()), len(h.tasks), out.String(), c.want)
			}
		})
	}
}

func TestRememberWithoutKeeper(t *testing.T) {
	var out strings.Builder
	err := Run(context.Background(), Config{In: strings.NewReader("/memory remember x\n/memory undo\n"), Out: &out, User: "ann",
		Chat: chatOf(t, "ann", &fakeHandler{}, withMemory(checked()))})
	want := "Sorry, Remember this is not available here.\nThere is nothing to undo: `/memory undo` takes out what `/memory remember` kept last.\n"
	if err != nil || out.String() != want {
		t.Errorf("err %v, output\n%s", err, out.String())
	}
}

// BenchmarkRememberNotACommand is what every typed message pays for the
// terminal's Remember this: the check that it is no command, and the note
// of it for /remember alone.
func BenchmarkRememberNotACommand(b *testing.B) {
	r := &remembering{keeper: &remembertest.Keeper{}}
	const line = "what did we decide about the parser rewrite last week?"
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := r.command(context.Background(), "ann", line); ok {
			b.Fatal("a message taken for a command")
		}
		r.said("ann", line)
	}
}

// A message that is no Remember this command costs the terminal no
// allocation for it: said and command run for every line typed.
func TestRememberNotACommandAllocatesNothing(t *testing.T) {
	r := &remembering{keeper: &remembertest.Keeper{}}
	r.said("ann", "first") // the map is made once
	for _, line := range []string{"what did we decide about the parser?", "  a line with spaces around  ", ""} {
		if n := testing.AllocsPerRun(100, func() {
			if _, ok := r.command(context.Background(), "ann", line); ok {
				t.Fatalf("%q taken for a command", line)
			}
			r.said("ann", line)
		}); n != 0 {
			t.Errorf("%q: %v allocations a message; want 0", line, n)
		}
	}
	if last, ok := r.lastSaid("ann"); !ok || last != "" {
		t.Errorf("last said %q, %v; want the last line", last, ok)
	}
}
