package discordtest_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

const (
	guildID   = "900000000000000001"
	channelID = "900000000000000010"
	dmID      = "900000000000000020"
	userID    = "900000000000000100"
)

func seed(srv *discordtest.Server) {
	srv.AddUser(discordgo.User{ID: userID, Username: "alice", GlobalName: "Alice"})
	srv.AddChannel(discordgo.Channel{ID: channelID, GuildID: guildID, Name: "general", Type: discordgo.ChannelTypeGuildText})
	srv.AddChannel(discordgo.Channel{ID: dmID, Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{{ID: userID}}})
}

func TestReadyAndMessageCreate(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})

	ready := c.waitReadies(1)[0]
	if ready.Version != 9 || ready.User == nil || ready.User.ID != discordtest.DefaultBotID || !ready.User.Bot ||
		ready.SessionID == "" || ready.Application == nil || ready.Application.ID != discordtest.DefaultBotID ||
		ready.Shard == nil || *ready.Shard != [2]int{0, 1} {
		t.Fatalf("ready %+v", ready)
	}
	ids := srv.Identifies()
	if len(ids) != 1 || ids[0].Token != "Bot test-token" || ids[0].Intents != int(allIntents) ||
		ids[0].Shard != nil || ids[0].SessionID != ready.SessionID || ids[0].Conn != 1 {
		t.Fatalf("identifies %+v", ids)
	}
	if srv.Connections() != 1 || srv.OpenConnections() != 1 {
		t.Fatalf("connections %d open %d", srv.Connections(), srv.OpenConnections())
	}

	sent := srv.MessageCreate(discordgo.Message{ChannelID: channelID, Content: "hello <@" + discordtest.DefaultBotID + ">",
		Author: &discordgo.User{ID: userID}})
	got := c.waitMessages(1)[0]
	if got.ID != sent.ID || got.Content != sent.Content || got.GuildID != guildID || got.ChannelID != channelID ||
		got.Author == nil || got.Author.Username != "alice" || !got.Timestamp.Equal(sent.Timestamp) {
		t.Fatalf("got %+v, sent %+v", got.Message, sent)
	}
	if !discordtest.SnowflakeTime(sent.ID).Equal(sent.Timestamp.Truncate(time.Millisecond)) {
		t.Fatalf("id %s does not encode %v", sent.ID, sent.Timestamp)
	}
	evs, err := srv.WaitEvents(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Type != "READY" || evs[0].S != 1 || evs[1].Type != "MESSAGE_CREATE" || evs[1].S != 2 || evs[1].Replayed {
		t.Fatalf("events %+v", evs)
	}
	var wire map[string]any
	if err := json.Unmarshal(evs[1].Data, &wire); err != nil {
		t.Fatal(err)
	}
	ts, _ := wire["timestamp"].(string)
	if !strings.HasSuffix(ts, "+00:00") || len(ts) != len("2024-01-02T03:04:05.678000+00:00") {
		t.Fatalf("timestamp %q", ts)
	}
	if _, isList := wire["mentions"].([]any); !isList {
		t.Fatalf("mentions %v", wire["mentions"])
	}
	if hist := srv.Messages(channelID); len(hist) != 1 || hist[0].ID != sent.ID {
		t.Fatalf("history %+v", hist)
	}
}

func msg(ch, content string) discordgo.Message {
	return discordgo.Message{ChannelID: ch, Content: content, Author: &discordgo.User{ID: userID}}
}

func TestPendingEventsGoToFirstSession(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{})
	srv.MessageCreate(msg(channelID, "early"))
	if seq := srv.Dispatch("MESSAGE_CREATE", discordgo.Message{ID: "42", ChannelID: dmID, Content: "raw",
		Author: &discordgo.User{ID: userID}}); seq != 0 {
		t.Fatalf("queued dispatch returned %d", seq)
	}
	c := open(t, srv)
	c.wantContents("early", "raw")
	evs, _ := srv.WaitEvents(3, wait)
	if evs[0].Type != "READY" || evs[1].S != 2 || evs[2].S != 3 {
		t.Fatalf("events %+v", evs)
	}
}

