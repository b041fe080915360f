package slacktest

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/agent/fake"
	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
	"github.com/mnemo-agent/mnemo/bots/internal/fakewait"
)

// Defaults used for the zero fields of Options.
const (
	DefaultBotToken          = "xoxb-test"
	DefaultAppToken          = "xapp-test"
	DefaultTeamID            = "T0TEAM"
	DefaultTeamName          = "mnemo-test"
	DefaultBotUserID         = "U0BOT"
	DefaultBotID             = "B0BOT"
	DefaultBotName           = "mnemo"
	DefaultAppID             = "A0APP"
	DefaultVerificationToken = "verification-token"
	DefaultPingInterval      = 5 * time.Second
	DefaultMaxRedeliveries   = 3
	DefaultDisconnectGrace   = 500 * time.Millisecond
)

// Options configures a Server. Every zero field takes its Default value.
type Options struct {
	BotToken          string // xoxb- token accepted by the bot methods
	AppToken          string // xapp- token accepted by apps.connections.open
	TeamID            string
	TeamName          string // also the workspace domain in auth.test's url
	BotUserID         string // the bot's user id (auth.test user_id)
	BotID             string // the bot's bot id (B…), set on the bot's own messages
	BotName           string
	AppID             string // api_app_id of every envelope
	VerificationToken string // the deprecated "token" field of envelope payloads

	// PingInterval is how often the server sends a WebSocket PING on each Socket
	// Mode connection. slack-go drops a connection that has not seen a PING for
	// its own interval (30 s by default), so keep this below the client's.
	// A negative value disables pings.
	PingInterval time.Duration

	// RedeliverAfter makes the server redeliver an events_api envelope that has
	// not been acked within this time, as Slack does (same event_id, a new
	// envelope id, retry_attempt+1, retry_reason "timeout"), up to
	// MaxRedeliveries times. Zero (the default) turns this off; see also
	// SetRedeliverAfter.
	RedeliverAfter  time.Duration
	MaxRedeliveries int

	// DisconnectGrace is how long Disconnect waits for the client to close the
	// socket itself before the server closes it.
	DisconnectGrace time.Duration

	// EchoBotPosts makes chat.postMessage into a DM channel (an id starting with
	// "D") come back over the socket as a message event with bot_id and user set
	// to the bot, as real Slack does for message.im subscribers.
	EchoBotPosts bool
}

func (o Options) withDefaults() Options {
	o.BotToken = cmp.Or(o.BotToken, DefaultBotToken)
	o.AppToken = cmp.Or(o.AppToken, DefaultAppToken)
	o.TeamID = cmp.Or(o.TeamID, DefaultTeamID)
	o.TeamName = cmp.Or(o.TeamName, DefaultTeamName)
	o.BotUserID = cmp.Or(o.BotUserID, DefaultBotUserID)
	o.BotID = cmp.Or(o.BotID, DefaultBotID)
	o.BotName = cmp.Or(o.BotName, DefaultBotName)
	o.AppID = cmp.Or(o.AppID, DefaultAppID)
	o.VerificationToken = cmp.Or(o.VerificationToken, DefaultVerificationToken)
	o.PingInterval = cmp.Or(o.PingInterval, DefaultPingInterval) // negative: no pings
	o.MaxRedeliveries = cmp.Or(o.MaxRedeliveries, DefaultMaxRedeliveries)
	faketest.Positive(&o.DisconnectGrace, DefaultDisconnectGrace)
	return o
}

// Server is a fake Slack: Web API under APIURL() and Socket Mode WebSocket
// connections handed out by apps.connections.open. All methods are safe for
// concurrent use; accessors return copies.
type Server struct {
	opts     Options
	http     *httptest.Server
	upgrader websocket.Upgrader

	mu      sync.Mutex
	changes fakewait.Changes // wakes the Wait methods on every recorded change
	closed  bool
	wg      sync.WaitGroup // goroutines owned by the server

	seq       int // orders every record
	tsCounter int
	idCounter int

	// Web API
	calls       []Call
	chats       []Post
	reactions   []Reaction
	reactionSet map[string]bool
	statuses    []Status
	assistant   assistantState // assistant.threads.setSuggestedPrompts and setTitle
	responses   []Response
	users       map[string]User
	handlers    map[string]func(Call) any
	faults      faketest.Faults[Fault]
	channels    map[string][]Message
	files       map[string]File // by id (AddFile)
	fetches     []FileFetch
	refuseFiles bool
	views       []View // views.publish (views.go)
	// Streams: the messages streaming (channel/ts), and the error every
	// chat.startStream answers ("" accepts).
	streaming     map[string]bool
	refuseStreams string

	// Socket Mode
	tickets        map[string]bool // issued tickets; true once used
	rejectedDials  int
	pongs          int // answers to the server's pings, on every connection
	conns          []*wsConn
	pending        []Envelope // waiting for a connection
	sent           []Envelope
	sentAt         map[string]sentInfo
	acks           []Ack
	redeliverAfter time.Duration
	timers         map[*redeliveryTimer]struct{}
}

