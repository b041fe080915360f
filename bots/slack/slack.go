package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/httpclient"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/settings"
	"github.com/mnemo-agent/mnemo/bots/internal/thread"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// DefaultAPIURL is the Slack Web API base (SLACK_API_URL overrides it).
const DefaultAPIURL = "https://slack.com/api/"

// Limits and timings of Slack's own (the shared ones are in bots/internal/queue, thread and memorycmd).
const (
	repliesPages  = 5                // conversations.replies pages read at most
	postAttempts  = 3                // chat.postMessage tries on 429
	maxRetryAfter = time.Minute      // longest Retry-After honoured as given
	editEvery     = time.Second      // a streamed reply's updates (chat.update: Tier 3)
	httpTimeout   = 30 * time.Second // default HTTPClient timeout
)

// thinkingReaction is added to the message while the agent works when the
// assistant status is unavailable.
const thinkingReaction = "eyes"

// thinkingStatus is the assistant.threads.setStatus text.
const thinkingStatus = "is thinking…"

// Handler answers one task; *agent.Agent satisfies it.
type Handler = mnemo.Handler

// Memory is what /memory needs of the memory store; cmd satisfies it.
// Show's Markdown is converted to mrkdwn and cut with a note past what one
// Slack answer holds.
type Memory = memorycmd.Memory

// Budget is what people may spend (pipeline.Budget); cmd's
// budget.Budget satisfies it.
type Budget = pipeline.Budget

// Refusals counts messages answered without the model (pipeline.Refusals);
// cmd's metrics satisfy it.
type Refusals = pipeline.Refusals

// Config configures a Bot. BotToken, AppToken and Handler are required.
type Config struct {
	BotToken string // SLACK_BOT_TOKEN, xoxb-…
	AppToken string // SLACK_APP_TOKEN, xapp-… with connections:write
	APIURL   string // SLACK_API_URL; "" → DefaultAPIURL; a missing final "/" is added

	// ChannelMemory is slack.channelMemory: "full", "read" (default) or
	// "off"; it applies to channels, never to DMs.
	ChannelMemory string
	// Identities links Slack accounts to memory user names:
	// "slack:T01ABC/U02DEF" → "zhangsan".
	Identities map[string]string

	Handler Handler
	Memory  Memory // nil: /memory answers that memory is not available

	// Access decides who may talk (slack.access, slack.allow), before a
	// message is journaled and before /memory; nil lets everyone in.
	// Who.Home is the team auth.test names.
	Access *access.Gate

	// IntakeDir is the intake journal's folder (mnemo serve:
	// <state>/intake): a message is written there (fsynced) before its
	// envelope is acknowledged, and answered after a restart when a crash
	// came first. "" keeps it in memory: a crash loses the messages
	// acknowledged and not yet answered.
	IntakeDir string

	// FirstVisible, when set, is told how long after a message was taken
	// the first words of its streamed reply were shown.
	FirstVisible func(time.Duration)
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
	// shortcut: remember.go). nil: the shortcut says it is not available.
	Keeper plat.Keeper

	Logger     *slog.Logger     // nil → discard
	HTTPClient *http.Client     // nil → a client with a 30 s timeout
	Now        func() time.Time // nil → time.Now
}

// Bot is a running Slack adapter. Create it with New, start it with Run.
type Bot struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	api    *slackgo.Client
	http   *http.Client
	apiURL *url.URL
	rt     *intake.Lifecycle // the intake journal, opened at Run's start and closed at its end

	ready atomic.Bool
	sm    *socketmode.Client

	// From auth.test; teamURL is the workspace's (https://acme.slack.com/),
	// what message permalinks start with.
	botUserID, botID, botName, teamID, teamURL string

	pipe  *pipeline.Pipeline[*incoming] // every message's way, from receipt to reply; commands spawn on it
	flow  *memorycmd.Flow
	users *thread.NameCache

	noStatus    atomic.Bool // assistant.threads.setStatus refused for good
	noReactions atomic.Bool // reactions refused for good
	noUsers     atomic.Bool // users.info refused for good
	streams     streams     // replies streaming, workspaces refusing streams
	groups      *groupCache // user groups' members, for the access check
	home        *homeTabs   // the App Home tabs kept current (home.go)
	attach      *attach.Reader

	// Assistant threads seen (assistant.go), and how often a thread status
	// is set again while it shows (statusRefresh; shortened by tests).
	assist      assistantThreads
	statusEvery time.Duration

	// Timings, shortened by tests.
	ackBudget  time.Duration // a slow /memory is acked empty after this, answered via response_url
	retryBase  time.Duration // first backoff of a failed auth.test
	authTries  int
	maxWaitFor time.Duration // cap on a Retry-After wait
	editEvery  time.Duration // least time between a streamed reply's updates
}

