package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

func TestIdentify(t *testing.T) {
	hs := start(t, setup{})
	ids := hs.srv.Identifies()
	if len(ids) != 1 || ids[0].Intents != int(Intents) || ids[0].Shard != nil || ids[0].Token != "Bot "+hs.srv.Options().Token {
		t.Errorf("identify %+v", ids)
	}
	if Intents&discordgo.IntentMessageContent == 0 {
		t.Error("no MESSAGE_CONTENT intent")
	}
	// /memory and the Remember this message command were registered globally, once.
	sets, err := hs.srv.WaitCommandSets(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if sets[0].GuildID != "" || len(sets[0].Commands) != 2 || sets[0].Commands[0].Name != "memory" ||
		sets[0].Commands[1].Name != "Remember this" || sets[0].Commands[1].Type != discordgo.MessageApplicationCommand {
		t.Errorf("commands %+v", sets)
	}
	for _, c := range hs.srv.Calls("GET /api/v9/users/@me") {
		if c.Header.Get("Authorization") != "Bot "+hs.srv.Options().Token {
			t.Errorf("authorization %q", c.Header.Get("Authorization"))
		}
	}
}

func TestResumeReplayNotAnsweredTwice(t *testing.T) {
	hs := start(t, setup{})
	hs.dm(alice, "one")
	hs.posts(t, 1)
	hs.srv.ReplayOnResume(5) // Discord sends the last events again on resume
	hs.srv.DropConnections()
	if err := hs.srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	rs := hs.srv.Resumes()
	if len(rs) != 1 || rs[0].Replayed == 0 {
		t.Fatalf("resumes %+v", rs)
	}
	hs.settle(t)
	if n := len(hs.h.Tasks()); n != 2 {
		t.Errorf("%d tasks after the replay; want 2 (one, settle)", n)
	}
	if !strings.Contains(hs.logs.String(), "duplicate message ignored") {
		t.Error("the replay was not seen as a duplicate")
	}
}

func TestDuplicateDispatch(t *testing.T) {
	hs := start(t, setup{})
	seq := hs.srv.Dispatch("MESSAGE_CREATE", discordgo.Message{
		ID: "600000000000000001", ChannelID: dmID, Author: &alice, Content: "once", Timestamp: time.Now(),
	})
	hs.posts(t, 1)
	hs.srv.Redispatch(seq)
	hs.settle(t)
	if n := len(hs.h.Tasks()); n != 2 {
		t.Errorf("%d tasks; the duplicate was answered", n)
	}
}

func TestReconnects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*discordtest.Server)
	}{
		{"op 7", func(s *discordtest.Server) { s.Reconnect() }},
		{"dropped socket", func(s *discordtest.Server) { s.DropConnections() }},
		{"close 4000", func(s *discordtest.Server) { s.CloseConnections(4000, "Unknown error.") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := start(t, setup{})
			tc.fault(hs.srv)
			// Messages sent while the bot is away arrive on resume.
			hs.dm(alice, "while away")
			if err := hs.srv.WaitReady(2, wait); err != nil {
				t.Fatal(err)
			}
			p := hs.posts(t, 1)[0]
			if p.Body.Content != "echo: while away" {
				t.Errorf("post %q", p.Body.Content)
			}
			if rs := hs.srv.Resumes(); len(rs) != 1 || len(hs.srv.Identifies()) != 1 {
				t.Errorf("resumes %+v, identifies %d", rs, len(hs.srv.Identifies()))
			}
			waitFor(t, "Ready", hs.bot.Ready)
			// The session had READY: however short it was, the bot
			// reconnected at once (the backoff is logged before it waits).
			if logs := hs.logs.String(); strings.Contains(logs, "retrying") {
				t.Errorf("a backoff after a session that had READY:\n%s", logs)
			}
		})
	}
}

