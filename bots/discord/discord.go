package discord

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
	"github.com/mnemo-agent/mnemo/bots/internal/httpclient"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/settings"
	"github.com/mnemo-agent/mnemo/bots/internal/thread"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// DefaultAPIURL is Discord's address (DISCORD_API_URL overrides it).
const DefaultAPIURL = "https://discord.com/"

// Intents are the gateway intents the adapter asks for. MESSAGE_CONTENT is
// privileged: it must also be enabled in the Developer Portal.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentMessageContent

// Limits and timings.
const (
	maxMessageRunes = 2000             // Discord's limit per message
	maxParts        = 5                // messages per reply at most
	typingEvery     = 8 * time.Second  // a typing indicator lasts ~10 s
	editEvery       = time.Second      // a streamed reply's updates: Discord takes 5 edits per 5 s per channel
	httpTimeout     = 30 * time.Second // default HTTPClient timeout
	maxBackoff      = time.Minute      // longest wait between connection attempts
	msgCacheMax     = 5000             // recent messages kept for reply chains
	chanCacheMax    = 5000             // channel kinds kept
)

// cutNote ends the last message of a reply that was too long.
const cutNote = "\n\n*(The reply was too long for Discord and is cut here.)*"

// Budget is what people may spend (pipeline.Budget); cmd's
// budget.Budget satisfies it.
type Budget = pipeline.Budget

// Refusals counts messages answered without the model (pipeline.Refusals);
// cmd's metrics satisfy it.
type Refusals = pipeline.Refusals

// Config configures a Bot. Token and Handler are required.
type Config struct {
	Token  string // DISCORD_BOT_TOKEN, without "Bot "
	APIURL string // DISCORD_API_URL; "" → DefaultAPIURL

	// ChannelMemory is discord.channelMemory: "full", "read" (default) or
	// "off"; it applies to guild channels, never to DMs.
	ChannelMemory string
	// GuildIDs lists the guilds where /memory is registered (at once);
	// empty registers it globally.
	GuildIDs []string
	// ShardID and ShardCount split guilds between processes; DMs arrive
	// on shard 0. ShardCount 0 means 1.
	ShardID, ShardCount int
	// ReplyMention pings the author of the message a reply answers.
	ReplyMention bool
	// Identities links accounts to memory user names:
	// "discord:80351110224678912" → "zhangsan" (other platforms' keys are
	// ignored).
	Identities map[string]string

	// IntakeDir is the intake journal's folder (mnemo serve:
	// <state>/intake): a message is written there (fsynced) as soon as it
	// is received, and answered after a restart when a crash came first.
	// "" keeps it in memory: a crash loses the messages received and not
	// yet answered.
	IntakeDir string

	// Budget limits what people spend: messages a minute, tokens a day
	// (cmd/internal/budget; shared with the other platforms). nil: none.
	Budget Budget
	// Refusals counts messages answered without the model
	// (mnemo_refused_total). nil: not counted.
	Refusals Refusals
	// AttachmentMaxBytes is attachments.maxBytes: the text of files read
	// with one message, all together; 0 reads none (each is named).
	AttachmentMaxBytes int
	// Keeper keeps a message a person points at (the Remember this
	// message command: remember.go). nil: the command says it is not
	// available.
	Keeper plat.Keeper

	Handler mnemo.Handler
	Memory  memorycmd.Memory // nil: /memory answers that memory is not available

	// FirstVisible, when set, is told how long after a message was taken
	// the first words of its streamed reply were shown.
	FirstVisible func(time.Duration)
	// Access decides who may talk (discord.access, discord.allow), before
	// a message is journaled and before /memory; nil lets everyone in.
	Access *access.Gate

	Logger     *slog.Logger     // nil → discard
	HTTPClient *http.Client     // nil → a client with a 30 s timeout
	Now        func() time.Time // nil → time.Now
}

