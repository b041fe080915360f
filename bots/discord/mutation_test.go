package discord

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
	"github.com/mnemo-agent/mnemo/bots/internal/thread"
)

// TestFitMessageBoundary: an answer of exactly one message is left
// whole; one character more is cut, with the note, to one message.
func TestFitMessageBoundary(t *testing.T) {
	exact := strings.Repeat("a", maxMessageRunes)
	if got := fitMessage(exact); got != exact {
		t.Errorf("an answer of exactly %d characters was changed (%d characters)", maxMessageRunes, len([]rune(got)))
	}
	over := strings.Repeat("é", maxMessageRunes+1)
	got := fitMessage(over)
	if n := len([]rune(got)); n > maxMessageRunes || !strings.Contains(got, "mnemo memory ls") || !strings.HasPrefix(got, "éé") {
		t.Errorf("%d characters: %.40q…", n, got)
	}
}

// TestSessionSettings: the discordgo session never logs on its own (it
// would bypass the configured logger), a gateway handshake cannot hang
// for ever, and a shutdown gives the clean close a moment before open
// connections are cut.
func TestSessionSettings(t *testing.T) {
	b, _ := newTestBot(t)
	if b.s.LogLevel >= discordgo.LogError {
		t.Errorf("discordgo log level %d: it would log to the standard logger", b.s.LogLevel)
	}
	d := b.s.Dialer
	if d == nil || d.HandshakeTimeout < time.Second || d.NetDialContext == nil {
		t.Errorf("dialer %+v: no handshake timeout, or connections not tracked", d)
	}
	if b.killAfter < time.Second {
		t.Errorf("killAfter %v: no time for a clean close", b.killAfter)
	}
	if !b.s.SyncEvents || b.s.ShouldReconnectOnError || b.s.Identify.Intents != Intents {
		t.Errorf("session %+v", b.s)
	}
}

