// Package text holds the small string helpers the agent, the reflector,
// the memory store and the commands share — squeezing text into one line,
// cutting it on a rune boundary, sizing a quote's fence, guessing the word
// a typo meant — so each is written once. It imports nothing of mnemo's.
package text