// A session that never got READY or RESUMED (op 9, then a close, which
// discordgo's Open reports as success) is retried after a growing wait,
// not at once; a session that got READY resets the wait.
func TestSessionWithoutReadyBacksOff(t *testing.T) {
	retry := "cannot connect to the gateway; retrying"
	hs := start(t, setup{noConnect: true, before: func(s *discordtest.Server) {
		s.InvalidNextIdentify(4000, "Unknown error.")
		s.InvalidNextIdentify(4000, "Unknown error.")
	}})
	if err := hs.srv.WaitReady(1, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready", hs.bot.Ready)
	logs := hs.logs.String()
	for _, want := range [][]string{{"attempt=1", "wait=10ms"}, {"attempt=2", "wait=20ms"}} {
		if !logLine(logs, append([]string{retry, errNoGreeting.Error()}, want...)...) {
			t.Errorf("no retry with %q in the logs:\n%s", want, logs)
		}
	}
	if ids := hs.srv.Identifies(); len(ids) != 3 || !ids[0].InvalidSession || !ids[1].InvalidSession || ids[2].SessionID == "" {
		t.Errorf("identifies %+v", ids)
	}
	// The session is ended (4009): the bot comes back at once, its RESUME
	// is refused and its IDENTIFY gets op 9 and a close; that session had
	// no READY, so the bot waits, from retryBase again.
	hs.srv.InvalidNextIdentify(4000, "Unknown error.")
	hs.srv.CloseConnections(4009, "Session timed out.")
	if err := hs.srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready", hs.bot.Ready)
	logs = hs.logs.String()
	if n := strings.Count(logs, "attempt=1 wait=10ms"); n != 2 {
		t.Errorf("%d retries with attempt=1 wait=10ms; want 2 (the wait starts again after a session with READY):\n%s", n, logs)
	}
	if n := strings.Count(logs, retry); n != 3 {
		t.Errorf("%d retries; want 3 (none after the session that had READY):\n%s", n, logs)
	}
	hs.dm(alice, "back")
	if p := hs.posts(t, 1)[0]; p.Body.Content != "echo: back" {
		t.Errorf("post %q", p.Body.Content)
	}
}

func TestInvalidSession(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.InvalidSession(false)
	if err := hs.srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	if n := len(hs.srv.Identifies()); n != 2 {
		t.Errorf("%d identifies", n)
	}
	hs.dm(alice, "after op 9")
	if p := hs.posts(t, 1)[0]; p.Body.Content != "echo: after op 9" {
		t.Errorf("post %q", p.Body.Content)
	}
}

func TestMissedHeartbeatACKs(t *testing.T) {
	hs := start(t, setup{opts: discordtest.Options{HeartbeatInterval: 20 * time.Millisecond}})
	hs.srv.SetHeartbeatACKs(false)
	if err := hs.srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	// The connection that is open now still heartbeats every 20 ms: a
	// stall of 100 ms under load would end it (discordgo closes with 1000,
	// which ends the session and drops what was dispatched to it). Without
	// ACKs it ends for sure; the DM goes to the next one, whose interval is
	// an hour.
	before := hs.srv.SetHeartbeatInterval(time.Hour)
	waitFor(t, "a READY on a connection with the long interval", func() bool {
		for _, e := range hs.srv.Events() {
			if e.Type == "READY" && e.Conn > before {
				return true
			}
		}
		return false
	})
	hs.srv.SetHeartbeatACKs(true)
	hs.dm(alice, "still there?")
	hs.posts(t, 1)
}

func TestRateLimited(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("POST /api/v9/channels/"+dmID+"/messages", discordtest.RateLimited(30*time.Millisecond, false))
	hs.dm(alice, "hi")
	p := hs.posts(t, 1)
	if len(p) != 1 || p[0].Body.Content != "echo: hi" {
		t.Errorf("posts %+v", p)
	}
	calls := hs.srv.Calls("POST /api/v9/channels/" + dmID + "/messages")
	if len(calls) != 2 || calls[0].Status != 429 || calls[1].Status != 200 || calls[1].At.Sub(calls[0].At) < 30*time.Millisecond {
		t.Errorf("calls %+v", calls)
	}
}

func TestClientErrorNotRetried(t *testing.T) {
	hs := start(t, setup{})
	hs.srv.FailNext("POST /api/v9/channels/"+dmID+"/messages", discordtest.HTTPError(403, 50013, "Missing Permissions"))
	hs.dm(alice, "hi")
	hs.settle(t)
	calls := hs.srv.Calls("POST /api/v9/channels/" + dmID + "/messages")
	if len(calls) != 2 || calls[0].Status != 403 { // the refused one, and the settle answer
		t.Errorf("calls %+v", calls)
	}
	if !strings.Contains(hs.logs.String(), "cannot post the reply") || !strings.Contains(hs.logs.String(), "50013") {
		t.Error("the refusal was not logged")
	}
}

func TestFatalCloseCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts discordtest.Options
		fail int
		want []string
	}{
		{"4004", discordtest.Options{}, 4004, []string{"DISCORD_BOT_TOKEN", "4004", "Developer Portal"}},
		{"4014", discordtest.Options{MessageContentAllowed: new(bool)}, 0, []string{"Message Content Intent", "Privileged Gateway Intents", "4014"}},
		{"4011", discordtest.Options{}, 4011, []string{"discord.shardCount"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := start(t, setup{opts: tc.opts, noConnect: true, before: func(s *discordtest.Server) {
				if tc.fail != 0 {
					s.FailNextIdentify(tc.fail, "refused")
				}
			}})
			var err error
			select {
			case err = <-hs.done:
			case <-time.After(wait):
				t.Fatal("Run did not stop")
			}
			if err == nil {
				t.Fatal("Run returned nil")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			hs.done <- err // for the cleanup
		})
	}
}