func TestReconnectOp7ResumesWithoutLoss(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	sessionID := c.waitReadies(1)[0].SessionID
	srv.MessageCreate(msg(channelID, "one"))
	c.waitMessages(1)

	srv.Reconnect()
	srv.MessageCreate(msg(channelID, "two")) // waits in the session for the RESUME
	if err := srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	c.waitResumed(1)
	srv.MessageCreate(msg(channelID, "three"))
	c.wantContents("one", "two", "three")
	disc, err := srv.WaitDisconnects(1, wait)
	if err != nil || disc[0].Code != 1012 || disc[0].Conn != 1 || disc[0].ServerCode != 0 {
		t.Fatalf("disconnects %+v, %v", disc, err)
	}
	res := srv.Resumes()
	if len(res) != 1 || !res[0].Accepted || res[0].SessionID != sessionID || res[0].ClientSeq != 2 ||
		res[0].Replayed != 1 || res[0].Conn != 2 {
		t.Fatalf("resumes %+v", res)
	}
	if len(srv.Identifies()) != 1 || srv.Connections() != 2 {
		t.Fatalf("identifies %d connections %d", len(srv.Identifies()), srv.Connections())
	}
	if conn, _ := c.counts(); conn != 2 {
		t.Fatalf("connects %d", conn)
	}
	sess := srv.Sessions()
	if len(sess) != 1 || !sess[0].Live || sess[0].Conn != 2 || sess[0].Seq != 5 {
		t.Fatalf("sessions %+v", sess)
	}
}

func TestInvalidSessionReidentifies(t *testing.T) {
	t.Parallel()
	for _, resumable := range []bool{false, true} {
		srv, c := connect(t, discordtest.Options{})
		first := c.waitReadies(1)[0].SessionID

		srv.InvalidSession(resumable)
		second := c.waitReadies(2)[1].SessionID
		if second == first || second == "" {
			t.Fatalf("resumable=%v: session %q after %q", resumable, second, first)
		}
		ids := srv.Identifies()
		if len(ids) != 2 || ids[1].Conn != 1 || srv.Connections() != 1 {
			t.Fatalf("resumable=%v: identifies %+v, %d connections", resumable, ids, srv.Connections())
		}
		sess := srv.Sessions()
		if len(sess) != 2 || sess[0].Live || !sess[1].Live {
			t.Fatalf("resumable=%v: sessions %+v", resumable, sess)
		}
		srv.MessageCreate(msg(channelID, "after"))
		c.wantFirst("after")
	}
}

func TestDroppedConnectionResumes(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	srv.MessageCreate(msg(channelID, "before"))
	c.waitMessages(1)

	srv.DropConnections()
	srv.MessageCreate(msg(channelID, "while down"))
	srv.MessageCreate(msg(dmID, "dm while down"))
	c.waitResumed(1)
	c.wantContents("before", "while down", "dm while down")
	disc := srv.Disconnects()
	if len(disc) != 1 || !disc[0].Dropped || disc[0].Code != 0 {
		t.Fatalf("disconnects %+v", disc)
	}
	res := srv.Resumes()
	if len(res) != 1 || !res[0].Accepted || res[0].Replayed != 2 {
		t.Fatalf("resumes %+v", res)
	}
	var replayed int
	for _, e := range srv.Events() {
		if e.Replayed {
			replayed++
		}
	}
	if replayed != 2 {
		t.Fatalf("replayed events %d", replayed)
	}
}

func TestCloseConnectionsResumable(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	c.waitReadies(1)
	srv.CloseConnections(4000, "Unknown error.")
	srv.MessageCreate(msg(channelID, "kept"))
	c.waitResumed(1)
	c.wantFirst("kept")
	disc := srv.Disconnects()
	if len(disc) != 1 || disc[0].ServerCode != 4000 {
		t.Fatalf("disconnects %+v", disc)
	}
}