// New validates cfg and returns a Bot. Errors name the environment
// variable or setting at fault and say how to fix it.
func New(cfg Config) (*Bot, error) {
	var err error
	if cfg.BotToken, err = checkToken("SLACK_BOT_TOKEN", cfg.BotToken, "xoxb-",
		"copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page"); err != nil {
		return nil, err
	}
	if cfg.AppToken, err = checkToken("SLACK_APP_TOKEN", cfg.AppToken, "xapp-",
		"create an app-level token with the connections:write scope on the app's Basic Information page (App-Level Tokens) and use it"); err != nil {
		return nil, err
	}
	u, err := settings.Common{Platform: "slack", APIURLVar: "SLACK_API_URL", DefaultAPIURL: DefaultAPIURL, Handler: cfg.Handler,
		APIURL: &cfg.APIURL, ChannelMemory: &cfg.ChannelMemory, Identities: cfg.Identities,
		IdentityForm: "slack:TEAM_ID/USER_ID (e.g. slack:T01ABC/U02DEF)", ValidAccount: validAccount}.Check()
	if err != nil {
		return nil, err
	}
	hc, closeIdle := httpclient.Or(cfg.HTTPClient, httpTimeout)
	rt := intake.NewLifecycle(intake.LifecycleOptions{Platform: "slack", Keeps: "the messages acknowledged to Slack and not yet answered",
		Dir: cfg.IntakeDir, Logger: cfg.Logger, Now: cfg.Now, AtStop: closeIdle})
	b := &Bot{
		cfg:        cfg,
		log:        rt.Log,
		now:        rt.Now,
		http:       hc,
		apiURL:     u,
		rt:         rt,
		users:      thread.NewNameCache(thread.NameCacheMax, thread.NameCacheTTL),
		groups:     newGroupCache(groupCacheMax, groupCacheTTL),
		ackBudget:  2 * time.Second,
		retryBase:  time.Second,
		authTries:  3,
		maxWaitFor: maxRetryAfter,
		editEvery:  editEvery,

		statusEvery: statusRefresh,
	}
	b.flow = &memorycmd.Flow{Memory: cfg.Memory, Confirms: memorycmd.NewConfirms(memorycmd.MaxConfirms, memorycmd.ConfirmTTL),
		Log: b.log.With("platform", "slack"), Now: b.now, Platform: "Slack", ChannelMemory: cfg.ChannelMemory}
	popts := pipeline.Options{Name: "slack", Handler: cfg.Handler,
		ChannelMemory: cfg.ChannelMemory, Redelivers: true, TypingUntilPosted: true, Lifecycle: rt,
		FirstVisible: cfg.FirstVisible, Budget: cfg.Budget, Refusals: cfg.Refusals}
	if cfg.Access != nil {
		popts.Access = cfg.Access
	}
	b.home = newHomeTabs(nil, b.log, b.publishHome)
	b.pipe = pipeline.New(platform{b}, popts)
	b.attach = b.newAttachReader()
	logger := logAdapter{b.log}
	b.api = slackgo.New(cfg.BotToken, slackgo.OptionAppLevelToken(cfg.AppToken), slackgo.OptionAPIURL(cfg.APIURL),
		slackgo.OptionHTTPClient(b.http), slackgo.OptionLog(logger))
	return b, nil
}

// validAccount checks the "TEAM/USER" of an identity "slack:TEAM/USER".
func validAccount(account string) bool {
	team, user, ok := strings.Cut(account, "/")
	return ok && alnum(team, 32) && alnum(user, 32)
}

// checkToken trims tok and checks its prefix; the error names the variable
// and the fix, never the token.
func checkToken(name, tok, prefix, fix string) (string, error) {
	tok = strings.TrimSpace(tok)
	switch {
	case tok == "":
		return "", fmt.Errorf("slack: %s is not set; %s", name, fix)
	case !strings.HasPrefix(tok, prefix):
		kind := "it"
		for p, k := range map[string]string{"xoxb-": "a bot token", "xapp-": "an app-level token", "xoxp-": "a user token",
			"xoxe": "a refresh or configuration token"} {
			if strings.HasPrefix(tok, p) {
				kind = "it is " + k + " and"
			}
		}
		return "", fmt.Errorf("slack: %s must start with %s (%s does not); %s", name, prefix, kind, fix)
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("slack: %s contains spaces or control characters; %s", name, fix)
	}
	return tok, nil
}

// Ready reports whether the bot is connected to Socket Mode (for /readyz).
func (b *Bot) Ready() bool { return b.ready.Load() }