// Bot is a running Discord adapter. Create it with New, start it with Run.
type Bot struct {
	s      *discordgo.Session
	rt     *intake.Lifecycle // the intake journal, opened at Run's start and closed at its end
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	apiURL *url.URL
	http   *http.Client

	ready atomic.Bool
	lost  chan struct{} // a disconnect was seen (buffered 1)
	// greetings counts READY and RESUMED events: a session that got one
	// worked, however short it was. An atomic because the handlers run on
	// discordgo's goroutines.
	greetings atomic.Uint64

	// From READY.
	mu       sync.Mutex
	botID    string
	botName  string
	appID    string
	commands bool // /memory registered

	pipe     *pipeline.Pipeline[*incoming] // every message's way, from receipt to reply
	flow     *memorycmd.Flow
	names    *thread.NameCache
	recent   *msgCache
	channels *kindCache
	mentions mentionSeen // "@mnemo memory …" answered
	attach   *attach.Reader
	wg       sync.WaitGroup // interactions

	connMu    sync.Mutex
	conns     map[net.Conn]struct{} // gateway connections open
	killTimer atomic.Pointer[time.Timer]

	// Timings, shortened by tests.
	typingEvery time.Duration
	editEvery   time.Duration
	pace        *editPacer // every message edit, per channel
	retryBase   time.Duration
	killAfter   time.Duration // after ctx ends, gateway connections still open are closed
}

// New validates cfg and returns a Bot. Errors name the environment
// variable or setting at fault and say how to fix it.
func New(cfg Config) (*Bot, error) {
	tok := strings.TrimSpace(cfg.Token)
	tok = strings.TrimPrefix(tok, "Bot ")
	switch {
	case tok == "":
		return nil, errors.New("discord: DISCORD_BOT_TOKEN is not set; copy the token from the Bot page of your application in the Discord Developer Portal (Reset Token)")
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return nil, errors.New("discord: DISCORD_BOT_TOKEN contains spaces or control characters; copy the token again from the Bot page of your application in the Discord Developer Portal")
	}
	cfg.Token = tok
	u, err := settings.Common{Platform: "discord", APIURLVar: "DISCORD_API_URL", DefaultAPIURL: DefaultAPIURL,
		APIURL: &cfg.APIURL, ChannelMemory: &cfg.ChannelMemory, Handler: cfg.Handler,
		Identities: cfg.Identities, IdentityForm: "discord:USER_ID (digits)", ValidAccount: snowflake}.Check()
	if err != nil {
		return nil, err
	}
	if cfg.ShardCount == 0 {
		cfg.ShardCount = 1
	}
	if cfg.ShardCount < 1 || cfg.ShardID < 0 || cfg.ShardID >= cfg.ShardCount {
		return nil, fmt.Errorf("discord: discord.shardID %d is not below discord.shardCount %d; number shards from 0 to shardCount-1", cfg.ShardID, cfg.ShardCount)
	}
	for _, g := range cfg.GuildIDs {
		if !snowflake(g) {
			return nil, fmt.Errorf("discord: discord.guildIDs has %q, which is not a guild id; use the number Copy Server ID gives with Developer Mode on", g)
		}
	}
	hc, closeIdle := httpclient.Or(cfg.HTTPClient, httpTimeout)
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "discord", Keeps: "the messages received and not yet answered",
		Dir: cfg.IntakeDir, Logger: cfg.Logger, Now: cfg.Now, AtStop: closeIdle})
	b := &Bot{
		cfg:         cfg,
		log:         rt.Log,
		now:         rt.Now,
		apiURL:      u,
		http:        hc,
		rt:          rt,
		lost:        make(chan struct{}, 1),
		names:       thread.NewNameCache(thread.NameCacheMax, thread.NameCacheTTL),
		recent:      newMsgCache(msgCacheMax),
		channels:    newKindCache(chanCacheMax),
		typingEvery: typingEvery,
		editEvery:   editEvery,
		pace:        newEditPacer(clock.Real{}, editLimit, editWindow),
		retryBase:   time.Second,
		killAfter:   5 * time.Second,
		conns:       map[net.Conn]struct{}{},
	}
	b.flow = &memorycmd.Flow{Memory: cfg.Memory, Confirms: memorycmd.NewConfirms(memorycmd.MaxConfirms, memorycmd.ConfirmTTL), Log: b.log, Now: b.now,
		ChannelMemory: cfg.ChannelMemory}
	popts := pipeline.Options{Name: "discord", Handler: cfg.Handler, ChannelMemory: cfg.ChannelMemory, Lifecycle: rt,
		FirstVisible: cfg.FirstVisible, Budget: cfg.Budget, Refusals: cfg.Refusals}
	if cfg.Access != nil {
		popts.Access = cfg.Access
	}
	b.pipe = pipeline.New(platform{b}, popts)
	b.attach = b.newAttachReader()
	b.s = b.newSession()
	b.channels.lookup = func(ctx context.Context, id string) (*discordgo.Channel, error) {
		return b.s.Channel(id, discordgo.WithContext(ctx))
	}
	return b, nil
}