// TestHTTPClientHonoured: REST calls go through Config.HTTPClient's
// transport (proxies, tests), rewritten to the configured API address; a
// client without a transport uses the default one.
func TestHTTPClientHonoured(t *testing.T) {
	var got []string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.String())
		return nil, errors.New("offline")
	})
	b, err := New(Config{Token: "tok", APIURL: "http://127.0.0.1:9/base/", Handler: bottest.NewHandler(),
		HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.User("@me", discordgo.WithContext(t.Context())); err == nil {
		t.Fatal("no error from an offline transport")
	}
	if len(got) == 0 || !strings.HasPrefix(got[0], "http://127.0.0.1:9/base/api/") {
		t.Errorf("the configured transport saw %q", got)
	}
	// No transport: the default one (nothing listens on port 1).
	b, err = New(Config{Token: "tok", APIURL: "http://127.0.0.1:1/", Handler: bottest.NewHandler(), HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.User("@me", discordgo.WithContext(t.Context())); err == nil {
		t.Error("no error from a closed port")
	}
}

// TestTokenCheckRetries: a 4xx other than 401 is reported at once (a
// wrong DISCORD_API_URL, not worth retrying); a failure that may pass is
// retried after retryBase, then twice that.
func TestTokenCheckRetries(t *testing.T) {
	srv := discordtest.New(t, discordtest.Options{})
	logs := &bottest.LogBuffer{}
	b, err := New(Config{Token: srv.Options().Token, APIURL: srv.URL() + "nothing-here/", Handler: bottest.NewHandler(), Logger: newLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	b.retryBase = time.Millisecond
	err = b.checkToken(context.Background())
	if err == nil || !strings.Contains(err.Error(), "answered HTTP 404 to GET users/@me") {
		t.Errorf("checkToken: %v", err)
	}
	if strings.Contains(logs.String(), "retrying") {
		t.Errorf("a 404 was retried:\n%s", logs)
	}

	srv.FailNextN("GET /api/v9/users/@me", 2, discordtest.HTTPError(500, 0, "Internal Server Error"))
	logs = &bottest.LogBuffer{}
	b, err = New(Config{Token: srv.Options().Token, APIURL: srv.URL(), Handler: bottest.NewHandler(), Logger: newLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	b.retryBase = time.Millisecond
	if err := b.checkToken(context.Background()); err != nil {
		t.Fatalf("checkToken after two 500s: %v", err)
	}
	for _, want := range []string{"attempt=1 wait=1ms", "attempt=2 wait=2ms"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the logs:\n%s", want, logs)
		}
	}
	if n := len(srv.Calls("GET /api/v9/users/@me")); n != 3 {
		t.Errorf("%d calls; want the two failures and the success", n)
	}
}

// TestLoggedOutcomes: a /memory without a subcommand shows the memory;
// answers are logged with what they were, registration per guild says
// where, and nothing that went well is logged as a failure (a panic, a
// typing indicator or a busy reply that could not be posted).
func TestLoggedOutcomes(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.GuildIDs = []string{guildID} }})
	if _, err := hs.srv.WaitCommandSets(1, wait); err != nil {
		t.Fatal(err)
	}
	hs.mem.ShowText = "What I remember about you: cats."
	i := hs.srv.InteractionCreate(discordgo.Interaction{
		Type: discordgo.InteractionApplicationCommand, ChannelID: dmID, User: &alice,
		Data: discordgo.ApplicationCommandInteractionData{Name: "memory", CommandType: discordgo.ChatApplicationCommand},
	})
	_, edit := hs.answer(t, i, 1)
	if edit.Edit.Content == nil || *edit.Edit.Content != hs.mem.ShowText {
		t.Errorf("/memory without a subcommand: %+v", edit.Edit)
	}
	waitFor(t, "the show log", func() bool {
		return logLine(hs.logs.String(), "/memory answered", "forget=false confirm=false")
	})
	_, edit = hs.answer(t, hs.slash(alice, false, "forget", "facts/food.md"), 2)
	if len(buttons(edit)) != 2 {
		t.Errorf("forget %+v", edit.Edit)
	}
	waitFor(t, "the forget log", func() bool { return logLine(hs.logs.String(), "/memory answered", "forget=true confirm=true") })
	waitFor(t, "the registration log", func() bool {
		return strings.Contains(hs.logs.String(), "/memory registered in guild "+guildID)
	})

	// A full conversation: the busy reply, then the answers.
	release := hs.h.Hold()
	for range queue.PerConversation + 1 {
		hs.dm(alice, "again")
	}
	if p := hs.posts(t, 1)[0]; p.Body.Content != pipeline.BusyReplyText {
		t.Errorf("first post %q", p.Body.Content)
	}
	release()
	hs.posts(t, queue.PerConversation+1)
	waitFor(t, "the queue to empty", func() bool { return hs.bot.pipe.Queue.Len() == 0 })
	hs.bot.wg.Wait()
	logs := hs.logs.String()
	for _, bad := range []string{"panicked", "cannot show typing", "cannot post the busy reply"} {
		if strings.Contains(logs, bad) {
			t.Errorf("%q logged though nothing failed:\n%s", bad, logs)
		}
	}
	if !strings.Contains(logs, "conversation busy") {
		t.Errorf("the busy conversation was not logged:\n%s", logs)
	}
}

// TestGatewayBackoffGrows: connection attempts that keep failing wait
// retryBase, then twice, then four times that, counting the attempts.
func TestGatewayBackoffGrows(t *testing.T) {
	hs := start(t, setup{noConnect: true, before: func(s *discordtest.Server) {
		for range 3 {
			s.FailNextIdentify(4000, "Unknown error.")
		}
	}})
	if err := hs.srv.WaitReady(1, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready", hs.bot.Ready)
	logs := hs.logs.String()
	for _, want := range [][]string{{"attempt=1", "wait=10ms"}, {"attempt=2", "wait=20ms"}, {"attempt=3", "wait=40ms"}} {
		if !logLine(logs, append([]string{"cannot connect to the gateway; retrying"}, want...)...) {
			t.Errorf("no retry with %q in the logs:\n%s", want, logs)
		}
	}
}

// TestSnowflakeLength: Discord ids are up to 20 digits (a uint64).
func TestSnowflakeLength(t *testing.T) {
	for s, ok := range map[string]bool{
		"18446744073709551615": true, "1": true, "123456789012345678901": false, "": false, "12a": false,
	} {
		if snowflake(s) != ok {
			t.Errorf("snowflake(%q) != %v", s, ok)
		}
	}
}

// TestReplyPartsExactlyMaxParts: a reply of exactly maxParts messages
// is posted whole, without the note that it was cut.
func TestReplyPartsExactlyMaxParts(t *testing.T) {
	para := strings.TrimSpace(strings.Repeat("word ", 380)) // 1,899 characters
	text := strings.Repeat(para+"\n\n", maxParts)
	parts := replyParts(text)
	if len(parts) != maxParts {
		t.Fatalf("%d parts; want %d", len(parts), maxParts)
	}
	for i, p := range parts {
		if p != para {
			t.Errorf("part %d is not the paragraph (%d characters, cut note: %v)", i, len([]rune(p)), strings.Contains(p, cutNote))
		}
	}
	if parts = replyParts(text + para); len(parts) != maxParts || !strings.HasSuffix(parts[maxParts-1], cutNote) {
		t.Errorf("one part over: %d parts, no cut note", len(parts))
	}
}

// TestReplyChainBounds: a reply chain is followed back at most
// thread.MaxMessages messages, oldest first; a referenced message that came
// with the event is used only when it is the one referenced.
func TestReplyChainBounds(t *testing.T) {
	b, err := New(Config{Token: "tok", APIURL: "http://127.0.0.1:1/", Handler: bottest.NewHandler()})
	if err != nil {
		t.Fatal(err)
	}
	id := func(i int) string { return fmt.Sprint(500000000000000000 + i) }
	msg := func(i int) *discordgo.Message {
		m := &discordgo.Message{ID: id(i), ChannelID: channelID, Content: fmt.Sprint("m", i)}
		if i > 0 {
			m.MessageReference = &discordgo.MessageReference{MessageID: id(i - 1), ChannelID: channelID}
		}
		return m
	}
	for i := range 30 {
		b.recent.put(msg(i))
	}
	log := slog.New(slog.DiscardHandler)
	chain := b.replyChain(context.Background(), msg(30), log)
	if len(chain) != thread.MaxMessages || chain[0].Content != fmt.Sprint("m", 30-thread.MaxMessages) || chain[len(chain)-1].Content != "m29" {
		t.Errorf("chain of %d, from %q", len(chain), chain[0].Content)
	}
	// Not in the cache, and REST is unreachable: the referenced message
	// the event carried is used.
	m := &discordgo.Message{ID: id(100), ChannelID: channelID, MessageReference: &discordgo.MessageReference{MessageID: id(99)},
		ReferencedMessage: &discordgo.Message{ID: id(99), ChannelID: channelID, Content: "carried"}}
	if chain := b.replyChain(context.Background(), m, log); len(chain) != 1 || chain[0].Content != "carried" {
		t.Errorf("chain %+v", chain)
	}
	// A carried message that is not the referenced one is not trusted.
	m.MessageReference.MessageID = id(5)
	if chain := b.replyChain(context.Background(), m, log); len(chain) != 6 || chain[5].Content != "m5" || chain[0].Content != "m0" {
		t.Errorf("chain of %d", len(chain))
	}
}

// logLine reports whether one line of logs holds all of parts.
func logLine(logs string, parts ...string) bool {
	for _, l := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
