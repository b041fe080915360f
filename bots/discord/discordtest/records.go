package discordtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Every record has a Seq, increasing across all kinds, so a test can check
// that one thing happened before another.

// Identify is one IDENTIFY (op 2) the server received.
type Identify struct {
	Seq       int
	Token     string
	Intents   int
	Shard     *[2]int // as sent; nil when the client sent none
	Conn      int
	SessionID string // the new session, "" when refused
	CloseCode int    // the close code it was answered with, 0 when READY
	// InvalidSession: op 9 came before the close (InvalidNextIdentify).
	InvalidSession bool
}

// Resume is one RESUME (op 6) the server received.
type Resume struct {
	Seq       int
	SessionID string
	ClientSeq int64
	Conn      int
	Replayed  int  // events replayed before RESUMED
	Accepted  bool // false: answered with op 9 (or closed, see CloseCode)
	CloseCode int
}

// Event is one dispatch (op 0) written to a connection, replays included.
type Event struct {
	Seq       int // record order
	Conn      int
	SessionID string
	S         int // the gateway sequence number ("s")
	Type      string
	Data      json.RawMessage
	Replayed  bool // sent again by a RESUME
	At        time.Time
}

// Disconnect is the end of one gateway connection.
type Disconnect struct {
	Seq        int
	Conn       int
	Code       int    // close code received from the client, 0 if it sent none
	Reason     string // its reason
	ServerCode int    // close code the server sent first, 0 if none
	Dropped    bool   // the server dropped it (DropConnections)
	At         time.Time
}

// Call is one REST request as the server saw it.
type Call struct {
	Seq    int
	Method string
	Path   string
	Query  url.Values
	Body   []byte
	Header http.Header
	Status int // what the server answered
	At     time.Time
}

// Post is a successful POST /channels/{id}/messages.
type Post struct {
	Seq       int
	ChannelID string
	Message   discordgo.Message     // as stored, ID filled
	Body      discordgo.MessageSend // the decoded request
	RawBody   []byte
}

// Typing is a POST /channels/{id}/typing.
type Typing struct {
	Seq       int
	ChannelID string
	At        time.Time
}

// InteractionResponse is an accepted interaction callback.
type InteractionResponse struct {
	Seq           int
	InteractionID string
	Token         string
	Response      discordgo.InteractionResponse
	Latency       time.Duration // since the INTERACTION_CREATE was written
}

// WebhookEdit is a successful interaction webhook call: a PATCH of
// /webhooks/{app}/{token}/messages/{id} (MessageID as in the path, e.g.
// "@original") or a POST /webhooks/{app}/{token} followup (MessageID is the
// new message's).
type WebhookEdit struct {
	Seq           int
	ApplicationID string
	Token         string
	MessageID     string
	Edit          discordgo.WebhookEdit
	Method        string            // PATCH or POST
	Message       discordgo.Message // the message as it is afterwards
}

// CommandSet is a successful bulk overwrite of application commands.
type CommandSet struct {
	Seq           int
	ApplicationID string
	GuildID       string // "" for global commands
	Commands      []discordgo.ApplicationCommand
}

// Identifies returns the IDENTIFY payloads received, in order.
func (s *Server) Identifies() []Identify {
	return faketest.Copy(&s.mu, &s.identifies, func(r Identify) Identify {
		if r.Shard != nil {
			sh := *r.Shard
			r.Shard = &sh
		}
		return r
	})
}

// WaitIdentifies waits until at least n IDENTIFYs were received.
func (s *Server) WaitIdentifies(n int, timeout time.Duration) ([]Identify, error) {
	return waitRecords(s, n, timeout, "identifies", func() int { return len(s.identifies) }, s.Identifies)
}

// Resumes returns the RESUME payloads received, in order.
func (s *Server) Resumes() []Resume { return faketest.Copy(&s.mu, &s.resumes, nil) }

// WaitResumes waits until at least n RESUMEs were received.
func (s *Server) WaitResumes(n int, timeout time.Duration) ([]Resume, error) {
	return waitRecords(s, n, timeout, "resumes", func() int { return len(s.resumes) }, s.Resumes)
}

// Events returns the dispatches written to connections, in order.
func (s *Server) Events() []Event {
	return faketest.Copy(&s.mu, &s.events, func(r Event) Event {
		r.Data = bytes.Clone(r.Data)
		return r
	})
}

// WaitEvents waits until at least n dispatches were written.
func (s *Server) WaitEvents(n int, timeout time.Duration) ([]Event, error) {
	return waitRecords(s, n, timeout, "events", func() int { return len(s.events) }, s.Events)
}

// Disconnects returns the ends of gateway connections, in order.
func (s *Server) Disconnects() []Disconnect { return faketest.Copy(&s.mu, &s.disconnects, nil) }

// WaitDisconnects waits until at least n connections have ended.
func (s *Server) WaitDisconnects(n int, timeout time.Duration) ([]Disconnect, error) {
	return waitRecords(s, n, timeout, "disconnects", func() int { return len(s.disconnects) }, s.Disconnects)
}

// Connections is the number of gateway connections accepted so far.
func (s *Server) Connections() int { return faketest.Locked(&s.mu, func() int { return len(s.conns) }) }

