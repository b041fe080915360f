package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/fake"
	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// defaultAbandonAfter is how long close waits for an adapter that did not
// stop cleanly (the run failed or timed out) to return: it answers the
// messages it took, which can wait on a slow model.
const defaultAbandonAfter = 3 * time.Second

// maxReplyProblems is how many reply problems are listed; more are counted.
const maxReplyProblems = 20

// discordUserID is the Discord user id of the i-th simulated user, and
// dmChannelID the id of its DM channel with the bot.
func discordUserID(i int) string { return fmt.Sprintf("5%018d", i+1) }
func dmChannelID(i int) string   { return fmt.Sprintf("6%018d", i+1) }

func discordAuthor(i int) *discordgo.User {
	return &discordgo.User{ID: discordUserID(i), Username: fmt.Sprintf("load%04d", i+1), GlobalName: displayName(i), Discriminator: "0"}
}

// discordRun is the Discord adapter, as cmd/mnemo wires it (the same
// agent as Handler, an identity per account, the HTTP client it would make
// itself), and a fake Discord (bots/discord/discordtest) on 127.0.0.1.
// Each user writes in its own DM channel; the account is linked (an
// identity, as in config) to the user's seeded memory, so the Thinker
// reads the same files as in the direct run.
type discordRun struct {
	hooks    hooks
	messages int
	tb       *fakeHost // owns the fake's cleanup
	srv      *discordtest.Server
	bot      *discord.Bot
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run returned
	runErr   error         // what it returned
	stopped  bool

	transport *http.Transport // the adapter's HTTP client's
	dials     atomic.Int64
	channels  map[string]int  // DM channel id → user
	replies   []chan bool     // by user: a reply post was answered (true: accepted)
	refused   atomic.Int64    // reply posts Discord refused
	sent      []string        // message ids by u*messages+m
	driverCtx context.Context // carries the fake Discord's label, for the driver's workers
}

