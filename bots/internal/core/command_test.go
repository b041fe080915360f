package core

import "testing"

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
