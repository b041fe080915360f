// Package console is the terminal chat platform. Chat (platform.go) is the
// platform, on the pipeline Slack and Discord are on (bots/internal/
// pipeline): every terminal chat of the process — its own, and the second
// chats talking through it over the control socket — is one person's
// conversation, its lines queued and answered in order, /memory answered by
// memorycmd's flow (a forget confirmed by typing /forget yes; /forget kept
// as an alias); Platform (register.go) registers it with the others
// (bots/registry), as the Terminal platform. Run is the terminal front: it reads what the person types
// and shows the answers, talking to a platform.Conversation (the Chat of
// this process, or the owner's through its control socket).
//
// Piped (Config.Interactive false), each line is a message and only
// replies are written. At a terminal the line editor is
// golang.org/x/term's Terminal, fed by keyboard (keyboard.go), which
// reads the terminal in raw mode and handles what the editor does not:
// Ctrl-C as a key (drop the line, cancel the reply, quit), bracketed
// pastes of several lines as one message, and the Home/End/word keys
// terminals send in other forms. History (history.go) is a file per
// memory user; the spinner (indicator.go) shows while the model works;
// markdown.go renders the reply's Markdown with ANSI styles.
package console
