package discord

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// FuzzReplyParts: whatever the model writes, Discord gets 1 to 5 messages
// of at most 2,000 characters, valid UTF-8, without control or invisible
// characters, and none of them empty.
func FuzzReplyParts(f *testing.F) {
	for _, s := range []string{"", "hi", "```go\nx\n```", strings.Repeat("a ", 3000), "\x1b[2J\u202eabc", strings.Repeat("```\n", 700), "@everyone <@&1>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts := replyParts(s)
		if len(parts) == 0 || len(parts) > maxParts {
			t.Fatalf("%d parts", len(parts))
		}
		for _, p := range parts {
			if n := utf8.RuneCountInString(p); n > maxMessageRunes || strings.TrimSpace(p) == "" {
				t.Fatalf("part of %d characters: %q", n, p)
			}
			if !utf8.ValidString(p) {
				t.Fatalf("invalid UTF-8: %q", p)
			}
			for _, r := range p {
				if r != '\n' && r != '\t' && (unicode.IsControl(r) || clean.Invisible(r)) {
					t.Fatalf("%U in %q", r, p)
				}
			}
		}
	})
}

// FuzzPlainText: a mention of the bot never reaches the model, and the
// text is trimmed.
func FuzzPlainText(f *testing.F) {
	for _, s := range []string{"<@7> hi", "<@!7><@8> <#9> <@&1> <:x:2> <a:y:3> <t:1:R>", "<@", "<@7", "<<@7>>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := &discordgo.Message{Content: s, Mentions: []*discordgo.User{{ID: "8", Username: "bob"}, nil}}
		got := plainText(m, "7", "mnemo", true)
		if strings.Contains(got, "<@7>") || strings.Contains(got, "<@!7>") {
			t.Fatalf("bot mention left in %q", got)
		}
		if got != strings.TrimSpace(got) {
			t.Fatalf("not trimmed: %q", got)
		}
	})
}