func TestCloseConnectionsNotResumable(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	c.waitReadies(1)
	// discordgo does not look at close codes: it tries to RESUME, gets op 9
	// because 4009 ended the session, and sends IDENTIFY on the same socket.
	srv.CloseConnections(4009, "Session timed out.")
	c.waitReadies(2)
	res := srv.Resumes()
	if len(res) != 1 || res[0].Accepted || len(srv.Identifies()) != 2 || srv.Identifies()[1].Conn != 2 {
		t.Fatalf("resumes %+v identifies %+v", res, srv.Identifies())
	}
}

func TestHeartbeatACKsOffClientReconnects(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{HeartbeatInterval: 100 * time.Millisecond})
	c.waitReadies(1)
	srv.SetHeartbeatACKs(false)
	// discordgo gives up after five intervals without an ACK, closes with
	// 1000 (which ends the session), fails to RESUME and identifies again.
	if err := srv.WaitReady(2, wait); err != nil {
		t.Fatal(err)
	}
	// The connection open now heartbeats every 100 ms too: with ACKs back
	// on, a stall of 500 ms under load would still end it, with the
	// session and what was dispatched to it ("back" was lost so, in a
	// make test). Without ACKs it ends for sure; "back" goes to a later
	// connection, whose interval is an hour.
	before := srv.SetHeartbeatInterval(time.Hour)
	for n := 1; ; n++ {
		evs, err := srv.WaitEvents(n, wait)
		if err != nil {
			t.Fatal(err)
		}
		if e := evs[n-1]; e.Type == "READY" && e.Conn > before {
			break
		}
	}
	srv.SetHeartbeatACKs(true)
	c.waitReadies(2)
	disc := srv.Disconnects()
	if len(disc) < 1 || disc[0].Code != 1000 || disc[0].Dropped || disc[0].ServerCode != 0 {
		t.Fatalf("disconnects %+v", disc)
	}
	if res := srv.Resumes(); len(res) < 1 || res[0].Accepted {
		t.Fatalf("resumes %+v", res)
	}
	if srv.Heartbeats() < 2 {
		t.Fatalf("heartbeats %d", srv.Heartbeats())
	}
	srv.MessageCreate(msg(channelID, "back"))
	c.waitFor("back", func() bool {
		for _, m := range c.messages {
			if m.Content == "back" {
				return true
			}
		}
		return false
	})
}

func TestOpenFailsOnFatalCloseCodes(t *testing.T) {
	t.Parallel()
	t.Run("4004", func(t *testing.T) {
		t.Parallel()
		srv := discordtest.New(t, discordtest.Options{})
		c := newClient(t, srv, "wrong-token")
		err := c.dg.Open()
		// Open returns gorilla's *websocket.CloseError as it is.
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4004 || ce.Text != "Authentication failed." ||
			err.Error() != "websocket: close 4004: Authentication failed." {
			t.Fatalf("Open: %T %v", err, err)
		}
		if ids := srv.Identifies(); len(ids) != 1 || ids[0].CloseCode != 4004 || ids[0].SessionID != "" {
			t.Fatalf("identifies %+v", ids)
		}
		if _, err := srv.WaitDisconnects(1, wait); err != nil {
			t.Fatal(err)
		}
		if srv.OpenConnections() != 0 {
			t.Fatalf("open connections %d", srv.OpenConnections())
		}
	})
	t.Run("4014", func(t *testing.T) {
		t.Parallel()
		no := false
		srv := discordtest.New(t, discordtest.Options{MessageContentAllowed: &no})
		c := newClient(t, srv, "")
		err := c.dg.Open()
		if err == nil || !strings.Contains(err.Error(), "4014") || !strings.Contains(err.Error(), "Disallowed intent(s).") {
			t.Fatalf("Open: %v", err)
		}
		// Without the privileged intent the same portal settings work.
		c.dg.Identify.Intents = discordgo.IntentsGuildMessages
		c.mustOpen()
		c.waitReadies(1)
	})
	t.Run("FailNextIdentify", func(t *testing.T) {
		t.Parallel()
		srv := discordtest.New(t, discordtest.Options{})
		srv.FailNextIdentify(4004, "Authentication failed.")
		c := newClient(t, srv, "")
		if err := c.dg.Open(); err == nil || !strings.Contains(err.Error(), "4004") {
			t.Fatalf("Open: %v", err)
		}
		c.mustOpen()
		c.waitReadies(1)
	})
}

