// Package text holds the small string helpers the agent, the reflector
// and the memory store share — squeezing text into one line, cutting it on
// a rune boundary, sizing a quote's fence — so each is written once. It
// imports nothing of mnemo's.
package text
