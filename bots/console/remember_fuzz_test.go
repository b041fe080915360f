package console

import (
	"context"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/remember/remembertest"
)

// FuzzRememberCommand: any line is either not a Remember this command or
// answered with words; what is kept is the line's own text, never empty.
func FuzzRememberCommand(f *testing.F) {
	for _, s := range []string{"/remember", "/remember x", "/memory remember  a b ", "/memory undo", "/memory undo x", "/memory", "hello", "/remember\nx", " /remember  y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		k := &remembertest.Keeper{}
		r := &remembering{keeper: k}
		said, ok := r.command(context.Background(), "ann", line)
		if ok && said.Text == "" {
			t.Errorf("%q answered nothing", line)
		}
		for _, m := range k.Kept() {
			if strings.TrimSpace(m.Text) == "" || !strings.Contains(line, m.Text) {
				t.Errorf("%q kept %q", line, m.Text)
			}
		}
	})
}
