// Package app is mnemo's use cases, between the command line (cmd/mnemo)
// and the core (cmd/internal/wiring): a running mnemo opened once (Open)
// with what is remembered shown, shared, searched and forgotten (Memory,
// the one Asker every surface uses: Slack, Discord, the terminal chat, the
// control socket and the admin commands, with one forget, one timeout and
// one "nothing to forget" answer), the chat sessions of a second terminal
// chat, the change log of the memory files, the budgets, the access
// changes and the control socket's handler. The chat platforms plug in
// through their registrations (bots/platform): the app names none of them.
package app
