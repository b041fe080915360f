package discordtest_test

import (
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

const wait = 10 * time.Second

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rewriteTransport sends discord.com requests to the fake.
type rewriteTransport struct {
	base   http.RoundTripper
	target *url.URL
}

func (r rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == "discord.com" {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host, req.Host = r.target.Scheme, r.target.Host, r.target.Host
	}
	return r.base.RoundTrip(req)
}

// client is a real discordgo session pointed at the fake, recording what its
// handlers see.
type client struct {
	t  *testing.T
	dg *discordgo.Session

	mu           sync.Mutex
	changed      chan struct{}
	messages     []*discordgo.MessageCreate
	interactions []*discordgo.InteractionCreate
	readies      []*discordgo.Ready
	resumed      int
	connects     int
	disconnects  int
	seqs         []int64 // "s" of every dispatch, in order
}

const allIntents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages |
	discordgo.IntentMessageContent

// newClient makes a session for srv (token: the server's unless given) and
// closes it when the test ends. It does not open it.
func newClient(t *testing.T, srv *discordtest.Server, token string) *client {
	t.Helper()
	if token == "" {
		token = srv.Options().Token
	}
	dg, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL())
	tr := &http.Transport{}
	dg.Client = &http.Client{Transport: rewriteTransport{base: tr, target: target}, Timeout: wait}
	dg.Identify.Intents = allIntents
	dg.SyncEvents = true
	dg.LogLevel = -1
	c := &client{t: t, dg: dg, changed: make(chan struct{})}
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageCreate) {
		c.record(func() { c.messages = append(c.messages, e) })
	})
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.InteractionCreate) {
		c.record(func() { c.interactions = append(c.interactions, e) })
	})
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.Ready) {
		c.record(func() { c.readies = append(c.readies, e) })
	})
	dg.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) { c.record(func() { c.resumed++ }) })
	dg.AddHandler(func(_ *discordgo.Session, _ *discordgo.Connect) { c.record(func() { c.connects++ }) })
	dg.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) { c.record(func() { c.disconnects++ }) })
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		c.record(func() { c.seqs = append(c.seqs, e.Sequence) })
	})
	t.Cleanup(func() {
		// discordgo's heartbeat goroutine reconnects when it finds the socket
		// closed under it, even after Close; stop that first.
		dg.ShouldReconnectOnError = false
		_ = dg.Close()
		tr.CloseIdleConnections()
	})
	return c
}

// seeded starts a server that knows the test's user and channels.
func seeded(t *testing.T, opts discordtest.Options) *discordtest.Server {
	t.Helper()
	srv := discordtest.New(t, opts)
	seed(srv)
	return srv
}

// connect starts a seeded server and opens a client on it.
func connect(t *testing.T, opts discordtest.Options) (*discordtest.Server, *client) {
	t.Helper()
	srv := seeded(t, opts)
	return srv, open(t, srv)
}

// unopened starts a seeded server and makes a client for it that has not
// opened the gateway (REST calls work without it).
func unopened(t *testing.T, opts discordtest.Options) (*discordtest.Server, *client) {
	t.Helper()
	srv := seeded(t, opts)
	return srv, newClient(t, srv, "")
}

// open opens a client and waits for its first heartbeat. Until discordgo's
// heartbeat goroutine has sent it, a connection that dies makes that goroutine
// start a second, concurrent reconnect (it finds the socket closed under it).
func open(t *testing.T, srv *discordtest.Server) *client {
	t.Helper()
	c := newClient(t, srv, "")
	before := srv.Heartbeats()
	c.mustOpen()
	if err := srv.WaitHeartbeats(before+1, wait); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *client) record(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor waits until cond (called with c.mu held) holds.
func (c *client) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			c.t.Fatalf("client: timed out waiting for %s", what)
		}
	}
}

// waitList waits until *list (one of c's, under c.mu) has n entries and
// returns a copy of it.
func waitList[T any](c *client, what string, list *[]T, n int) []T {
	c.t.Helper()
	c.waitFor(what, func() bool { return len(*list) >= n })
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(*list)
}

func (c *client) waitMessages(n int) []*discordgo.MessageCreate {
	c.t.Helper()
	return waitList(c, "messages", &c.messages, n)
}

func (c *client) waitInteractions(n int) []*discordgo.InteractionCreate {
	c.t.Helper()
	return waitList(c, "interactions", &c.interactions, n)
}

func (c *client) waitReadies(n int) []*discordgo.Ready {
	c.t.Helper()
	return waitList(c, "readies", &c.readies, n)
}

func (c *client) waitResumed(n int) {
	c.t.Helper()
	c.waitFor("resumed", func() bool { return c.resumed >= n })
}

// wantContents waits for len(want) messages and checks that they are all
// the client got, in order.
func (c *client) wantContents(want ...string) {
	c.t.Helper()
	c.waitMessages(len(want))
	c.mu.Lock()
	var got []string
	for _, m := range c.messages {
		got = append(got, m.Content)
	}
	c.mu.Unlock()
	if !slices.Equal(got, want) {
		c.t.Fatalf("contents %q, want %q", got, want)
	}
}

// wantFirst waits for the client's first message and checks its content.
func (c *client) wantFirst(content string) {
	c.t.Helper()
	if got := c.waitMessages(1)[0]; got.Content != content {
		c.t.Fatalf("first message %q, want %q", got.Content, content)
	}
}

// mustOpen opens the client's session.
func (c *client) mustOpen() {
	c.t.Helper()
	if err := c.dg.Open(); err != nil {
		c.t.Fatalf("Open: %v", err)
	}
}

func (c *client) counts() (connects, disconnects int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connects, c.disconnects
}
