package memorycmd

import "time"

// Limits of the confirmations a forget waits for.
const (
	ConfirmTTL  = 10 * time.Minute // lifetime of a /memory forget confirmation
	MaxConfirms = 1000             // pending confirmations kept
)

// Memory is what /memory needs of the memory store; cmd satisfies it.
type Memory interface {
	// Show is a readable (Markdown) account of what is remembered about
	// user, each file marked private or shared, shown to them as it is
	// (converted to the platform's markup, cut with a note past what one
	// answer holds), so it should say what it is, how to share and how to
	// forget (/memory share|private <path>, /memory forget <path> | all).
	// When channel is a channel's memory name (mnemo.ChannelKey; "" in a
	// DM, or where channels use no memory) it also shows what is
	// remembered about that channel.
	Show(user, channel string) (string, error)
	// Forget deletes one file of user's memory (path as facts/<name>.md
	// or episodes/YYYY-MM.md), or all of it when path is "". cmd also
	// drops the user's turns from the agent's short-term history
	// (agent.Agent.ForgetUser).
	Forget(user, path string) error
	// Why is a readable (Markdown) account of the lines of user's memory
	// that match query: each with where it came from (surface, place,
	// date, who, link) and its history. inChannel: asked in a channel
	// (channel is its memory name, "" where channels use no memory): only
	// what that channel may see is searched, and a DM's link or another
	// channel's name is never shown.
	Why(user, channel, query string, inChannel bool) (string, error)
	Visibility
}

// Visibility is what /memory share and /memory private need of the memory
// store (Memory has it; the terminal chat uses it alone).
type Visibility interface {
	// CheckPath says whether path is a memory file name at all, so that
	// /memory forget, share and private can answer with the rules before
	// anything is done.
	CheckPath(path string) error
	// SetShared marks user's file path shared with channels (shared) or
	// private, as a write of the store (its history and metrics see it);
	// changed is false when the file already was. A missing file is an
	// error wrapping fs.ErrNotExist. Nothing changes on an error.
	SetShared(user, path string, shared bool) (changed bool, err error)
}