func TestBadToken(t *testing.T) {
	srv := discordtest.New(t, discordtest.Options{})
	b, err := New(Config{Token: "wrong", APIURL: srv.URL(), Handler: nil})
	if err == nil || !strings.Contains(err.Error(), "Handler") {
		t.Fatalf("New: %v", err)
	}
	hs := start(t, setup{noConnect: true, config: func(c *Config) { c.Token = "wrong" }})
	_ = b
	select {
	case err = <-hs.done:
	case <-time.After(wait):
		t.Fatal("Run did not stop")
	}
	if err == nil || !strings.Contains(err.Error(), "DISCORD_BOT_TOKEN") || !strings.Contains(err.Error(), "401") {
		t.Errorf("Run: %v", err)
	}
	hs.done <- err
	if n := hs.srv.Connections(); n != 0 {
		t.Errorf("%d gateway connections with a refused token", n)
	}
}

func TestSharding(t *testing.T) {
	hs := start(t, setup{opts: discordtest.Options{Shards: 2}, config: func(c *Config) { c.ShardID, c.ShardCount = 1, 2 }})
	ids := hs.srv.Identifies()
	if len(ids) != 1 || ids[0].Shard == nil || *ids[0].Shard != [2]int{1, 2} {
		t.Errorf("identify %+v", ids)
	}
	// Shard 1 leaves /memory to shard 0.
	hs.settleShard(t)
	if sets := hs.srv.CommandSets(); len(sets) != 0 {
		t.Errorf("shard 1 registered commands: %+v", sets)
	}
}

// settleShard waits until a guild message routed to this shard is answered.
func (hs *harness) settleShard(t *testing.T) {
	t.Helper()
	// (guild_id >> 22) % 2 == 1 for this id.
	const g = "4194304"
	hs.srv.AddChannel(discordgo.Channel{ID: "4194305", GuildID: g, Type: discordgo.ChannelTypeGuildText})
	bot := hs.srv.Options().BotID
	hs.srv.MessageCreate(discordgo.Message{ChannelID: "4194305", GuildID: g, Author: &alice, Content: "<@" + bot + "> hi",
		Mentions: []*discordgo.User{{ID: bot}}})
	hs.posts(t, 1)
}

func TestGuildCommands(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.GuildIDs = []string{guildID, "300000000000000099"} }})
	sets, err := hs.srv.WaitCommandSets(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	if sets[0].GuildID != guildID || sets[1].GuildID != "300000000000000099" || sets[0].ApplicationID != hs.srv.Options().ApplicationID {
		t.Errorf("sets %+v", sets)
	}
	// Registered once, not again after a reconnect.
	hs.srv.Reconnect()
	if err := hs.srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	hs.settle(t)
	if n := len(hs.srv.CommandSets()); n != 2 {
		t.Errorf("%d command sets", n)
	}
}

func TestCommandRegistrationFails(t *testing.T) {
	hs := start(t, setup{before: func(s *discordtest.Server) {
		s.FailNext("PUT /api/v9/applications/", discordtest.HTTPError(403, 50001, "Missing Access"))
	}})
	waitFor(t, "the error log", func() bool { return strings.Contains(hs.logs.String(), "cannot register /memory") })
	hs.dm(alice, "chat still works")
	hs.posts(t, 1)
}

func TestShutdownFinishesRunningTask(t *testing.T) {
	hs := start(t, setup{})
	release := hs.h.Hold()
	hs.dm(alice, "slow question")
	hs.h.WaitTasks(t, 1, wait)
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	// The gateway is closed cleanly (1000) before the task ends.
	waitFor(t, "the gateway to close", func() bool { return hs.srv.OpenConnections() == 0 })
	if hs.bot.Ready() {
		t.Error("Ready while stopping")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) before the task finished", err)
	default:
	}
	release()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if p := hs.srv.Posts(); len(p) != 1 || p[0].Body.Content != "echo: slow question" {
		t.Errorf("posts %+v", p)
	}
}

