package discordtest

import (
	"cmp"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/agent/fake"
	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
	"github.com/mnemo-agent/mnemo/bots/internal/fakewait"
)

// Defaults used for the zero fields of Options.
const (
	DefaultToken               = "test-token"
	DefaultBotID               = "1000000000000000001"
	DefaultBotName             = "mnemo"
	DefaultHeartbeatInterval   = 41250 * time.Millisecond
	DefaultShards              = 1
	DefaultInteractionWindow   = 3 * time.Second
	DefaultInteractionTokenTTL = 15 * time.Minute
	DefaultReplayBuffer        = 1000
	DefaultCloseGrace          = 2 * time.Second

	// DefaultUserID and DefaultUserName describe the author given to messages
	// and interactions that come without one.
	DefaultUserID   = "1000000000000000002"
	DefaultUserName = "user"
)

// Options configures a Server. Every zero field takes its Default value.
type Options struct {
	// Token is the bot token without "Bot ". REST calls need
	// "Authorization: Bot <Token>"; IDENTIFY and RESUME accept "Bot <Token>"
	// (what discordgo sends: Session.Token, created as "Bot "+token) or the
	// bare token, as Discord does.
	Token         string
	BotID         string // the bot user's id (a snowflake)
	BotName       string
	ApplicationID string // defaults to BotID, as for every modern bot

	// HeartbeatInterval is sent in HELLO (whole milliseconds, at least 1).
	// discordgo reconnects when it has seen no heartbeat ACK for five
	// intervals; see SetHeartbeatACKs.
	HeartbeatInterval time.Duration

	// MessageContentAllowed models the "Message Content Intent" switch of the
	// developer portal. nil or true: an IDENTIFY may ask for the privileged
	// MESSAGE_CONTENT intent (1<<15). false: such an IDENTIFY is closed with
	// 4014 "Disallowed intent(s).", and REST answers carry empty content for
	// other users' guild messages that do not mention the bot.
	MessageContentAllowed *bool

	// Shards is the "shards" count GET /gateway/bot recommends.
	Shards int

	// Now is the server's clock: timestamps, snowflakes, the interaction
	// window and token lifetime, latencies and record times all use it.
	// Tests can move it forward to expire an interaction without sleeping.
	Now func() time.Time

	// InteractionWindow is how long after INTERACTION_CREATE was written the
	// callback is accepted (Discord: 3 s). InteractionTokenTTL is how long the
	// interaction token works for webhook edits and followups (15 min).
	InteractionWindow   time.Duration
	InteractionTokenTTL time.Duration

	// ReplayBuffer is how many dispatched events a session keeps for RESUME.
	// A RESUME from a sequence number that has fallen out of it is answered
	// with op 9 (not resumable).
	ReplayBuffer int

	// CloseGrace is how long the server waits, after sending a close frame,
	// for the client to close the TCP connection before closing it itself.
	CloseGrace time.Duration

	// EditLimit edits of messages per EditWindow are accepted in one
	// channel (Discord: 5 in 5 s); one more is answered 429.
	EditLimit  int
	EditWindow time.Duration
}

func (o Options) withDefaults() Options {
	o.Token = cmp.Or(o.Token, DefaultToken)
	o.BotID = cmp.Or(o.BotID, DefaultBotID)
	o.BotName = cmp.Or(o.BotName, DefaultBotName)
	o.ApplicationID = cmp.Or(o.ApplicationID, o.BotID)
	if o.Now == nil {
		o.Now = time.Now
	}
	faketest.Positive(&o.HeartbeatInterval, DefaultHeartbeatInterval)
	faketest.Positive(&o.Shards, DefaultShards)
	faketest.Positive(&o.InteractionWindow, DefaultInteractionWindow)
	faketest.Positive(&o.InteractionTokenTTL, DefaultInteractionTokenTTL)
	faketest.Positive(&o.ReplayBuffer, DefaultReplayBuffer)
	faketest.Positive(&o.CloseGrace, DefaultCloseGrace)
	faketest.Positive(&o.EditLimit, DefaultEditLimit)
	faketest.Positive(&o.EditWindow, DefaultEditWindow)
	return o
}

func (o Options) contentAllowed() bool {
	return o.MessageContentAllowed == nil || *o.MessageContentAllowed
}

// Server is a fake Discord: REST API v9 under URL()+"api/v9/" and Gateway v9
// (JSON encoding) WebSocket connections at GatewayURL(). All methods are safe
// for concurrent use; accessors return copies.
type Server struct {
	opts       Options
	http       *httptest.Server
	upgrader   websocket.Upgrader
	gatewayURL string

	mu      sync.Mutex
	changes fakewait.Changes // wakes the Wait methods on every recorded change
	closed  bool
	wg      sync.WaitGroup // goroutines owned by the server

	seq    int    // orders every record
	lastID uint64 // last snowflake handed out
	ids    map[uint64]struct{}

	// REST state
	users        map[string]discordgo.User
	channels     map[string]discordgo.Channel
	history      map[string][]discordgo.Message // by channel, ascending id
	faults       faketest.Faults[Fault]
	commands     map[string][]discordgo.ApplicationCommand // app + "/" + guild
	interactions map[string]*interactionState              // by interaction id
	tokens       map[string]*interactionState              // by interaction token
	noDMs        map[string]bool                           // users who refuse DMs (RefuseDMs)
	files        map[string]File                           // attachments' files, by path (Attachment)
	fetches      []FileFetch

	calls       []Call
	posts       []Post
	typings     []Typing
	responses   []InteractionResponse
	edits       []WebhookEdit
	commandSets []CommandSet

	messageEdits []MessageEdit
	editTimes    map[string][]time.Time // by channel, within EditWindow

	// Gateway state
	conns          []*conn
	sessions       []*session // in the order they were created
	pending        []pendingEvent
	identifyFaults []closeFault
	replayOnResume int
	noACKs         bool
	heartbeats     int
	readies        int
	dropped        int

	identifies  []Identify
	resumes     []Resume
	events      []Event
	disconnects []Disconnect
}

