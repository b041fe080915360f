// Package queue is the bounded work queue every chat adapter answers
// through (Queue): messages of one conversation run one after another in
// the order they came, different conversations run side by side, at most
// MaxInFlight tasks at once and PerConversation held per conversation
// (running and waiting), so a person who floods the bot waits behind
// their own messages, not everyone else's.
package queue