func TestRunTwice(t *testing.T) {
	hs := start(t, setup{})
	if err := hs.bot.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("second Run: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	h := func(c Config) Config { c.Handler = bottest.NewHandler(); return c }
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{h(Config{}), "DISCORD_BOT_TOKEN is not set"},
		{h(Config{Token: "a b"}), "spaces"},
		{h(Config{Token: "t", APIURL: "ftp://x"}), "DISCORD_API_URL"},
		{h(Config{Token: "t", APIURL: "http://user:secret@[::1"}), "DISCORD_API_URL"},
		{h(Config{Token: "t", ChannelMemory: "some"}), "discord.channelMemory"},
		{h(Config{Token: "t", ShardID: 2, ShardCount: 2}), "discord.shardID"},
		{h(Config{Token: "t", GuildIDs: []string{"x"}}), "discord.guildIDs"},
		{h(Config{Token: "t", Identities: map[string]string{"discord:abc": "a"}}), "discord:USER_ID"},
		{h(Config{Token: "t", Identities: map[string]string{"discord:1": ".bad"}}), "not a valid memory user name"},
		{Config{Token: "t"}, "Handler"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v; want %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
	b, err := New(h(Config{Token: "Bot tok", APIURL: "http://127.0.0.1:1/x", Identities: map[string]string{"slack:T/U": "a"}}))
	if err != nil || b.cfg.Token != "tok" || b.apiURL.Path != "/x/" || b.cfg.ShardCount != 1 {
		t.Errorf("New: %v %+v", err, b)
	}
}

func TestTransientIdentifyCloseRetried(t *testing.T) {
	hs := start(t, setup{noConnect: true, before: func(s *discordtest.Server) { s.FailNextIdentify(4000, "Unknown error.") }})
	if err := hs.srv.WaitReady(1, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready", hs.bot.Ready)
	if n := len(hs.srv.Identifies()); n != 2 {
		t.Errorf("%d identifies; want the refused one and the retry", n)
	}
	if !strings.Contains(hs.logs.String(), "cannot connect to the gateway; retrying") {
		t.Error("the retry was not logged")
	}
}

func TestTokenCheckErrors(t *testing.T) {
	t.Run("wrong address", func(t *testing.T) {
		hs := start(t, setup{noConnect: true, config: func(c *Config) { c.APIURL += "nothing-here/" }})
		err := <-hs.done
		if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "DISCORD_API_URL") {
			t.Errorf("Run: %v", err)
		}
		hs.done <- err
	})
	t.Run("server error retried", func(t *testing.T) {
		srv := discordtest.New(t, discordtest.Options{})
		srv.FailNext("GET /api/v9/users/@me", discordtest.HTTPError(500, 0, "Internal Server Error"))
		hs := start(t, setup{noConnect: true, config: func(c *Config) { c.APIURL = srv.URL() }})
		if err := srv.WaitReady(1, wait); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Calls("GET /api/v9/users/@me")); n != 2 {
			t.Errorf("%d calls", n)
		}
		_ = hs
	})
}

// A gateway that accepts the connection and never says HELLO: at shutdown
// Run does not hang in discordgo's Open.
func TestShutdownDuringHungHandshake(t *testing.T) {
	up := websocket.Upgrader{}
	held := make(chan struct{})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v9/users/@me":
			fmt.Fprint(w, `{"id":"1000000000000000001","username":"mnemo","bot":true}`)
		case "/api/v9/gateway":
			fmt.Fprintf(w, `{"url":"ws://%s/gateway"}`, srv.Listener.Addr())
		case "/gateway/":
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			close(held)
			c.ReadMessage() // until the client's side is closed
			c.Close()
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	b, err := New(Config{Token: "tok", APIURL: srv.URL, Handler: bottest.NewHandler()})
	if err != nil {
		t.Fatal(err)
	}
	b.killAfter = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	<-held
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Run hung in the handshake")
	}
}

func TestTokenRevokedWhileRunning(t *testing.T) {
	hs := start(t, setup{noConnect: true})
	if err := hs.srv.WaitReady(1, wait); err != nil {
		t.Fatal(err)
	}
	hs.srv.FailNextN("GET /api/v9/users/@me", 5, discordtest.HTTPError(401, 0, "401: Unauthorized"))
	hs.srv.DropConnections()
	var err error
	select {
	case err = <-hs.done:
	case <-time.After(wait):
		t.Fatal("Run went on with a revoked token")
	}
	if err == nil || !strings.Contains(err.Error(), "DISCORD_BOT_TOKEN was refused") {
		t.Errorf("Run: %v", err)
	}
	hs.done <- err
}