// Run opens the intake journal, checks the bot token with auth.test,
// answers what the journal kept from before a restart, connects to Socket
// Mode and handles events until ctx is cancelled. It then stops taking
// events, waits for the tasks it accepted to finish and their replies to
// be posted, and returns nil. A token Slack refuses ends Run with an error
// naming the variable. Run may be called once.
func (b *Bot) Run(ctx context.Context) error {
	stop, err := b.pipe.Start(ctx)
	if err != nil {
		return err
	}
	defer stop() // after the tasks (below) are done
	if err := b.authTest(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	b.log.Info("slack: authenticated", "team", b.teamID, "bot_user", b.botUserID, "api_url", text.RedactURLs(b.cfg.APIURL))

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Tasks outlive ctx: a message that was acked is answered even when
	// shutdown begins, as Slack will not deliver it again.
	taskCtx := context.WithoutCancel(ctx)
	b.pipe.Replay(runCtx) // before new messages, so each conversation stays in order
	b.home.start(runCtx)
	defer b.home.wait() // publishes end with runCtx

	b.sm = socketmode.New(b.api, socketmode.OptionLog(logAdapter{b.log}))
	smDone := make(chan error, 1)
	go func() { smDone <- b.sm.RunContext(runCtx) }()

	var fatal error
loop:
	for {
		select {
		case <-runCtx.Done():
			break loop
		case err := <-smDone:
			smDone = nil
			if !errors.Is(err, context.Canceled) || ctx.Err() == nil {
				fatal = b.socketError(err)
			}
			break loop
		case evt := <-b.sm.Events:
			if err := b.receive(runCtx, taskCtx, b.drain(evt)); err != nil {
				fatal = err
				break loop
			}
		}
	}
	b.ready.Store(false)
	cancel()
	if smDone != nil {
		<-smDone
	}
	b.pipe.Close() // acked messages are answered: no deadline
	b.log.Info("slack: stopped")
	return fatal
}

// authTest runs auth.test (retrying transient failures) and keeps who the
// bot is.
func (b *Bot) authTest(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= b.authTries; attempt++ {
		var res *slackgo.AuthTestResponse
		res, err = b.api.AuthTestContext(ctx)
		if err == nil {
			b.botUserID, b.botID, b.botName, b.teamID, b.teamURL = res.UserID, res.BotID, cmp.Or(res.User, "mnemo"), res.TeamID, res.URL
			return nil
		}
		if code := apiErrorCode(err); code != "" && code != "ratelimited" && code != "internal_error" && code != "fatal_error" {
			return fmt.Errorf("slack: SLACK_BOT_TOKEN was refused by Slack (%s); copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page (install or reinstall the app to the workspace first)", code)
		}
		if sc, ok := errors.AsType[slackgo.StatusCodeError](err); ok && sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusTooManyRequests {
			break // not transient: a wrong SLACK_API_URL
		}
		if attempt == b.authTries {
			break
		}
		wait := b.retryBase << (attempt - 1)
		if rl, ok := errors.AsType[*slackgo.RateLimitedError](err); ok {
			wait = max(wait, min(rl.RetryAfter, b.maxWaitFor))
		}
		b.log.Warn("slack: auth.test failed; retrying", "error", redactErr(err), "attempt", attempt, "wait", wait)
		if clock.Sleep(ctx, wait) != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("slack: cannot check SLACK_BOT_TOKEN: the Slack Web API at %s (SLACK_API_URL) did not answer auth.test: %s", text.RedactURLs(b.cfg.APIURL), redactErr(err))
}

// socketError explains why socketmode stopped for good.
func (b *Bot) socketError(err error) error {
	if err == nil {
		return errors.New("slack: Socket Mode stopped")
	}
	if code := apiErrorCode(err); code != "" {
		return appTokenError(code)
	}
	if sc, ok := errors.AsType[slackgo.StatusCodeError](err); ok {
		return fmt.Errorf("slack: apps.connections.open at %s (SLACK_API_URL) answered HTTP %d; check SLACK_API_URL", text.RedactURLs(b.cfg.APIURL), sc.Code)
	}
	return fmt.Errorf("slack: Socket Mode failed: %w", err)
}

func appTokenError(code string) error {
	return fmt.Errorf("slack: SLACK_APP_TOKEN was refused by Slack (%s); create an app-level token (xapp-…) with the connections:write scope on the app's Basic Information page, and turn on Socket Mode for the app", code)
}

// fatalConnectCodes are apps.connections.open errors that no retry fixes.
var fatalConnectCodes = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true, "token_expired": true,
	"not_allowed_token_type": true, "missing_scope": true, "no_permission": true,
}

// dispatch handles one socketmode event; an error stops Run.
func (b *Bot) dispatch(ctx, taskCtx context.Context, evt socketmode.Event) error {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		b.ready.Store(false)
		b.log.Debug("slack: connecting to Socket Mode")
	case socketmode.EventTypeConnected:
		b.ready.Store(true)
		n := 0
		if c, ok := evt.Data.(*socketmode.ConnectedEvent); ok {
			n = c.ConnectionCount
		}
		b.log.Info("slack: connected to Socket Mode", "connection", n+1)
	case socketmode.EventTypeHello:
		b.ready.Store(true)
	case socketmode.EventTypeConnectionError:
		b.ready.Store(false)
		var cause error
		if ce, ok := evt.Data.(*slackgo.ConnectionErrorEvent); ok {
			cause = ce.ErrorObj
		}
		if code := apiErrorCode(cause); fatalConnectCodes[code] {
			return appTokenError(code)
		}
		if ctx.Err() == nil {
			b.log.Warn("slack: cannot connect to Socket Mode; retrying", "error", redactErr(cause))
		}
	case socketmode.EventTypeInvalidAuth:
		b.ready.Store(false)
	case socketmode.EventTypeErrorBadMessage:
		// Still acknowledge it, or Slack sends it again and again.
		if bad, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
			var env struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
				b.ack(ctx, env.EnvelopeID, nil)
			}
			b.log.Warn("slack: unreadable Socket Mode message", "error", bad.Cause)
		}
	case socketmode.EventTypeEventsAPI:
		return b.receive(ctx, taskCtx, []socketmode.Event{evt}) // acked once journaled
	case socketmode.EventTypeSlashCommand:
		b.onSlashCommand(ctx, taskCtx, evt)
	case socketmode.EventTypeInteractive:
		b.ackRequest(ctx, evt.Request)
		b.onInteractive(ctx, taskCtx, evt)
	default:
		b.ackRequest(ctx, evt.Request)
		b.log.Debug("slack: socket event", "type", string(evt.Type))
	}
	return nil
}