func TestShardRouting(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{Shards: 2})
	guild0 := strconv.FormatUint(uint64(1000)<<22|77, 10) // (id >> 22) % 2 == 0
	guild1 := strconv.FormatUint(uint64(1001)<<22|77, 10)
	if discordtest.ShardFor(guild0, 2) != 0 || discordtest.ShardFor(guild1, 2) != 1 || discordtest.ShardFor("", 2) != 0 {
		t.Fatal("ShardFor")
	}
	srv.AddChannel(discordgo.Channel{ID: "800000000000000001", GuildID: guild0})
	srv.AddChannel(discordgo.Channel{ID: "800000000000000002", GuildID: guild1})

	var clients [2]*client
	for i := range clients {
		clients[i] = newClient(t, srv, "")
		if i == 0 {
			gb, err := clients[0].dg.GatewayBot()
			if err != nil || gb.Shards != 2 || gb.URL != srv.GatewayURL()+"/" || gb.SessionStartLimit.MaxConcurrency != 1 {
				t.Fatalf("gateway/bot %+v, %v", gb, err)
			}
		}
		clients[i].dg.ShardID, clients[i].dg.ShardCount = i, 2
		clients[i].mustOpen()
		if r := clients[i].waitReadies(1)[0]; r.Shard == nil || *r.Shard != [2]int{i, 2} {
			t.Fatalf("shard %d: ready %+v", i, r)
		}
	}
	srv.MessageCreate(msg("800000000000000002", "g1"))
	srv.MessageCreate(msg("800000000000000001", "g0"))
	srv.MessageCreate(msg(dmID, "dm"))
	clients[0].wantContents("g0", "dm")
	clients[1].wantContents("g1")
	ids := srv.Identifies()
	if len(ids) != 2 || ids[0].Shard == nil || *ids[0].Shard != [2]int{0, 2} || *ids[1].Shard != [2]int{1, 2} {
		t.Fatalf("identifies %+v", ids)
	}
}

func TestRedispatchAndReplayOnResume(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	c.waitReadies(1)
	sent := srv.MessageCreate(msg(channelID, "once"))
	evs, err := srv.WaitEvents(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	if again := srv.Redispatch(evs[1].S); again != 3 {
		t.Fatalf("redispatch seq %d", again)
	}
	got := c.waitMessages(2)
	if got[0].ID != sent.ID || got[1].ID != sent.ID {
		t.Fatalf("ids %s %s, want %s twice", got[0].ID, got[1].ID, sent.ID)
	}

	srv.ReplayOnResume(2)
	srv.Reconnect()
	c.waitResumed(1)
	got = c.waitMessages(4)
	if got[2].ID != sent.ID || got[3].ID != sent.ID {
		t.Fatalf("replays %+v", got)
	}
	res := srv.Resumes()
	if len(res) != 1 || res[0].ClientSeq != 3 || res[0].Replayed != 2 {
		t.Fatalf("resumes %+v", res)
	}
	// discordgo hands the raw event (which records the seq) to handlers
	// after the typed one that waitResumed saw: wait for it.
	c.waitFor("six dispatch seqs", func() bool { return len(c.seqs) >= 6 })
	c.mu.Lock()
	seqs := append([]int64(nil), c.seqs...)
	c.mu.Unlock()
	// READY 1, MESSAGE_CREATE 2, its duplicate 3, the replays 2 and 3, RESUMED 4
	if want := []int64{1, 2, 3, 2, 3, 4}; len(seqs) != len(want) || seqs[3] != 2 || seqs[5] != 4 {
		t.Fatalf("seqs %v, want %v", seqs, want)
	}
}

func TestRawDispatch(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{})
	c := open(t, srv)
	typing := make(chan *discordgo.TypingStart, 1)
	c.dg.AddHandler(func(_ *discordgo.Session, e *discordgo.TypingStart) { typing <- e })
	seq := srv.Dispatch("TYPING_START", map[string]any{"channel_id": dmID, "user_id": userID, "timestamp": 1700000000})
	if seq != 2 {
		t.Fatalf("seq %d", seq)
	}
	select {
	case e := <-typing:
		if e.ChannelID != dmID || e.UserID != userID {
			t.Fatalf("typing %+v", e)
		}
	case <-time.After(wait):
		t.Fatal("no TYPING_START")
	}
	if seq := srv.Dispatch("GUILD_CREATE", json.RawMessage(`{"id":"`+guildID+`","name":"g","unavailable":false}`)); seq != 3 {
		t.Fatalf("guild create seq %d", seq)
	}
	if seq := srv.Dispatch("MESSAGE_CREATE", []byte(`{"id":"5","channel_id":"`+dmID+`","content":"bytes"}`)); seq != 4 {
		t.Fatalf("bytes seq %d", seq)
	}
	c.wantFirst("bytes")
}