// DefaultHTTPClient is the client a Bot makes when Config.HTTPClient is
// nil: a 30 s timeout per request, and idle connections kept for reuse.
func DefaultHTTPClient() *http.Client { return httpclient.New(httpTimeout) }

// newSession makes the discordgo session: its HTTP client aimed at
// APIURL, the intents, the shard, and events handled in gateway order.
func (b *Bot) newSession() *discordgo.Session {
	s, _ := discordgo.New("Bot " + b.cfg.Token) // New never fails
	base := b.http.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client := *b.http
	client.Transport = &rewriteTransport{base: base, to: b.apiURL}
	s.Client = &client
	s.Identify.Intents = Intents
	s.ShardID, s.ShardCount = b.cfg.ShardID, b.cfg.ShardCount
	s.SyncEvents = true              // gateway order; handlers never block
	s.ShouldReconnectOnError = false // supervised by Run, which stops on fatal close codes
	s.StateEnabled = false           // nothing here reads the state cache
	s.LogLevel = -1                  // discordgo would log with the standard logger; Run logs instead
	s.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 45 * time.Second, NetDialContext: b.dial}
	s.AddHandler(b.onReady)
	s.AddHandler(b.onResumed)
	s.AddHandler(b.onDisconnect)
	s.AddHandler(b.onMessage)
	s.AddHandler(b.onInteraction)
	return s
}

// rewriteTransport sends requests for discord.com to the configured API.
type rewriteTransport struct {
	base http.RoundTripper
	to   *url.URL
}

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == "discord.com" && t.to.Host != "discord.com" {
		r := req.Clone(req.Context())
		r.URL.Scheme, r.URL.Host, r.Host = t.to.Scheme, t.to.Host, t.to.Host
		r.URL.Path = strings.TrimSuffix(t.to.Path, "/") + req.URL.Path
		if req.URL.RawPath != "" {
			r.URL.RawPath = strings.TrimSuffix(t.to.EscapedPath(), "/") + req.URL.RawPath
		}
		req = r
	}
	return t.base.RoundTrip(req)
}

// dial opens a gateway connection and keeps it in conns until it closes.
func (b *Bot) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, b: b}
	b.connMu.Lock()
	b.conns[tc] = struct{}{}
	b.connMu.Unlock()
	return tc, nil
}

// closeConns closes every gateway connection still open.
func (b *Bot) closeConns() {
	b.connMu.Lock()
	conns := make([]net.Conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.connMu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type trackedConn struct {
	net.Conn
	b    *Bot
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.b.connMu.Lock()
		delete(c.b.conns, c)
		c.b.connMu.Unlock()
	})
	return c.Conn.Close()
}

