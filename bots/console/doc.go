// Package console is the terminal adapter: each message a person types
// becomes an agent task for one memory user, and the reply is printed. It
// only translates between messages and tasks; the agent and memory are
// passed in.
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
