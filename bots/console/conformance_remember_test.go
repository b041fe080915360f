package console

import (
	"context"

	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
)

// Remember is the terminal's variant: /memory remember TEXT keeps the
// person's own words (a terminal shows no one else's, and has no
// channels); /memory undo takes it out; nobody else can press it.
func (b *termBot) Remember(text string, own, inChannel bool) conformance.Kept {
	if !own || inChannel {
		b.t.Fatalf("the terminal keeps only its person's own words (own %v, inChannel %v)", own, inChannel)
	}
	say := func(line string) string {
		s, err := b.conv.Say(context.Background(), Line{ID: "remember", Text: line})
		if err != nil {
			b.t.Fatal(err)
		}
		return s.Text
	}
	return conformance.Kept{Text: say("/memory remember " + text), Undo: func() string { return say("/memory undo") }}
}

var _ conformance.Keeping = (*termBot)(nil)