// startDiscord starts the fake Discord and the adapter, and returns once
// the adapter is connected and has registered /memory, so that nothing of
// the start-up is measured.
func startDiscord(ctx context.Context, cfg config, ag *agent.Agent, log *slog.Logger) (*discordRun, error) {
	r := &discordRun{
		hooks:     cfg.hooks,
		messages:  cfg.messages,
		tb:        &fakeHost{log: log},
		done:      make(chan struct{}),
		channels:  make(map[string]int, cfg.users),
		replies:   make([]chan bool, cfg.users),
		sent:      make([]string, cfg.users*cfg.messages),
		driverCtx: labelled(context.Background(), sideFakeDiscord),
	}
	var err error
	// The fake's goroutines (its listener, every connection, the gateway's
	// writers) carry the label: its CPU is told apart from mnemo's.
	asSide(sideFakeDiscord, func() {
		err = r.tb.start(func(tb fake.T) { r.srv = discordtest.New(tb, discordtest.Options{}) })
	})
	if err != nil {
		return nil, fmt.Errorf("fake Discord: %w", err)
	}
	identities := make(map[string]string, cfg.users)
	for u := range cfg.users {
		r.srv.AddChannel(discordgo.Channel{ID: dmChannelID(u), Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{discordAuthor(u)}})
		identities["discord:"+discordUserID(u)] = userName(u)
		r.channels[dmChannelID(u)] = u
		r.replies[u] = make(chan bool, cfg.messages+1)
	}

	// The HTTP client the adapter makes for itself, counting its
	// connections and seeing which reply posts were answered.
	client := discord.DefaultHTTPClient()
	r.transport = client.Transport.(*http.Transport)
	dial := r.transport.DialContext
	r.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.dials.Add(1)
		return dial(ctx, network, addr)
	}
	dc := discord.Config{
		Token: r.srv.Options().Token, APIURL: r.srv.URL(), Identities: identities,
		Handler: ag, Logger: log.With("adapter", "discord"),
		HTTPClient: &http.Client{Timeout: client.Timeout, Transport: &replyObserver{base: r.transport, r: r}},
	}
	if cfg.hooks.discordConfig != nil {
		cfg.hooks.discordConfig(r.srv, &dc)
	}
	if r.bot, err = discord.New(dc); err != nil { // only a wiring mistake
		r.close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() {
		r.runErr = r.bot.Run(runCtx)
		close(r.done)
	}()
	if err := r.waitReady(ctx); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// waitReady waits until the adapter is READY and has registered /memory.
func (r *discordRun) waitReady(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if len(r.srv.CommandSets()) > 0 && r.bot.Ready() {
			return nil
		}
		select {
		case <-r.done:
			r.stopped = true
			return fmt.Errorf("discord adapter stopped before it was ready: %v", r.runErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// turn sends message m of user u as a DM and waits until the adapter's
// reply post is answered. It returns false when ctx ends, or the adapter
// stops, first.
func (r *discordRun) turn(ctx context.Context, _ *driven, u, m int) bool {
	// The driver's worker is the fake Discord's client here: sending the
	// message is the fake's work.
	pprof.SetGoroutineLabels(r.driverCtx)
	msg := r.srv.MessageCreate(discordgo.Message{ChannelID: dmChannelID(u), Content: messageText(m, r.messages), Author: discordAuthor(u)})
	r.sent[u*r.messages+m] = msg.ID
	select {
	case <-r.replies[u]:
		return true
	case <-ctx.Done():
		return false
	case <-r.done: // an error Run returned; stop tells it
		return false
	}
}

// replyObserver sees the adapter's REST calls go by and tells the driver
// when a reply post in a DM channel was answered: it only looks at the
// method, the path and the status (the checks that count are matchReplies',
// on the fake's records). A post Discord refuses (not 429, which discordgo
// retries) ends the wait too, so that the run goes on and fails at the
// end.
type replyObserver struct {
	base http.RoundTripper
	r    *discordRun
}

func (o *replyObserver) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.base.RoundTrip(req)
	if req.Method != http.MethodPost {
		return resp, err
	}
	rest, ok := strings.CutPrefix(req.URL.Path, "/api/v9/channels/")
	if !ok {
		return resp, err
	}
	ch, ok := strings.CutSuffix(rest, "/messages")
	u, known := o.r.channels[ch]
	if !ok || !known {
		return resp, err
	}
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		return resp, err // discordgo waits and sends it again
	}
	accepted := err == nil && resp.StatusCode/100 == 2
	if !accepted {
		o.r.refused.Add(1)
	}
	select {
	case o.r.replies[u] <- accepted:
	default: // more posts than messages: matchReplies tells
	}
	return resp, err
}

// stop stops the adapter: Run closes the gateway and returns once every
// message it took is answered.
func (r *discordRun) stop() error {
	r.stopped = true
	r.cancel()
	<-r.done
	r.transport.CloseIdleConnections()
	return r.runErr
}

// close stops the adapter if it still runs, waiting at most abandonAfter
// (defaultAbandonAfter unless a test's hooks say) for it, and closes the
// fake Discord.
func (r *discordRun) close() {
	if r.cancel != nil {
		r.cancel()
		if !r.stopped {
			r.stopped = true
			select {
			case <-r.done:
			case <-time.After(cmp.Or(r.hooks.abandonAfter, defaultAbandonAfter)):
			}
		}
		r.transport.CloseIdleConnections()
	}
	r.tb.cleanup()
}

// results counts what the fake Discord saw and checks the adapter's posts
// against the messages sent (see matchReplies). It returns the figures,
// the replies that are not the model's answer (an apology, the busy reply),
// those that quote the user's facts/user.md, and the problems.
func (r *discordRun) results() (f *DiscordFigures, failed, quoting int64, problems []string) {
	if r.hooks.discordDriven != nil {
		r.hooks.discordDriven(r.srv)
	}
	f = &DiscordFigures{
		Typings: len(r.srv.Typings()), RESTCalls: len(r.srv.Calls("")), RESTConnections: r.dials.Load(),
		GatewayConns: r.srv.Connections(), GatewayEvents: len(r.srv.Events()), PostFailures: r.refused.Load(),
	}
	for _, id := range r.sent {
		if id != "" {
			f.Messages++
		}
	}
	f.Replies, failed, quoting, problems = matchReplies(r.sent, r.messages, r.srv.Posts())
	if f.PostFailures > 0 {
		problems = append(problems, fmt.Sprintf("%d reply post(s) refused by Discord", f.PostFailures))
	}
	if err := r.tb.err(); err != nil {
		problems = append(problems, "fake Discord: "+err.Error())
	}
	return f, failed, quoting, problems
}

// releaseFake closes the fake Discord and returns by how much that shrank
// the live heap: what its records held (every REST call with its body,
// every post, gateway event and channel message, kept for the checks).
func (r *discordRun) releaseFake() int64 {
	before := liveHeap()
	r.tb.cleanup()
	r.srv = nil
	// The server's connection goroutines end just after Close returns, and
	// one still running keeps all of it: measure a few times.
	after := before
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		after = min(after, liveHeap())
	}
	return before - after
}

// liveHeap is the live heap after two GCs, in bytes: what only a
// finalizer or cleanup (of a closed connection, say) still references goes
// in the second.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// matchReplies matches the bot's posts to the messages sent (ids by
// u*messages+m): every message must have exactly one reply (a post replying
// to it, in its DM channel), and every post must be such a reply. It
// returns the messages replied to, the replies that are not one of the
// fake model's answers, the replies that quote the user's facts/user.md,
// and the problems (at most maxReplyProblems listed).
func matchReplies(sent []string, messages int, posts []discordtest.Post) (replied int, failed, quoting int64, problems []string) {
	index := make(map[string]int, len(sent))
	for i, id := range sent {
		if id != "" {
			index[id] = i
		}
	}
	var all []string
	add := func(format string, args ...any) { all = append(all, fmt.Sprintf(format, args...)) }
	count := make([]int, len(sent))
	for _, p := range posts {
		ref := ""
		if p.Body.Reference != nil {
			ref = p.Body.Reference.MessageID
		}
		i, ok := index[ref]
		switch {
		case ref == "":
			add("post %s in channel %s replies to no message: %q", p.Message.ID, p.ChannelID, clip(p.Message.Content))
			continue
		case !ok:
			add("post %s in channel %s replies to %s, not a message of the run", p.Message.ID, p.ChannelID, ref)
			continue
		}
		u, m := i/messages, i%messages
		if p.ChannelID != dmChannelID(u) {
			add("the reply to message %d of %s went to channel %s, not its DM channel %s", m+1, userName(u), p.ChannelID, dmChannelID(u))
		}
		if count[i]++; count[i] > 1 {
			continue // counted below
		}
		replied++
		if !modelAnswer(p.Message.Content) {
			failed++
		}
		if quotes(p.Message.Content, u) {
			quoting++
		}
	}
	for i, n := range count {
		u, m := i/messages, i%messages
		switch {
		case sent[i] == "": // never sent
		case n == 0:
			add("message %d of %s (%s) got no reply", m+1, userName(u), sent[i])
		case n > 1:
			add("message %d of %s (%s) got %d replies, want one", m+1, userName(u), sent[i], n)
		}
	}
	if len(all) > maxReplyProblems {
		all = append(all[:maxReplyProblems], fmt.Sprintf("… and %d more problems with the replies", len(all)-maxReplyProblems))
	}
	return replied, failed, quoting, all
}

// clip shortens a text for a problem line.
func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// fakeHost is the fake.T the fakes (discordtest, slacktest) get outside a
// test: Cleanup keeps the functions for cleanup, Fatalf (a fake could not
// start) logs the error and ends the function given to start with it.
type fakeHost struct {
	log *slog.Logger

	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

// fatal is how Fatalf leaves the function given to start.
type fatal struct{}

func (*fakeHost) Helper() {}

func (t *fakeHost) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *fakeHost) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.log.Error(msg)
	t.mu.Lock()
	t.errs = append(t.errs, msg)
	t.mu.Unlock()
	panic(fatal{})
}

// start calls f with t and returns the error f reported, a Fatalf ending
// f early.
func (t *fakeHost) start(f func(fake.T)) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(fatal); !ok {
				panic(v)
			}
			err = t.err()
		}
	}()
	f(t)
	return t.err()
}

// err joins the errors reported so far, nil if none.
func (t *fakeHost) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(t.errs, "; "))
}

// cleanup runs the cleanup functions, last registered first.
func (t *fakeHost) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
