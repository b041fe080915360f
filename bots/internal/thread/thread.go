package thread

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// Limits of a thread's context and of the display names kept for it.
const (
	MaxMessages  = 20        // earlier thread messages given as context
	MaxText      = 2000      // characters kept of one context message
	NameCacheMax = 2000      // display names kept
	NameCacheTTL = time.Hour // how long a display name is kept
)

// Message is one earlier message of a thread or reply chain, as the
// platform gave it.
type Message struct {
	AuthorID   string
	AuthorName string // display name, may be ""
	Bot        bool   // written by some bot
	Self       bool   // written by this bot
	Text       string // plain text already (platform markup removed)
}

// Context turns the earlier messages of a thread (oldest first; the
// first is the thread's root) into Task.Context. Blank messages are
// dropped; of the rest, at most max are kept: all when there are no more,
// else the first (the root) and the last max-1. Each text is cut to
// maxText characters with " […]" appended (maxText ≤ 0: not cut). Authors
// are attributed: this bot's messages (Self) as botName+" (you, the
// assistant)"; other bots' as their cleaned name (or "a bot") +" (a bot)";
// the speaker's (AuthorID == speakerID) as speakerName (or "the speaker")
// with FromSpeaker set; everyone else's by their cleaned name, or "user
// "+AuthorID (or "someone"). Names go through clean.Name. max ≤ 0 gives no context.
func Context(msgs []Message, speakerID, speakerName, botName string, max, maxText int) []mnemo.ContextMessage {
	if max <= 0 {
		return nil
	}
	var kept []Message
	for _, m := range msgs {
		if strings.TrimSpace(m.Text) != "" {
			kept = append(kept, m)
		}
	}
	if len(kept) > max { // the root and the last max-1
		kept = append(kept[:1], kept[len(kept)-max+1:]...)
	}
	out := make([]mnemo.ContextMessage, 0, len(kept))
	for _, m := range kept {
		text := m.Text
		if maxText > 0 && utf8.RuneCountInString(text) > maxText {
			text = string([]rune(text)[:maxText]) + " […]"
		}
		cm := mnemo.ContextMessage{Text: text}
		switch {
		case m.Self:
			cm.Author = botName + " (you, the assistant)"
		case m.Bot:
			cm.Author = orDefault(clean.Name(m.AuthorName), "a bot") + " (a bot)"
		case speakerID != "" && m.AuthorID == speakerID:
			cm.Author, cm.FromSpeaker = orDefault(clean.Name(speakerName), "the speaker"), true
		default:
			cm.Author = clean.Name(m.AuthorName)
			if id := clean.Name(m.AuthorID); cm.Author == "" && id != "" {
				cm.Author = "user " + id
			} else if cm.Author == "" {
				cm.Author = "someone"
			}
		}
		out = append(out, cm)
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
