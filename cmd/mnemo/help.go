package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mnemo-agent/mnemo/agent/text"
)

// globalHelp closes every command's help.
const globalHelp = `
Global flags, before or after the command: --config FILE, --log-format text|json,
--listen ADDR, -h/--help. mnemo help lists every command.
`

// commandHelp is each command's own help: its usage, what it does, its
// flags and an example. Keys are the commands as typed ("memory ls").
var commandHelp = map[string]string{
	"chat": `Usage: mnemo chat [--user NAME] [--verbose]

Talk to mnemo in the terminal, as NAME: one message in, the reply out. At a
terminal: line editing, history (↑), pasted lines sent as one message,
Ctrl-C cancels a reply, Ctrl-D ends. Piped: replies only on stdout; at the
end of input mnemo waits for the reflections, then exits (1 when a message
could not be answered or something could not be saved).
Commands in the chat: /memory, /forget, /help, /quit.
When another chat or serve owns the data folder, this chat talks through it
(its memory and reflector remember what NAME says) and ends when it stops.

Flags:
  --user NAME   whose memory (default $USER when valid, else console)
  --verbose     log info lines too (default: warnings and errors only)

Example:
  mnemo chat --user alice
  echo "What's my name?" | mnemo chat --user alice
`,
	"serve": `Usage: mnemo serve

Run the Slack adapter (SLACK_BOT_TOKEN and SLACK_APP_TOKEN set) and/or the
Discord adapter (DISCORD_BOT_TOKEN set) in one process, with /healthz,
/readyz and Prometheus /metrics on server.listen (--listen, default
127.0.0.1:9090). SIGTERM: no new messages, running work gets shutdown.grace.

Example:
  SLACK_BOT_TOKEN=xoxb-… SLACK_APP_TOKEN=xapp-… mnemo serve --listen :9090
`,
	"memory": `Usage: mnemo memory SUBCOMMAND [arguments]

Admin commands on the memory folder (MNEMO_DATA_DIR or memory.dataDir); they
need no model but rollup. Subcommands: users, ls, show, check, search, why,
forget, export, edit, history, restore, pending, rollup. mnemo help memory
SUBCOMMAND says more.

USER is a person's name, or a channel's memory: '#slack-TEAM-CHANNEL' or
'#discord-CHANNEL', quoted (in a shell '#' starts a comment). Each prints its
answer and one line per problem; --verbose adds the store's info log lines.

Example:
  mnemo memory ls alice
  mnemo memory ls '#slack-T01-C02'
`,
	"memory users": `Usage: mnemo memory users

List the users that have memory, one per line; then, after a blank line
and "channels:", the channels that have a memory (names starting with '#').

Example:
  mnemo memory users
`,
	"memory ls": `Usage: mnemo memory ls USER

List a user's (or a channel's) memory files: path, size, visibility and
summary. Visibility is private (only in DMs and the terminal), shared (also
in channels: the header says "> Visibility: shared"), or, for a channel's
own files, channel (everyone in that channel).

Example:
  mnemo memory ls alice
`,
	"memory show": `Usage: mnemo memory show USER PATH

Print one memory file (PATH is facts/<name>.md or episodes/YYYY-MM.md).

Example:
  mnemo memory show alice facts/user.md
`,
	"memory search": `Usage: mnemo memory search [--json] [--limit N] USER QUERY...

The entries of USER's memory that match QUERY, best first: episode entries
and fact lines, each as "path:line · heading · date" with its text around the
match — what memory_search gives the model in a private conversation. A time
in the query ("in March", "last week", "recently") prefers entries of then.
--limit N: 1 to 20 entries (default 8). --json: an array of {"path",
"heading", "line", "date", "text", "score"}, the text whole. Takes no lock:
it runs beside a chat or a server.

Example:
  mnemo memory search alice cache key fix back in the spring
  mnemo memory search --json '#slack-T01-C02' release decision
`,
	"memory why": `Usage: mnemo memory why USER TEXT...

The lines of USER's memory that match TEXT (as memory search finds them), each
with where it came from — the surface, the place, the date, who said it (in a
channel's memory) and a link to the message, from the line's provenance stamp,
or "added by hand" without one — and its history: since when the line is in
its file's kept versions and who put it there (reflector, hand edit, restore).
An admin sees every source in full; /memory why in a channel shows only what
that channel may see. Takes no lock.

Example:
  mnemo memory why alice Berlin
  mnemo memory why '#slack-T01-C02' release day
`,
	"memory check": `Usage: mnemo memory check [USER] [--fix]

Report files without a summary or title, bad names, non-regular files, files
over the read cap, torn episode entries, leftovers, reflections given up,
loose modes (files not 0600, folders not 0700) and entries owned by someone
else than the data folder's owner; exit 1 when anything is reported.
--fix makes folders 0700 and files 0600 and, run as root, gives foreign
entries back to the data folder's owner, then checks again.

The memory commands that write (forget, edit, restore, pending --retry or
--drop, rollup) stop when run as another user than the data folder's owner (naming
sudo -u OWNER); --as-any-user runs them anyway.

Example:
  mnemo memory check
  sudo mnemo memory check --fix
`,
	"memory forget": `Usage: mnemo memory forget USER [PATH] --yes [--keep-history]

Delete one memory file, or all of a user's memory, with the user's pending
turns and history; or a file or all of a channel's memory ('#…', quoted),
with its history. A user's forget leaves every channel's memory as it is:
what they said in a channel is the channel's. With serve or chat running,
that process does it.

Flags:
  --yes            really delete (without it, says what would be deleted)
  --keep-history   keep the earlier versions (mnemo memory history)

Example:
  mnemo memory forget alice facts/pets.md --yes
  mnemo memory forget '#slack-T01-C02' --yes
`,
	"memory export": `Usage: mnemo memory export USER [-o FILE]

Write a tar.gz of the user's (or channel's) memory folder to stdout (not to
a terminal), or to FILE.

Flags:
  -o FILE   write the archive to FILE (mode 0600) instead of stdout

Example:
  mnemo memory export alice > alice.tar.gz
`,
	"memory edit": `Usage: mnemo memory edit USER PATH

Edit one memory file in $VISUAL or $EDITOR (default vi), as visudo does: the
text is checked before it is saved and reopened with the problems listed;
a change made meanwhile (by the bot) is shown, never overwritten.

Example:
  EDITOR=nano mnemo memory edit alice facts/user.md
`,
	"memory history": `Usage: mnemo memory history USER [PATH]

The kept versions of one file, or of all the user's (or channel's) files:
id, time, who, size and what changed.

Example:
  mnemo memory history alice facts/user.md
`,
	"memory restore": `Usage: mnemo memory restore USER PATH --at ID|TIME

Bring a kept version back, atomically; the restore is kept as a change too.

Flags:
  --at ID|TIME   a version id from mnemo memory history, or a time
                 (2026-11-24, "2026-11-24 18:45" UTC, RFC 3339)

Example:
  mnemo memory restore alice facts/user.md --at "2026-11-24 18:45"
`,
	"memory pending": `Usage: mnemo memory pending [USER] [--retry | --drop]

The turns waiting to be reflected into memory (what a person said that is
not in memory yet), and those given up on after 3 failed reflections, each
with its age and cause. They wait when the model could not be reached; the
next chat or serve reflects them. With --retry the turns given up on are
journaled again for the next start; --drop deletes USER's waiting and given
up turns. Both need mnemo stopped (the running one owns the journal).

Flags:
  --retry   journal the turns given up on again (USER's, or everyone's)
  --drop    delete USER's waiting and given-up turns

Roll-ups due (memory.rollupAfter) are listed after the turns: with USER,
theirs; without, everyone's.

Example:
  mnemo memory pending
  mnemo memory pending alice --retry
`,
	"memory rollup": `Usage: mnemo memory rollup [--dry-run] USER

Roll up USER's old episode months now, as a running mnemo does after a
reflection of theirs: each finished quarter whose months are all older than
memory.rollupAfter months gets episodes/YYYY-Qn.md, each such year
episodes/YYYY.md (from its quarters), one model call each (the reflector's
model). A roll-up is made again only when one of its months changed; no
period gets more than one model call a day, whatever fails. Month files are
never written. It writes memory: it needs mnemo stopped.

Flags:
  --dry-run   list the periods and what is due; call no model, write nothing

Example:
  mnemo memory rollup --dry-run alice
  mnemo memory rollup alice
`,
	"access": `Usage: mnemo access SUBCOMMAND [arguments]

Who may talk to mnemo in Slack and Discord, beside slack.access,
slack.allow, discord.access and discord.allow in the configuration.
Subcommands: ls, allow, revoke, approve. With serve running, that process
makes the change, which applies from the person's next message.

Example:
  mnemo access ls
  mnemo access approve K7QM2XPA
`,
	"access ls": `Usage: mnemo access ls

Each platform's access mode, what is let in (from the configuration and
added by mnemo access), and the pairing codes waiting for approval.

Example:
  mnemo access ls
`,
	"access allow": `Usage: mnemo access allow PLATFORM:ID

Let in a person, team, channel, group or role: slack:T…/U… (a user of one
team), slack:U…, slack:T…, slack:C…, slack:S…; discord:ID (a user),
discord:guild:ID, discord:channel:ID, discord:role:ID. Kept in the state
folder (access.json) across restarts.

Example:
  mnemo access allow slack:T01ABC/U02DEF
  mnemo access allow discord:role:123456789012345678
`,
	"access revoke": `Usage: mnemo access revoke PLATFORM:ID

Take back what mnemo access allow or approve let in (as mnemo access ls
writes it). What the configuration lists is removed there.

Example:
  mnemo access revoke slack:T01ABC/U02DEF
`,
	"access approve": `Usage: mnemo access approve CODE

Let in the person the bot gave this pairing code (slack.access or
discord.access pairing). A code is valid for an hour and once.

Example:
  mnemo access approve K7QM2XPA
`,
	"init": `Usage: mnemo init [--base-url URL] [--api-key KEY] [--model NAME] [--env-file FILE] [--force] [--yes]

First setup: asks for the model server (offering a local Ollama), the API key
and the model, checks them with one request, writes mnemo.yaml (--config FILE
for another place) and the key to mnemo.env (mode 0600).

Flags:
  --base-url URL    the OpenAI-compatible server (default $OPENAI_BASE_URL)
  --api-key KEY     the key (default $OPENAI_API_KEY; prefer the variable)
  --model NAME      the model
  --env-file FILE   where the key goes (default mnemo.env beside the config)
  --force           replace files that exist
  --yes             ask nothing: flags, else defaults

Example:
  mnemo init
  mnemo init --yes --base-url http://127.0.0.1:11434/v1 --model llama3.2
`,
	"healthcheck": `Usage: mnemo healthcheck

Exit 0 when /healthz of the local serve answers (server.listen or --listen;
an address on every interface is asked on 127.0.0.1), 1 otherwise. For
container health checks: no shell or curl needed.

Example:
  mnemo --listen 0.0.0.0:9090 healthcheck
`,
	"version": `Usage: mnemo version

Print the version, commit, build date, Go version and platform.

Example:
  mnemo version
`,
	"help": `Usage: mnemo help [COMMAND]

Print the list of commands, or one command's help (also: mnemo COMMAND --help).

Example:
  mnemo help memory forget
`,
}