// Run opens the intake journal, checks the token, answers what the
// journal kept from before a restart, connects to the gateway, registers
// /memory and handles events until ctx is cancelled. It then closes the
// gateway cleanly (no more messages are taken), waits for the tasks it
// accepted to be answered, and returns nil. A close code no reconnect can fix ends
// Run with an error that says what to change. Run may be called once.
func (b *Bot) Run(ctx context.Context) error {
	stop, err := b.pipe.Start(ctx)
	if err != nil {
		return err
	}
	defer stop() // after the tasks (below) are done
	// Open cannot be cancelled: when it hangs in a handshake at shutdown,
	// its connection is closed under it.
	stopKill := context.AfterFunc(ctx, func() {
		b.killTimer.Store(time.AfterFunc(b.killAfter, b.closeConns))
	})
	defer func() {
		stopKill()
		if t := b.killTimer.Load(); t != nil {
			t.Stop()
		}
	}()
	err = b.checkToken(ctx)
	if err == nil {
		b.pipe.Replay(context.Background()) // before new messages, so each conversation stays in order
		err = b.connect(ctx)
	}
	b.pipe.Stop()
	b.ready.Store(false)
	b.s.Close() // a clean close (1000); harmless when not open
	// Tasks outlive ctx: a message that was taken is answered (the wait
	// cannot time out, so there is no error to report).
	b.pipe.Close()
	b.wg.Wait()
	b.log.Info("discord: stopped")
	if ctx.Err() != nil && err == ctx.Err() {
		return nil
	}
	return err
}

// checkToken asks for the bot's own user, so that a wrong token or
// address is reported before the gateway is tried.
func (b *Bot) checkToken(ctx context.Context) error {
	var err error
	for attempt := 1; ; attempt++ {
		var u *discordgo.User
		u, err = b.s.User("@me", discordgo.WithContext(ctx))
		if err == nil {
			b.setSelf(u, "")
			b.log.Info("discord: authenticated", "bot_user", u.ID, "name", u.Username, "api_url", text.RedactURLs(b.apiURL.String()))
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if isUnauthorized(err) {
			return errTokenRefused
		}
		if re, ok := errors.AsType[*discordgo.RESTError](err); ok && re.Response != nil && re.Response.StatusCode/100 == 4 {
			return fmt.Errorf("discord: %s (DISCORD_API_URL) answered HTTP %d to GET users/@me; check DISCORD_API_URL", text.RedactURLs(b.apiURL.String()), re.Response.StatusCode)
		}
		if attempt == 3 {
			return fmt.Errorf("discord: cannot check DISCORD_BOT_TOKEN: the Discord API at %s (DISCORD_API_URL) did not answer: %s", text.RedactURLs(b.apiURL.String()), redactErr(err))
		}
		wait := b.retryBase << (attempt - 1)
		b.log.Warn("discord: GET users/@me failed; retrying", "error", redactErr(err), "attempt", attempt, "wait", wait)
		if clock.Sleep(ctx, wait) != nil {
			return ctx.Err()
		}
	}
}

var errTokenRefused = errors.New("discord: DISCORD_BOT_TOKEN was refused by Discord (401 Unauthorized); copy the token from the Bot page of your application in the Discord Developer Portal (Reset Token)")

func isUnauthorized(err error) bool {
	re, ok := errors.AsType[*discordgo.RESTError](err)
	return ok && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized
}

// connect opens the gateway session and keeps it open until ctx ends:
// after every disconnect it opens it again (which resumes the session),
// and it stops on close codes that no reconnect fixes. A session that got
// READY or RESUMED worked, so after it ends the next attempt is made at
// once however short it was (op 7 RECONNECT soon after a resume is
// normal). Failed attempts, and sessions that ended without READY or
// RESUMED, wait longer each time (retryBase doubling up to maxBackoff):
// discordgo's Open succeeds when op 9 comes instead of READY (it only
// logs it), and the close that follows is a plain disconnect, so a
// refused session would otherwise reconnect in a tight loop.
func (b *Bot) connect(ctx context.Context) error {
	wait := time.Duration(0)
	backoff := func(attempt int, err error) bool {
		wait = min(max(wait*2, b.retryBase), maxBackoff)
		b.log.Warn("discord: cannot connect to the gateway; retrying", "error", redactErr(err), "attempt", attempt, "wait", wait)
		return clock.Sleep(ctx, wait) == nil
	}
	for attempt := 1; ctx.Err() == nil; attempt++ {
		greeted := b.greetings.Load()
		err := b.s.Open()
		if err != nil && !errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			if fatal := fatalClose(err); fatal != nil {
				return fatal
			}
			b.ready.Store(false)
			if !backoff(attempt, err) {
				break
			}
			continue
		}
		b.drainLost()
		b.ready.Store(true)
		b.log.Info("discord: connected to the gateway", "shard", b.cfg.ShardID, "shard_count", b.cfg.ShardCount)
		b.registerCommands(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.lost:
		}
		b.ready.Store(false)
		b.log.Info("discord: disconnected from the gateway; reconnecting")
		// A token reset while running ends the session for good (4004),
		// which discordgo does not report: ask REST.
		if _, err := b.s.User("@me", discordgo.WithContext(ctx)); isUnauthorized(err) {
			return errTokenRefused
		}
		// READY or RESUMED was counted before the disconnect was signalled:
		// discordgo runs handlers (SyncEvents) on the goroutine that reads
		// the socket, which reports the disconnect after them.
		if b.greetings.Load() != greeted {
			wait, attempt = 0, 0
		} else if !backoff(attempt, errNoGreeting) {
			break
		}
	}
	return ctx.Err()
}

