package memorycmd

import (
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		text string
		want Command
	}{
		{"", Command{Kind: Show}},
		{"  ", Command{Kind: Show}},
		{"show", Command{Kind: Show}},
		{"list", Command{Kind: Show}},
		{" ls ", Command{Kind: Show}},
		{"`show`", Command{Kind: Show}},
		{"``", Command{Kind: Show}},
		{"show me", Command{Kind: Unknown, Args: "show me"}},
		{"forget", Command{Kind: Forget}},
		{"forget ''", Command{Kind: Forget}},
		{"forget facts/food.md", Command{Kind: Forget, Target: "facts/food.md"}},
		{"forget `facts/food.md`", Command{Kind: Forget, Target: "facts/food.md"}},
		{"forget “facts/food.md”", Command{Kind: Forget, Target: "facts/food.md"}},
		{"forget 'facts/a b.md'", Command{Kind: Forget, Target: "facts/a b.md"}},
		{"forget  a\t\nb", Command{Kind: Forget, Target: "a b"}},
		{"forget all", Command{Kind: Forget, Target: "all"}},
		{"forget `ALL`", Command{Kind: Forget, Target: "all"}},
		{"share facts/food.md", Command{Kind: Share, Target: "facts/food.md"}},
		{" share  `facts/food.md` ", Command{Kind: Share, Target: "facts/food.md"}},
		{"share", Command{Kind: Share}},
		{"share all", Command{Kind: Share, Target: "all"}},
		{"private ‘episodes/2026-02.md’", Command{Kind: Private, Target: "episodes/2026-02.md"}},
		{"private facts/a b.md", Command{Kind: Private, Target: "facts/a b.md"}},
		{"private", Command{Kind: Private}},
		{"Share facts/food.md", Command{Kind: Unknown, Args: "Share facts/food.md"}},
		{"help", Command{Kind: Help}},
		{"-h", Command{Kind: Help}},
		{"--help please", Command{Kind: Help}},
		{"Forget all", Command{Kind: Unknown, Args: "Forget all"}},
		{"bogus <@U1>", Command{Kind: Unknown, Args: "bogus <@U1>"}},
	} {
		if got := Parse(c.text); got != c.want {
			t.Errorf("Parse(%q) = %+v; want %+v", c.text, got, c.want)
		}
	}
}

// FuzzParseCommand: whatever follows /memory, the command is one of the
// kinds, its target or words are what was typed (trimmed of quotes and
// spacing, never invented), and parsing what it names again gives the
// same command.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"", "show", "ls", "forget all", "forget `facts/a.md`", "share facts/food.md", "private “episodes/2026-02.md”",
		"share", "private  a \t b", "share ALL", "help me", "bogus", "``", "share `", "private \u00a0facts/x.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c := Parse(text)
		words := strings.Fields(text)
		switch c.Kind {
		case Show, Help:
			if c.Target != "" || c.Args != "" {
				t.Fatalf("%q: %+v", text, c)
			}
		case Forget, Share, Private:
			if c.Args != "" {
				t.Fatalf("%q: %+v", text, c)
			}
			want := map[Kind]string{Forget: "forget", Share: "share", Private: "private"}[c.Kind]
			if len(words) == 0 || strings.Trim(words[0], quoteChars) != want {
				t.Fatalf("%q parsed as %s: %+v", text, want, c)
			}
			if c.Target != "" && c.Target != "all" && !strings.Contains(strings.Join(words, " "), strings.Fields(c.Target)[0]) {
				t.Fatalf("%q: target %q was not typed", text, c.Target)
			}
			if c.Target != strings.TrimSpace(c.Target) || strings.Contains(c.Target, "  ") {
				t.Fatalf("%q: target %q has stray spaces", text, c.Target)
			}
			if again := Parse(want + " " + c.Target); again != c {
				t.Fatalf("%q: %+v, again %+v", text, c, again)
			}
		case Unknown:
			if c.Target != "" || c.Args == "" {
				t.Fatalf("%q: %+v", text, c)
			}
		default:
			t.Fatalf("%q: kind %d", text, c.Kind)
		}
	})
}
