// Package thread turns the earlier messages of a thread or reply chain
// into a task's attributed context (Context): the root and the last
// messages, each text cut to MaxText characters, each author named for
// what they are (this bot, another bot, the speaker, someone else) with
// names cleaned by bots/internal/clean; NameCache keeps the display names
// a platform looked up for them.
package thread
