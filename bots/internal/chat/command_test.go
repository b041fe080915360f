package chat

import (
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		text string
		want Command
	}{
		{"", Command{Kind: CmdShow}},
		{"  ", Command{Kind: CmdShow}},
		{"show", Command{Kind: CmdShow}},
		{"list", Command{Kind: CmdShow}},
		{" ls ", Command{Kind: CmdShow}},
		{"`show`", Command{Kind: CmdShow}},
		{"``", Command{Kind: CmdShow}},
		{"show me", Command{Kind: CmdUnknown, Args: "show me"}},
		{"forget", Command{Kind: CmdForget}},
		{"forget ''", Command{Kind: CmdForget}},
		{"forget facts/food.md", Command{Kind: CmdForget, Target: "facts/food.md"}},
		{"forget `facts/food.md`", Command{Kind: CmdForget, Target: "facts/food.md"}},
		{"forget “facts/food.md”", Command{Kind: CmdForget, Target: "facts/food.md"}},
		{"forget 'facts/a b.md'", Command{Kind: CmdForget, Target: "facts/a b.md"}},
		{"forget  a\t\nb", Command{Kind: CmdForget, Target: "a b"}},
		{"forget all", Command{Kind: CmdForget, Target: "all"}},
		{"forget `ALL`", Command{Kind: CmdForget, Target: "all"}},
		{"share facts/food.md", Command{Kind: CmdShare, Target: "facts/food.md"}},
		{" share  `facts/food.md` ", Command{Kind: CmdShare, Target: "facts/food.md"}},
		{"share", Command{Kind: CmdShare}},
		{"share all", Command{Kind: CmdShare, Target: "all"}},
		{"private ‘episodes/2026-02.md’", Command{Kind: CmdPrivate, Target: "episodes/2026-02.md"}},
		{"private facts/a b.md", Command{Kind: CmdPrivate, Target: "facts/a b.md"}},
		{"private", Command{Kind: CmdPrivate}},
		{"Share facts/food.md", Command{Kind: CmdUnknown, Args: "Share facts/food.md"}},
		{"help", Command{Kind: CmdHelp}},
		{"-h", Command{Kind: CmdHelp}},
		{"--help please", Command{Kind: CmdHelp}},
		{"Forget all", Command{Kind: CmdUnknown, Args: "Forget all"}},
		{"bogus <@U1>", Command{Kind: CmdUnknown, Args: "bogus <@U1>"}},
	} {
		if got := ParseCommand(c.text); got != c.want {
			t.Errorf("ParseCommand(%q) = %+v; want %+v", c.text, got, c.want)
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
		c := ParseCommand(text)
		words := strings.Fields(text)
		switch c.Kind {
		case CmdShow, CmdHelp:
			if c.Target != "" || c.Args != "" {
				t.Fatalf("%q: %+v", text, c)
			}
		case CmdForget, CmdShare, CmdPrivate:
			if c.Args != "" {
				t.Fatalf("%q: %+v", text, c)
			}
			want := map[CommandKind]string{CmdForget: "forget", CmdShare: "share", CmdPrivate: "private"}[c.Kind]
			if len(words) == 0 || strings.Trim(words[0], quoteChars) != want {
				t.Fatalf("%q parsed as %s: %+v", text, want, c)
			}
			if c.Target != "" && c.Target != "all" && !strings.Contains(strings.Join(words, " "), strings.Fields(c.Target)[0]) {
				t.Fatalf("%q: target %q was not typed", text, c.Target)
			}
			if c.Target != strings.TrimSpace(c.Target) || strings.Contains(c.Target, "  ") {
				t.Fatalf("%q: target %q has stray spaces", text, c.Target)
			}
			if again := ParseCommand(want + " " + c.Target); again != c {
				t.Fatalf("%q: %+v, again %+v", text, c, again)
			}
		case CmdUnknown:
			if c.Target != "" || c.Args == "" {
				t.Fatalf("%q: %+v", text, c)
			}
		default:
			t.Fatalf("%q: kind %d", text, c.Kind)
		}
	})
}