var errNoGreeting = errors.New("the session ended before Discord sent READY or RESUMED")

func (b *Bot) drainLost() {
	select {
	case <-b.lost:
	default:
	}
}

// fatalCloses are the gateway close codes no reconnect can fix, and what
// to change.
var fatalCloses = map[int]string{
	4004: "DISCORD_BOT_TOKEN was refused by the gateway (close 4004: authentication failed); copy the token from the Bot page of your application in the Discord Developer Portal (Reset Token)",
	4014: "the gateway refused the Message Content intent (close 4014: disallowed intents); enable it in the Discord Developer Portal: Applications → your application → Bot → Privileged Gateway Intents → Message Content Intent, save, and start mnemo again",
	4013: "the gateway refused the intents mnemo asks for (close 4013: invalid intents); this is a bug in mnemo, please report it",
	4010: "the gateway refused the shard (close 4010: invalid shard); set discord.shardID below discord.shardCount",
	4011: "the gateway wants more shards (close 4011: sharding required); raise discord.shardCount and run one mnemo per shard (discord.shardID 0 to shardCount-1)",
	4012: "the gateway refused the API version (close 4012); update mnemo",
}

// fatalClose explains a gateway close code that no reconnect can fix, or
// returns nil.
func fatalClose(err error) error {
	ce, ok := errors.AsType[*websocket.CloseError](err)
	if !ok {
		return nil
	}
	if why, fatal := fatalCloses[ce.Code]; fatal {
		return errors.New("discord: " + why)
	}
	return nil
}

// onReady keeps who the bot is and which application it belongs to.
func (b *Bot) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	appID := ""
	if r.Application != nil {
		appID = r.Application.ID
	}
	b.setSelf(r.User, appID)
	b.greetings.Add(1)
	b.log.Debug("discord: READY", "session_id", r.SessionID)
}

func (b *Bot) onResumed(_ *discordgo.Session, _ *discordgo.Resumed) {
	b.greetings.Add(1)
	b.log.Debug("discord: RESUMED")
}

// onDisconnect tells connect to open the session again (never blocks:
// discordgo calls it with the session's lock released but on its own
// goroutines).
func (b *Bot) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	b.ready.Store(false)
	select {
	case b.lost <- struct{}{}:
	default:
	}
}

// Ready reports whether the gateway session is up (for /readyz).
func (b *Bot) Ready() bool { return b.ready.Load() }

func (b *Bot) setSelf(u *discordgo.User, appID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u != nil && u.ID != "" {
		b.botID = u.ID
		b.botName = clean.Name(cmp.Or(u.GlobalName, u.Username, "mnemo"))
	}
	if appID != "" {
		b.appID = appID
	}
}

func (b *Bot) self() (id, name, appID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.botID, b.botName, b.appID
}

// memoryUser is the memory user name of a Discord account.
func (b *Bot) memoryUser(id string) string {
	if name, ok := b.cfg.Identities["discord:"+id]; ok {
		return name
	}
	return "discord-" + id
}

// snowflake: 1 to 20 digits.
func snowflake(s string) bool {
	return s != "" && len(s) <= 20 && strings.Trim(s, "0123456789") == ""
}

// redactErr is err's text without URL credentials (a *url.Error names
// the URL it failed on).
func redactErr(err error) string { return text.RedactURLs(err.Error()) }
