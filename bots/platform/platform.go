package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// Platform is one chat platform as it registers with mnemo.
type Platform struct {
	// Name is the platform's one name: its configuration section
	// ("slack:"), its intake journal (<state>/intake/<Name>.jsonl), its
	// access platform (bots/access), its metrics label and its log lines'
	// adapter.
	Name string
	// Enabled reports whether the platform's section turns it on (its
	// tokens are set).
	Enabled func(s Section) bool
	// Hint says how to turn it on, for serve's answer when no platform
	// is: "set SLACK_BOT_TOKEN … to run the Slack adapter (…)".
	Hint string
	// Settings returns the platform's configuration section at its
	// defaults: a pointer to a struct whose fields' yaml tags are the
	// section's keys (camelCase), whose env tags name a variable other
	// than the rule's (MNEMO_<NAME>_<KEY>), whose `secret:"true"` tags
	// mark the secrets (a configuration file holding one must be private:
	// chat and serve warn), and whose doc comments are the
	// keys' entries in CONFIG.md. The struct may have Complete() (fill
	// and normalise what the file left blank) and Validate(Checker)
	// (report every bad value). nil: the platform has no section.
	Settings func() any
	// Access are its access rules.
	Access Access
	// ForgetQueued drops user's messages from the platform's intake
	// journal in dir while the platform does not run (a forget with no
	// serve running, or a serve that runs other platforms): it returns
	// how many. nil: the platform keeps no journal file.
	ForgetQueued func(dir, user string) (int, error)
	// New makes the platform's adapter.
	New func(d Deps) (Adapter, error)
	// Terminal marks the terminal platform (bots/console): it needs no
	// token, so serve and chat run it always (Enabled is not asked, and it
	// does not count as a platform with tokens); it is the operator's
	// own, so its Deps have no access gate and no budget, but the
	// terminal's handler, /memory and Withdraw; its adapter is a Chats,
	// which the second chats talk to.
	Terminal bool
}

// Access are a platform's access rules (<name>.access, <name>.allow).
type Access struct {
	// HomeOnly lets in only the platform's home workspace when access is
	// open (Slack: the bot's own team).
	HomeOnly bool
	// OpenNote, when set, is logged at start when access is open.
	OpenNote string
	// Modes say what each mode (open, allowlist, pairing) lets in, for
	// `mnemo access ls`.
	Modes map[string]string
}

// Modes are the access modes' texts for `mnemo access ls`: what open lets
// in on this platform, and allowlist's and pairing's, the same on every one.
func Modes(open string) map[string]string {
	return map[string]string{
		"open":      open,
		"allowlist": "only what is listed",
		"pairing":   "what is listed, and people who were given a code and approved",
	}
}

// Section is the platform's configuration section, decoded into into: a
// struct whose fields are named as the section's (BotToken, APIURL, …).
type Section func(into any) error

// SectionOf is Section over a section's value v, as the configuration
// holds it (a struct, a map, or nil for none): its fields, by name, land
// in those of the same name in into.
func SectionOf(v any) Section {
	return func(into any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("configuration section: %w", err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("configuration section: %w", err)
		}
		return nil
	}
}

// Checker is what a section's Validate reports problems to; each key is
// the dotted key ("slack.botToken", "discord.guildIDs[2]"), which the
// message names as the operator set it (file and line, or the variable).
type Checker interface {
	// Add reports a problem with key: format's first verb gets the key's
	// label, the rest args.
	Add(key, format string, args ...any)
	// Label is key as the operator set it, for a message about another key.
	Label(key string) string
	// Token checks a secret's shape (no spaces, prefix when not ""),
	// never showing it; hint says where the right token is.
	Token(key, v, prefix, hint string)
	// URL checks an absolute http(s) URL (an empty one only when required).
	URL(key, v string, required bool, example string)
	// OneOf checks that v is one of allowed.
	OneOf(key, v string, allowed ...string)
	// IntRange checks lo <= v <= hi; unit follows the range in the message.
	IntRange(key string, v, lo, hi int, unit string)
	// Once records that v is listed at key, or reports it listed twice:
	// format gets the label, v quoted and where v was first listed.
	Once(seen map[string]string, v, key, format string)
	// Access checks the platform's access mode and allow list (<name>.access,
	// <name>.allow); example shows allow entries.
	Access(platform, mode string, allow []string, example string)
}