func TestClosedClientEndsSession(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	c.waitReadies(1)
	// (open waited for the first heartbeat: closing before it makes
	// discordgo's heartbeat goroutine find the socket closed and reconnect.)
	if err := c.dg.Close(); err != nil {
		t.Fatal(err)
	}
	disc, err := srv.WaitDisconnects(1, wait)
	if err != nil || disc[0].Code != 1000 {
		t.Fatalf("disconnects %+v, %v", disc, err)
	}
	srv.MessageCreate(msg(channelID, "lost"))
	if srv.Dropped() != 1 || srv.Sessions()[0].Live {
		t.Fatalf("dropped %d sessions %+v", srv.Dropped(), srv.Sessions())
	}
	if _, d := c.counts(); d != 1 {
		t.Fatalf("disconnect events %d", d)
	}
	// Opening the same Session again: discordgo tries RESUME first, gets op 9
	// and identifies on the same socket.
	c.mustOpen()
	c.waitReadies(2)
	res, ids := srv.Resumes(), srv.Identifies()
	if len(res) != 1 || res[0].Accepted || len(ids) != 2 || ids[1].Conn != 2 {
		t.Fatalf("resumes %+v identifies %+v", res, ids)
	}
}

func TestMessageContentIntent(t *testing.T) {
	t.Parallel()
	no := false
	srv, c := unopened(t, discordtest.Options{MessageContentAllowed: &no})
	c.dg.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages
	c.mustOpen()
	srv.MessageCreate(msg(channelID, "secret"))
	srv.MessageCreate(msg(channelID, "hey <@"+discordtest.DefaultBotID+">"))
	srv.MessageCreate(msg(dmID, "dm"))
	c.wantContents("", "hey <@"+discordtest.DefaultBotID+">", "dm")
	hist, err := c.dg.ChannelMessages(channelID, 10, "", "", "")
	if err != nil || len(hist) != 2 || hist[1].Content != "" || hist[0].Content == "" {
		t.Fatalf("history %+v, %v", hist, err)
	}
	if own, err := c.dg.ChannelMessageSend(channelID, "mine"); err != nil || own.Content != "mine" {
		t.Fatalf("post %+v, %v", own, err)
	}
	if m := c.waitMessages(4)[3]; m.Content != "mine" {
		t.Fatalf("own echo %q", m.Content)
	}
}

func TestIntentsFilterEvents(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{})
	c.dg.Identify.Intents = discordgo.IntentsDirectMessages
	c.mustOpen()
	guildMsg := msg(channelID, "guild")
	guildMsg.GuildID = guildID
	if seq := srv.Dispatch("MESSAGE_CREATE", guildMsg); seq != 0 {
		t.Fatalf("filtered event got seq %d", seq)
	}
	srv.MessageCreate(msg(dmID, "dm"))
	c.wantFirst("dm")
}