// OpenConnections is the number of gateway connections still open.
func (s *Server) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.conns {
		if c.state != stateClosed {
			n++
		}
	}
	return n
}

// Heartbeats is the number of heartbeats (op 1) received.
func (s *Server) Heartbeats() int { return faketest.Locked(&s.mu, func() int { return s.heartbeats }) }

// WaitHeartbeats waits until at least n heartbeats were received.
func (s *Server) WaitHeartbeats(n int, timeout time.Duration) error {
	return faketest.WaitCount(&s.changes, &s.mu, ErrTimeout, n, timeout, "heartbeats", func() int { return s.heartbeats })
}

// WaitReady waits until n READY or RESUMED dispatches in total have been
// written.
func (s *Server) WaitReady(n int, timeout time.Duration) error {
	return faketest.WaitCount(&s.changes, &s.mu, ErrTimeout, n, timeout, "READY/RESUMED", func() int { return s.readies })
}

// Calls returns the REST calls whose "METHOD /path" starts with prefix
// (e.g. "POST /api/v9/channels/"); "" returns all.
func (s *Server) Calls(prefix string) []Call {
	return faketest.Locked(&s.mu, func() []Call { return s.callsLocked(prefix) })
}

func (s *Server) callsLocked(prefix string) []Call {
	return faketest.Select(s.calls, func(c Call) bool { return strings.HasPrefix(c.Method+" "+c.Path, prefix) }, func(c Call) Call {
		c.Query = faketest.CloneValues(c.Query)
		c.Body = bytes.Clone(c.Body)
		c.Header = c.Header.Clone()
		return c
	})
}

// WaitCalls waits until at least n calls match prefix (see Calls).
func (s *Server) WaitCalls(prefix string, n int, timeout time.Duration) ([]Call, error) {
	return waitRecords(s, n, timeout, "calls "+prefix, func() int { return len(s.callsLocked(prefix)) },
		func() []Call { return s.Calls(prefix) })
}

// Posts returns the successful message posts, in order.
func (s *Server) Posts() []Post {
	return faketest.Copy(&s.mu, &s.posts, func(r Post) Post {
		r.Message = cloneMessage(r.Message)
		r.RawBody = bytes.Clone(r.RawBody)
		return r
	})
}

// WaitPosts waits until at least n messages were posted.
func (s *Server) WaitPosts(n int, timeout time.Duration) ([]Post, error) {
	return waitRecords(s, n, timeout, "posts", func() int { return len(s.posts) }, s.Posts)
}

// Typings returns the typing indicators triggered, in order.
func (s *Server) Typings() []Typing { return faketest.Copy(&s.mu, &s.typings, nil) }

// WaitTypings waits until at least n typing indicators were triggered.
func (s *Server) WaitTypings(n int, timeout time.Duration) ([]Typing, error) {
	return waitRecords(s, n, timeout, "typings", func() int { return len(s.typings) }, s.Typings)
}

// InteractionResponses returns the accepted interaction callbacks, in order.
func (s *Server) InteractionResponses() []InteractionResponse {
	return faketest.Copy(&s.mu, &s.responses, nil)
}

// WaitInteractionResponses waits until at least n callbacks were accepted.
func (s *Server) WaitInteractionResponses(n int, timeout time.Duration) ([]InteractionResponse, error) {
	return waitRecords(s, n, timeout, "interaction responses", func() int { return len(s.responses) },
		s.InteractionResponses)
}

// WebhookEdits returns the successful webhook edits and followups, in order.
func (s *Server) WebhookEdits() []WebhookEdit {
	return faketest.Copy(&s.mu, &s.edits, func(r WebhookEdit) WebhookEdit {
		r.Message = cloneMessage(r.Message)
		return r
	})
}

// WaitWebhookEdits waits until at least n webhook edits or followups succeeded.
func (s *Server) WaitWebhookEdits(n int, timeout time.Duration) ([]WebhookEdit, error) {
	return waitRecords(s, n, timeout, "webhook edits", func() int { return len(s.edits) }, s.WebhookEdits)
}

// CommandSets returns the successful bulk overwrites, in order.
func (s *Server) CommandSets() []CommandSet {
	return faketest.Copy(&s.mu, &s.commandSets, func(r CommandSet) CommandSet {
		r.Commands = append([]discordgo.ApplicationCommand(nil), r.Commands...)
		return r
	})
}

// WaitCommandSets waits until at least n bulk overwrites succeeded.
func (s *Server) WaitCommandSets(n int, timeout time.Duration) ([]CommandSet, error) {
	return waitRecords(s, n, timeout, "command sets", func() int { return len(s.commandSets) }, s.CommandSets)
}

// ErrTimeout is returned (wrapped) by the Wait methods.
var ErrTimeout = errors.New("discordtest: timed out")

// waitRecords waits until count() (called with s.mu held) reaches n, then
// returns get().
func waitRecords[T any](s *Server, n int, timeout time.Duration, what string, count func() int, get func() []T) ([]T, error) {
	return faketest.WaitRecords(&s.changes, &s.mu, ErrTimeout, n, timeout, what, count, get)
}