// New starts a fake Discord on 127.0.0.1 and registers Close with tb.Cleanup.
func New(tb fake.T, opts Options) *Server {
	tb.Helper()
	opts = opts.withDefaults()
	s := &Server{
		opts:         opts,
		ids:          map[uint64]struct{}{},
		users:        map[string]discordgo.User{},
		channels:     map[string]discordgo.Channel{},
		history:      map[string][]discordgo.Message{},
		commands:     map[string][]discordgo.ApplicationCommand{},
		interactions: map[string]*interactionState{},
		tokens:       map[string]*interactionState{},
		editTimes:    map[string][]time.Time{},
	}
	s.upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.users[opts.BotID] = s.botUser()

	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/gateway", s.serveGateway)
	mux.HandleFunc("/gateway/", s.serveGateway)
	mux.HandleFunc("/attachments/", s.serveFile)
	s.http = faketest.Listen(tb, "discordtest", mux)
	s.gatewayURL = "ws://" + s.http.Listener.Addr().String() + "/gateway"
	tb.Cleanup(s.Close)
	return s
}

// URL is the server's root, "http://127.0.0.1:PORT/" (what DISCORD_API_URL
// is set to). The REST API lives under URL()+"api/v9/".
func (s *Server) URL() string { return s.http.URL + "/" }

// APIURL is URL()+"api/v9/", the fake's equivalent of discordgo.EndpointAPI.
func (s *Server) APIURL() string { return s.URL() + "api/v9/" }

// GatewayURL is what GET /gateway answers: "ws://127.0.0.1:PORT/gateway".
func (s *Server) GatewayURL() string { return s.gatewayURL }

// Options returns the effective options (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// Close closes every gateway connection without a close frame and shuts the
// server down. It is idempotent and registered with t.Cleanup by New. Close
// discordgo sessions (registered with t.Cleanup after New, so they run
// first) before it, or they keep trying to reconnect to a closed port.
func (s *Server) Close() {
	faketest.Shutdown(&s.mu, &s.closed, &s.changes, &s.wg, s.http, func() []*websocket.Conn {
		var ws []*websocket.Conn
		for _, c := range s.conns {
			c.stopLocked()
			ws = append(ws, c.ws)
		}
		return ws
	})
}

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

func (s *Server) botUser() discordgo.User {
	return discordgo.User{ID: s.opts.BotID, Username: s.opts.BotName, GlobalName: s.opts.BotName,
		Discriminator: "0", Bot: true, Verified: true}
}

func (s *Server) nextSeqLocked() int {
	s.seq++
	return s.seq
}

// Changed is closed at the next change the server records, for a test
// waiting on a condition of its own: take it, check, then wait on it.
func (s *Server) Changed() <-chan struct{} { return s.changes.Next(&s.mu) }

// Snowflakes

// discordEpoch is the first millisecond of 2015, in Unix milliseconds.
const discordEpoch = 1420070400000

// workerBits is the worker (1) and process (1) part of the snowflakes the
// server makes.
const workerBits = 1<<17 | 1<<12

func parseSnowflake(id string) (uint64, bool) {
	n, err := strconv.ParseUint(id, 10, 64)
	return n, err == nil
}

// SnowflakeTime is the creation time encoded in a snowflake id (zero time
// for a malformed id).
func SnowflakeTime(id string) time.Time {
	n, ok := parseSnowflake(id)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + discordEpoch).UTC()
}

func snowflakeAt(t time.Time) uint64 {
	ms := t.UnixMilli() - discordEpoch
	if ms < 0 {
		ms = 0
	}
	return uint64(ms)<<22 | workerBits
}

// newIDLocked returns a fresh snowflake for "now", larger than every id the
// server has made or seen.
func (s *Server) newIDLocked() string {
	id := snowflakeAt(s.now())
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	s.ids[id] = struct{}{}
	return strconv.FormatUint(id, 10)
}

// newMessageIDLocked returns a fresh snowflake and the creation time it
// encodes (the message's timestamp).
func (s *Server) newMessageIDLocked() (string, time.Time) {
	id := s.newIDLocked()
	return id, SnowflakeTime(id)
}

// idAtLocked returns an unused snowflake for time t (for seeded history).
func (s *Server) idAtLocked(t time.Time) string {
	id := snowflakeAt(t)
	for {
		if _, used := s.ids[id]; !used {
			break
		}
		id++
	}
	s.observeIDLocked(id)
	return strconv.FormatUint(id, 10)
}

func (s *Server) observeIDLocked(id uint64) {
	s.ids[id] = struct{}{}
	if id > s.lastID {
		s.lastID = id
	}
}

func snowflakeLess(a, b string) bool {
	x, okx := parseSnowflake(a)
	y, oky := parseSnowflake(b)
	if okx && oky {
		return x < y
	}
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// interactionToken looks like Discord's: base64 of "interaction:<id>:<random>".
func interactionToken(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("interaction:" + id + ":" + faketest.RandomHex(48)))
}