// Deps are what the app hands a platform to make its adapter.
type Deps struct {
	Section Section
	// Access decides who may talk, before a message is journaled and
	// before /memory.
	Access *access.Gate
	// Identities links platform accounts to memory user names
	// ("slack:T01ABC/U02DEF" → "zhangsan").
	Identities map[string]string
	Handler    mnemo.Handler
	Memory     memorycmd.Memory
	Logger     *slog.Logger
	// IntakeDir is the intake journals' folder (<state>/intake).
	IntakeDir string
	// FirstVisible is told how long after a message was taken the first
	// words of its streamed reply were shown.
	FirstVisible func(time.Duration)
	Budget       pipeline.Budget
	Refusals     pipeline.Refusals
	// AttachmentMaxBytes is attachments.maxBytes: the text of files read
	// with one message; 0 reads none.
	AttachmentMaxBytes int
	// Withdraw keeps the turn of task id from the reflector: its person
	// cancelled the reply (the terminal's Ctrl-C). nil: nothing to withdraw.
	Withdraw func(taskID string)
	// Keeper is "Remember this" (remember.go); nil: not offered.
	Keeper Keeper
}

// Adapter is a platform's running front end.
type Adapter interface {
	// Run serves until ctx is cancelled (then finishes the tasks it
	// started and returns nil) or it cannot go on (an error).
	Run(ctx context.Context) error
	// Ready reports whether it is connected and taking messages.
	Ready() bool
	// Forget drops user's messages waiting for an answer and returns how
	// many: a forget drops them first, so that none becomes a turn after
	// the user's turns were dropped.
	Forget(user string) int
}

// Queuer is an Adapter that says how many messages wait (for /metrics).
type Queuer interface {
	Queued() int
}

// Line is one message typed at a terminal (several lines, when the person
// wrote them as one), and where its reply is shown as it is written.
type Line struct {
	ID   string       // names the line, for Cancel (mnemo.NewTaskID makes one)
	Text string       // as typed: a message, or a command word (/memory …)
	Show mnemo.Stream // the reply's words and statuses as they come; nil: none
}

// Said is what a line was answered: a reply (Markdown), or a command's
// answer.
type Said struct {
	Text string
	// Streamed: Text went to Line.Show as it was written; Cut: it broke
	// off after words were shown (the front adds mnemo.CutNote).
	Streamed, Cut bool
	// Failed: the message got no real answer (the model could not be
	// reached, the reply broke off); a cancelled one is not Failed.
	Failed bool
	// Forgot: everything remembered about the person was just deleted
	// (the front forgets the lines it kept for the up arrow).
	Forgot bool
}

// Conversation is one person's chat as a terminal sees it: the terminal
// platform (bots/console) in this process, or the one of the process that
// owns the data folder, through its control socket.
type Conversation interface {
	// Say answers l: a /memory command or alias at once, a message
	// through the pipeline, its reply shown on l.Show as it is written.
	// It returns when the answer is complete. An error: the line could not
	// be taken at all (the chat is closing, the owner is gone).
	Say(ctx context.Context, l Line) (Said, error)
	// Cancel withdraws the answer to line id while it is written
	// (Ctrl-C): its turn is not remembered; Say returns what was shown.
	Cancel(id string)
}

// Chats is an Adapter whose conversations the app opens, one per person,
// rather than a service's events (the terminal: its own chat and the
// second chats through the control socket).
type Chats interface {
	Adapter
	Conversation(user string) Conversation
}