type sentInfo struct {
	at  time.Time
	env Envelope
}

// New starts a fake Slack on 127.0.0.1 and registers Close with tb.Cleanup.
func New(tb fake.T, opts Options) *Server {
	tb.Helper()
	opts = opts.withDefaults()
	s := &Server{
		opts:           opts,
		reactionSet:    map[string]bool{},
		users:          map[string]User{},
		handlers:       map[string]func(Call) any{},
		channels:       map[string][]Message{},
		streaming:      map[string]bool{},
		tickets:        map[string]bool{},
		sentAt:         map[string]sentInfo{},
		timers:         map[*redeliveryTimer]struct{}{},
		redeliverAfter: opts.RedeliverAfter,
	}
	s.upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.users[opts.BotUserID] = User{ID: opts.BotUserID, TeamID: opts.TeamID, Name: opts.BotName,
		RealName: opts.BotName, IsBot: true}

	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/link/", s.serveLink)
	mux.HandleFunc("/commands/", s.serveResponseURL)
	mux.HandleFunc("/files-pri/", s.serveFile)
	mux.HandleFunc("/signin", s.serveFile)
	mux.HandleFunc("/actions/", s.serveResponseURL) // a shortcut's response_url
	s.http = faketest.Listen(tb, "slacktest", mux)
	tb.Cleanup(s.Close)
	return s
}

// URL is the server's root, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.http.URL }

// APIURL is the Web API base for slack.OptionAPIURL; it ends with "/".
func (s *Server) APIURL() string { return s.http.URL + "/api/" }

// Options returns the effective options (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// Close closes every Socket Mode connection, stops timers and shuts the
// server down. It is idempotent and registered with t.Cleanup by New. Stop
// socketmode clients (cancel their context) before it runs, or they keep
// trying to reconnect to a closed port.
func (s *Server) Close() {
	faketest.Shutdown(&s.mu, &s.closed, &s.changes, &s.wg, s.http, func() []*websocket.Conn {
		for rt := range s.timers {
			if rt.t.Stop() {
				s.wg.Done()
			}
		}
		s.timers = map[*redeliveryTimer]struct{}{}
		var ws []*websocket.Conn
		for _, c := range s.conns {
			ws = append(ws, c.ws)
		}
		return ws
	})
}

// NextTS returns a fresh message timestamp, "1700000000.000100" style,
// unique and increasing for the life of the server.
func (s *Server) NextTS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextTSLocked()
}

func (s *Server) nextTSLocked() string {
	s.tsCounter++
	n := s.tsCounter
	return fmt.Sprintf("%d.%06d", 1700000000+n/10000, (n%10000)*100)
}

// observeTSLocked keeps NextTS after every timestamp the server has stored.
func (s *Server) observeTSLocked(ts string) {
	secStr, frac, _ := strings.Cut(ts, ".")
	sec, err1 := strconv.ParseInt(secStr, 10, 64)
	for len(frac) < 6 {
		frac += "0"
	}
	micro, err2 := strconv.ParseInt(frac[:6], 10, 64)
	if err1 != nil || err2 != nil || sec < 1700000000 {
		return
	}
	if n := (sec-1700000000)*10000 + micro/100; n > int64(s.tsCounter) {
		s.tsCounter = int(n)
	}
}

func (s *Server) nextIDLocked() int {
	s.idCounter++
	return s.idCounter
}

func (s *Server) nextSeqLocked() int {
	s.seq++
	return s.seq
}

// Changed is closed at the next change the server records, for a test
// waiting on a condition of its own: take it, check, then wait on it.
func (s *Server) Changed() <-chan struct{} { return s.changes.Next(&s.mu) }

// waitFor blocks until cond (called with s.mu held) is true or timeout.
func (s *Server) waitFor(timeout time.Duration, cond func() bool) bool {
	return s.changes.Wait(&s.mu, timeout, cond)
}

// ErrTimeout is returned (wrapped) by the Wait methods.
var ErrTimeout = errors.New("slacktest: timed out")

// waitRecords waits until count() (called with s.mu held) reaches n, then
// returns get().
func waitRecords[T any](s *Server, n int, timeout time.Duration, what string, count func() int, get func() []T) ([]T, error) {
	return faketest.WaitRecords(&s.changes, &s.mu, ErrTimeout, n, timeout, what, count, get)
}

func randomUUID() string {
	h := faketest.RandomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// tsKey makes timestamps comparable as strings: "12.5" < "9.7" is false.
func tsKey(ts string) string {
	sec, frac, _ := strings.Cut(ts, ".")
	for len(frac) < 6 {
		frac += "0"
	}
	return fmt.Sprintf("%020s.%s", sec, frac)
}