func TestSeedingAndDispatchForms(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{})
	srv.AddUser(discordgo.User{ID: discordtest.DefaultUserID, Username: "default-person"})
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	a := srv.AddMessage(discordgo.Message{ChannelID: "1", GuildID: guildID, Timestamp: at, Content: "a"})
	b := srv.AddMessage(discordgo.Message{ChannelID: "1", Timestamp: at, Content: "b"}) // same millisecond
	if a.ID == b.ID || a.Author.Username != "default-person" || b.GuildID != guildID {
		t.Fatalf("a %+v b %+v", a, b)
	}
	srv.AddMessage(discordgo.Message{ID: a.ID, ChannelID: "1", Content: "a2", Timestamp: at}) // replaces
	named := srv.AddMessage(discordgo.Message{ID: "not-a-snowflake", ChannelID: "1", Content: "c",
		Author: &discordgo.User{ID: "7", Username: "given"}})
	if named.Author.Username != "given" || named.Timestamp.IsZero() {
		t.Fatalf("named %+v", named)
	}
	hist := srv.Messages("1")
	// Ids that are not snowflakes sort by length, then as strings.
	if len(hist) != 3 || hist[0].Content != "c" || hist[1].Content != "a2" || hist[2].Content != "b" {
		t.Fatalf("history %+v", hist)
	}

	c := open(t, srv)
	reply := srv.MessageCreate(discordgo.Message{ChannelID: "1", Content: "re",
		MessageReference: &discordgo.MessageReference{MessageID: b.ID}})
	if reply.Type != discordgo.MessageTypeReply || reply.ReferencedMessage == nil || reply.ReferencedMessage.Content != "b" {
		t.Fatalf("reply %+v", reply)
	}
	m := discordgo.Message{ID: "3", ChannelID: "1", GuildID: guildID, Content: "ptr", Author: &discordgo.User{ID: "7"}}
	if srv.Dispatch("MESSAGE_CREATE", &m) == 0 {
		t.Fatal("pointer message not dispatched")
	}
	ic := discordgo.Interaction{ID: "11", Type: discordgo.InteractionPing, Token: "t"}
	srv.Dispatch("INTERACTION_CREATE", ic)
	srv.Dispatch("INTERACTION_CREATE", &ic)
	got := c.waitMessages(2)
	if got[0].ReferencedMessage == nil || got[1].Content != "ptr" {
		t.Fatalf("got %+v %+v", got[0].Message, got[1].Message)
	}
	if c.waitInteractions(2)[1].ID != "11" {
		t.Fatal("interaction")
	}

	mustPanic(t, "needs a ChannelID", func() { srv.MessageCreate(discordgo.Message{}) })
	mustPanic(t, "needs a ChannelID", func() { srv.AddMessage(discordgo.Message{}) })
	mustPanic(t, "needs an ID", func() { srv.AddUser(discordgo.User{}) })
	mustPanic(t, "needs an ID", func() { srv.AddChannel(discordgo.Channel{}) })
	mustPanic(t, "no live session has event 99", func() { srv.Redispatch(99) })
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(r.(string), want) {
			t.Fatalf("panic %v, want %q", r, want)
		}
	}()
	f()
}

func TestPendingEventsPerShard(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{})
	guild1 := strconv.FormatUint(uint64(1001)<<22, 10)
	srv.AddChannel(discordgo.Channel{ID: "2", GuildID: guild1})
	srv.MessageCreate(msg("2", "for shard 1"))
	srv.MessageCreate(msg(dmID, "for shard 0"))
	c0 := newClient(t, srv, "")
	c0.dg.ShardID, c0.dg.ShardCount = 0, 2
	c0.mustOpen()
	c0.wantFirst("for shard 0")
	c1 := newClient(t, srv, "")
	c1.dg.ShardID, c1.dg.ShardCount = 1, 2
	c1.mustOpen()
	c1.wantFirst("for shard 1")
}