// ackRequest acknowledges req (if it is an envelope) with no payload.
func (b *Bot) ackRequest(ctx context.Context, req *socketmode.Request) {
	if req != nil && req.EnvelopeID != "" {
		b.ack(ctx, req.EnvelopeID, nil)
	}
}

// ack sends the acknowledgement of an envelope, with payload when not nil.
func (b *Bot) ack(ctx context.Context, envelopeID string, payload any) error {
	if err := ctx.Err(); err != nil {
		return err // the socket is closing: an ack would be queued and lost
	}
	err := b.sm.AckCtx(ctx, envelopeID, payload)
	if err != nil && ctx.Err() == nil {
		b.log.Warn("slack: cannot acknowledge an envelope", "envelope_id", envelopeID, "error", err)
	}
	return err
}

// spawn runs fn (a slash command or a button, which must not wait behind
// a conversation's messages) in a goroutine Run waits for
// (pipeline.Pipeline.Spawn). It reports false when ctx ended first.
func (b *Bot) spawn(ctx context.Context, fn func()) bool { return b.pipe.Spawn(ctx, fn) }

// redactErr is err's text without URL credentials ("" for nil).
func redactErr(err error) string {
	if err == nil {
		return ""
	}
	return text.RedactURLs(err.Error())
}

// apiErrorCode is the "error" of a Slack API error answer, or "".
func apiErrorCode(err error) string {
	if e, ok := errors.AsType[slackgo.SlackErrorResponse](err); ok {
		return e.Err
	}
	return ""
}

// transientCodes are API errors that say nothing about the app's setup.
var transientCodes = map[string]bool{
	"ratelimited": true, "internal_error": true, "fatal_error": true, "request_timeout": true,
	"service_unavailable": true, "channel_not_found": true, "thread_not_found": true, "invalid_thread_ts": true,
	"message_not_found": true, "already_reacted": true, "no_reaction": true, "user_not_found": true,
	"not_in_channel": true, "is_archived": true,
}

// refusedForGood reports whether err means the method will keep failing
// for this app (a missing scope, a feature it cannot use), as opposed to a
// failure of this one call.
func refusedForGood(err error) bool {
	code := apiErrorCode(err)
	return code != "" && !transientCodes[code]
}

// logAdapter sends slack-go's log lines (debug only; it is never put in
// debug mode) to slog at debug level.
type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Output(_ int, s string) error {
	l.log.Debug("slack-go: " + strings.TrimSpace(s))
	return nil
}

// validID checks a Slack id (team, user, channel) before it goes into a
// memory user name or a key.
func validID(s string) bool {
	return alnum(s, 24) // so slack-TEAM-USER fits a 64-character memory user name
}

// alnum: 1 to max ASCII letters and digits.
func alnum(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
