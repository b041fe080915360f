package memorycmd

import "strings"

// Kind is what a /memory command asks for.
type Kind int

// The /memory commands.
const (
	Show    Kind = iota // "", show, list, ls
	Forget              // forget <target>
	Help                // help, -h, --help (words after them ignored)
	Unknown             // anything else
	Share               // share <file>: shared with channels
	Private             // private <file>: used in private conversations only
	Why                 // why <text>: the matching lines, where they came from, their history
)

// Command is a parsed /memory command.
type Command struct {
	Kind Kind
	// Target is, for Forget, the file path, or "all" (any case given);
	// for Share and Private, the file path; for Why, the words to look
	// for; "" when missing.
	Target string
	// Args is, for Unknown, the words given.
	Args string
}

// quoteChars are stripped from both ends of every word: people paste
// paths in quotes or backticks.
const quoteChars = "`'\"“”‘’"

// Parse reads the text after "/memory": nothing, show, list or ls
// show; "forget <target>" forgets, "share <file>" shares a file with
// channels, "private <file>" makes it private and "why <text>" says where
// what matches text came from (the target is the words
// after the command word, joined with single spaces); help, -h and --help
// explain; anything else is unknown. Quotes and backticks around words are
// stripped first. The text is plain: a platform's escaping is undone by
// the adapter.
func Parse(text string) Command {
	var args []string
	for _, a := range strings.Fields(text) {
		if a = strings.Trim(a, quoteChars); a != "" {
			args = append(args, a)
		}
	}
	switch {
	case len(args) == 0 || len(args) == 1 && (args[0] == "show" || args[0] == "list" || args[0] == "ls"):
		return Command{Kind: Show}
	case args[0] == "forget":
		target := strings.Join(args[1:], " ")
		if strings.EqualFold(target, "all") {
			target = "all"
		}
		return Command{Kind: Forget, Target: target}
	case args[0] == "share":
		return Command{Kind: Share, Target: strings.Join(args[1:], " ")}
	case args[0] == "private":
		return Command{Kind: Private, Target: strings.Join(args[1:], " ")}
	case args[0] == "why":
		return Command{Kind: Why, Target: strings.Join(args[1:], " ")}
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		return Command{Kind: Help}
	}
	return Command{Kind: Unknown, Args: strings.Join(args, " ")}
}
