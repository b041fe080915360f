package chat

import "strings"

// CommandKind is what a /memory command asks for.
type CommandKind int

// The /memory commands.
const (
	CmdShow    CommandKind = iota // "", show, list, ls
	CmdForget                     // forget <target>
	CmdHelp                       // help, -h, --help (words after them ignored)
	CmdUnknown                    // anything else
	CmdShare                      // share <file>: shared with channels
	CmdPrivate                    // private <file>: used in private conversations only
)

// Command is a parsed /memory command.
type Command struct {
	Kind CommandKind
	// Target is, for CmdForget, the file path, or "all" (any case given);
	// for CmdShare and CmdPrivate, the file path; "" when missing.
	Target string
	// Args is, for CmdUnknown, the words given.
	Args string
}

// quoteChars are stripped from both ends of every word: people paste
// paths in quotes or backticks.
const quoteChars = "`'\"“”‘’"

// ParseCommand reads the text after "/memory": nothing, show, list or ls
// show; "forget <target>" forgets, "share <file>" shares a file with
// channels and "private <file>" makes it private (the target is the words
// after the command word, joined with single spaces); help, -h and --help
// explain; anything else is unknown. Quotes and backticks around words are
// stripped first. The text is plain: a platform's escaping is undone by
// the adapter.
func ParseCommand(text string) Command {
	var args []string
	for _, a := range strings.Fields(text) {
		if a = strings.Trim(a, quoteChars); a != "" {
			args = append(args, a)
		}
	}
	switch {
	case len(args) == 0 || len(args) == 1 && (args[0] == "show" || args[0] == "list" || args[0] == "ls"):
		return Command{Kind: CmdShow}
	case args[0] == "forget":
		target := strings.Join(args[1:], " ")
		if strings.EqualFold(target, "all") {
			target = "all"
		}
		return Command{Kind: CmdForget, Target: target}
	case args[0] == "share":
		return Command{Kind: CmdShare, Target: strings.Join(args[1:], " ")}
	case args[0] == "private":
		return Command{Kind: CmdPrivate, Target: strings.Join(args[1:], " ")}
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		return Command{Kind: CmdHelp}
	}
	return Command{Kind: CmdUnknown, Args: strings.Join(args, " ")}
}