// printHelp prints the help of the command typed as words ("memory",
// "ls"), or returns an error that suggests the nearest command.
func printHelp(w io.Writer, words []string) error {
	key := strings.Join(words, " ")
	h, ok := commandHelp[key]
	if !ok {
		return unknownCommand(key)
	}
	_, err := fmt.Fprint(w, h+globalHelp)
	return err
}

// unknownCommand is the usage error for a command mnemo does not have,
// with the nearest one when it looks like a typo.
func unknownCommand(typed string) error {
	names := slices.Sorted(maps.Keys(commandHelp))
	if strings.HasPrefix(typed, "memory ") {
		sub := strings.TrimPrefix(typed, "memory ")
		var subs []string
		for _, n := range names {
			if s, ok := strings.CutPrefix(n, "memory "); ok {
				subs = append(subs, s)
			}
		}
		if near, ok := text.Nearest(sub, subs); ok {
			return usageError("unknown memory subcommand %q; did you mean %q? (mnemo help memory)", sub, near)
		}
		return usageError("unknown memory subcommand %q; use one of %s (mnemo help memory)", sub, memorySubNames)
	}
	if sub, ok := strings.CutPrefix(typed, "access "); ok {
		return usageError("unknown access subcommand %q; use one of %s (mnemo help access)", sub, accessSubNames)
	}
	var tops []string
	for _, n := range names {
		if !strings.Contains(n, " ") {
			tops = append(tops, n)
		}
	}
	if near, ok := text.Nearest(typed, tops); ok {
		return &exitError{code: 2, err: fmt.Errorf("unknown command %q; did you mean %q? (mnemo help lists the commands)", typed, near)}
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown command %q", typed), usage: true}
}
