package pipeline

import "strconv"

// Replies to a message over a budget (cmd/internal/budget): plain, said
// at most once a minute per person and reason, the model not asked.
const (
	// RateReplyText answers a message over limits.messagesPerMinute; the
	// message was not read.
	RateReplyText = "You're sending messages faster than I can take them, so I didn't read that one. Please wait a minute and send it again."
	// TokensReplyText answers a person whose limits.tokensPerDay is spent.
	TokensReplyText = "You've used up today's share of my language model, so I can't answer until it starts again at 00:00 UTC. If you need more, ask whoever runs this bot."
	// TotalTokensReplyText answers everyone once limits.totalTokensPerDay
	// is spent.
	TotalTokensReplyText = "I've used up today's language-model budget for everyone, so I can't answer until it starts again at 00:00 UTC. Please try again then."
)

// RefusalText is the reply to a message refused for reason ("rate",
// "tokens", "total_tokens"), or "" for none.
func RefusalText(reason string) string {
	return map[string]string{"rate": RateReplyText, "tokens": TokensReplyText, "total_tokens": TotalTokensReplyText}[reason]
}

// CutIncoming cuts text, a person's message, to its first max characters
// (runes; a platform counts characters); cut reports that it was longer.
// A platform cuts what it decodes before it is journaled, so that a huge
// message is never kept or sent to the model whole.
func CutIncoming(text string, max int) (string, bool) {
	if len(text) <= max { // bytes ≥ runes
		return text, false
	}
	n := 0
	for i := range text {
		if n == max {
			return text[:i], true
		}
		n++
	}
	return text, false
}

// CutNoteText tells a person that only the first max characters of their
// message were read.
func CutNoteText(max int) string {
	return "Your message was too long: I read only its first " + thousands(max) + " characters and answer those."
}

// thousands writes n with a comma every three digits (40,000).
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
