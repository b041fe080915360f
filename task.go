package mnemo

import (
	"context"
	"crypto/rand"
	"time"
)

// Channel memory modes (Task.ChannelMemory).
const (
	ChannelMemoryFull = "full" // memory as in a DM
	ChannelMemoryRead = "read" // only the speaker's shared files, and the channel's memory
	ChannelMemoryOff  = "off"  // no index, no memory tools
)

// ApologyText is the reply to a task whose model calls failed.
const ApologyText = "Sorry, I couldn't reach the language model just now, so I can't answer that. Please try again in a moment."

// ContextMessage is an earlier message of the thread a task comes from,
// attributed to its author.
type ContextMessage struct {
	Author      string // display name
	Text        string
	FromSpeaker bool // written by the person the task answers
}

// Handler answers one task: the Thinker (*agent.Agent) does, and every
// platform hands its messages to one.
type Handler interface {
	Handle(ctx context.Context, t Task) (Reply, error)
}

// Task is one message to answer.
type Task struct {
	ID            string    // set by the Thinker (agent.Handle) when empty (16 random base32 characters)
	User          string    // memory user name, from the platform event (never from model output)
	Conversation  string    // key of the thread / DM / console session; one task at a time per key ("" → Platform+":"+User)
	Platform      string    // "console", "slack", "discord"
	Speaker       string    // display name of the speaker, optional
	Text          string    // the message
	Time          time.Time // zero → the Thinker's clock
	Channel       bool      // true in a public/group channel, false in a DM or the console
	ChannelMemory string    // "full" | "read" | "off" (only meaningful when Channel); "" = "read"
	// ChannelKey names the channel's own memory (ChannelKey(platform,
	// ids...)); "" in a DM, or for a channel without one.
	ChannelKey string
	// Origin is where the message was said, from the platform event: what
	// the reflector learns from it is stamped with it (never the model's
	// words).
	Origin  Origin
	Context []ContextMessage
	// Stream, when set, is shown the reply while the model writes it;
	// nil: the reply comes whole in Reply.Text.
	Stream Stream
}

// Stream is where a front end shows a reply while it is written
// (Task.Stream). Calls come from the task's goroutine, in order.
type Stream interface {
	// Text adds delta, the next words of the reply, to what is shown. The
	// deltas of a reply join to exactly Reply.Text when Reply.Streamed.
	Text(delta string)
	// Status says what the agent does before the next words, e.g.
	// "reading facts/user.md…"; "" clears it.
	Status(status string)
}

// Reply is the answer to a task.
type Reply struct {
	TaskID string
	Text   string // what to post; ApologyText when Failed
	Failed bool   // the model could not be reached (or the task broke)
	// Err is why a Failed reply failed (a model error wraps one of the
	// llm.Err* errors): a front end whose reader runs the server (the
	// terminal chat) says the cause and the fix instead of the apology.
	Err     error
	Steps   int    // model calls made
	Stopped string // "", agent.StopMaxSteps or agent.StopRepeated
	// Streamed: Text went to Task.Stream as it was written (the front end
	// finishes what it showed rather than posting Text again). Cut: the
	// reply broke off after words were shown (Failed is set too; Text is
	// what was shown; the front end adds CutNote).
	Streamed, Cut bool
	// Tokens is what the task's model calls cost (prompt + completion).
	Tokens int
}

// CutNote ends a streamed reply that broke off after words were shown.
const CutNote = "\n\n_(The reply was cut off here: the connection to the language model broke. Please ask again.)_"

// Turn is one exchange handed to the reflector (cmd wires the Thinker's OnTurn to it).
type Turn struct {
	TaskID, User, Conversation, Platform, Speaker, UserText, ReplyText string
	Time                                                               time.Time
	Context                                                            []ContextMessage
	Failed                                                             bool
	// Channel: said in a channel, which may learn it (see Scope.Shared);
	// ChannelKey is that channel's memory ("" for none).
	Channel    bool
	ChannelKey string
	// MemoryOff: said where memory is off; nothing of it is remembered.
	MemoryOff bool
	// Origin is the task's (Task.Origin).
	Origin Origin
	// Explicit: the person asked to keep a message ("Remember this"):
	// Context holds that one message, UserText is empty, and the reflector
	// writes it even where it would judge it casual, at once, in a run of
	// its own, into the person's private memory.
	Explicit bool
}

// Origin is where a message was said, as its platform event gives it:
// memory learned from it records it (memory's provenance stamps).
type Origin struct {
	// Place: "dm", "group dm", "#<channel id>" or "#<channel id> thread"
	// (the channel whose memory it belongs to); "" on the terminal.
	Place string
	// Link is the message's URL (a Slack permalink, a Discord message
	// URL); "" where the platform has none.
	Link string
}

// Scope is what of the memory a turn may be reflected with: a channel's
// turn sees only the speaker's shared files and the channel's memory.
func (t Turn) Scope() Scope {
	return Scope{User: t.User, Channel: t.ChannelKey, Shared: t.Channel}
}

// NewTaskID is a task id as agent.Handle makes one for a Task without: 16
// random characters (base32: A–Z, 2–7; 80 bits). A front end that must
// name a task before handing it over (to withdraw it) makes it here.
func NewTaskID() string { return rand.Text()[:16] }
