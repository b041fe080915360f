package discord

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

func newTestBot(t *testing.T) (*Bot, *bottest.LogBuffer) {
	t.Helper()
	logs := &bottest.LogBuffer{}
	b, err := New(Config{Token: "tok", Handler: bottest.NewHandler(), Logger: newLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	return b, logs
}

func TestAcceptEdgeCases(t *testing.T) {
	b, _ := newTestBot(t)
	for _, m := range []*discordgo.Message{
		{ID: "1", ChannelID: "2"},                                                 // no author
		{ID: "1", ChannelID: "2", Author: &discordgo.User{}},                      // no author id
		{ID: "1", ChannelID: "2", Author: &discordgo.User{ID: "9"}, GuildID: "x"}, // bad guild
	} {
		if in, why := b.accept(m, "7", "mnemo"); in != nil {
			t.Errorf("accepted %+v", m)
		} else if why == "" {
			t.Error("no reason")
		}
	}
	b.onMessage(nil, &discordgo.MessageCreate{})         // no message: nothing happens
	b.onInteraction(nil, &discordgo.InteractionCreate{}) // no interaction
}

func TestInteractionWithoutUser(t *testing.T) {
	b, logs := newTestBot(t)
	b.onInteraction(nil, &discordgo.InteractionCreate{Interaction: &discordgo.Interaction{
		Type: discordgo.InteractionApplicationCommand, Data: discordgo.ApplicationCommandInteractionData{Name: "memory"},
	}})
	b.wg.Wait()
	if !strings.Contains(logs.String(), "interaction without a user") {
		t.Errorf("logs: %s", logs)
	}
}

func TestFatalClose(t *testing.T) {
	for code, want := range map[int]string{
		4004: "DISCORD_BOT_TOKEN", 4014: "Message Content Intent", 4013: "bug", 4010: "discord.shardID",
		4011: "discord.shardCount", 4012: "update mnemo",
	} {
		err := fatalClose(&websocket.CloseError{Code: code})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d: %v", code, err)
		}
	}
	for _, err := range []error{&websocket.CloseError{Code: 4000}, &websocket.CloseError{Code: 4003}, errors.New("eof")} {
		if fatalClose(err) != nil {
			t.Errorf("%v is not fatal", err)
		}
	}
}

func TestRewriteTransport(t *testing.T) {
	var got *http.Request
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) { got = r; return nil, errors.New("stop") })
	to, _ := url.Parse("http://127.0.0.1:9/prefix/")
	rt := &rewriteTransport{base: base, to: to}
	req, _ := http.NewRequest("GET", "https://discord.com/api/v9/webhooks/1/a%2Fb/messages/@original", nil)
	rt.RoundTrip(req)
	if got.URL.String() != "http://127.0.0.1:9/prefix/api/v9/webhooks/1/a%2Fb/messages/@original" || got.Host != "127.0.0.1:9" {
		t.Errorf("rewritten to %s (host %s)", got.URL, got.Host)
	}
	req, _ = http.NewRequest("GET", "https://cdn.discordapp.com/x", nil)
	rt.RoundTrip(req)
	if got.URL.Host != "cdn.discordapp.com" {
		t.Errorf("other host rewritten: %s", got.URL)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRedactErr(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "http://u:secret@h/x", Err: errors.New("refused")}
	if got := redactErr(ue); strings.Contains(got, "secret") || !strings.Contains(got, "refused") {
		t.Errorf("redactErr %q", got)
	}
}

func TestCheckTokenUnreachable(t *testing.T) {
	b, _ := newTestBot(t)
	b.apiURL, _ = url.Parse("http://user:secret@127.0.0.1:1/")
	b.s = b.newSession()
	b.retryBase = 1
	err := b.checkToken(context.Background())
	if err == nil || !strings.Contains(err.Error(), "DISCORD_API_URL") || strings.Contains(err.Error(), "secret") {
		t.Errorf("checkToken: %v", err)
	}
}

func TestMsgCache(t *testing.T) {
	c := newMsgCache(2)
	c.put(nil)
	c.put(&discordgo.Message{})
	inner := &discordgo.Message{ID: "0"}
	c.put(&discordgo.Message{ID: "1", ReferencedMessage: &discordgo.Message{ID: "2", ReferencedMessage: inner}})
	c.put(&discordgo.Message{ID: "2"})
	c.put(&discordgo.Message{ID: "2", Content: "again"})
	if got := c.get("1"); got == nil || got.ReferencedMessage.ReferencedMessage != nil {
		t.Errorf("1: %+v", got)
	}
	c.put(&discordgo.Message{ID: "3"})
	if c.get("1") != nil || c.get("2").Content != "again" || c.get("3") == nil {
		t.Error("not the oldest evicted")
	}
}

func TestKindCache(t *testing.T) {
	calls := 0
	k := newKindCache(1)
	k.lookup = func(_ context.Context, id string) (*discordgo.Channel, error) {
		calls++
		if id == "bad" {
			return nil, errors.New("403")
		}
		if id == "c1" {
			return &discordgo.Channel{ID: id, Type: discordgo.ChannelTypeGuildText}, nil
		}
		return &discordgo.Channel{ID: id, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "p-" + id}, nil
	}
	ctx := context.Background()
	isThread := func(id string) bool { _, thread := k.home(ctx, id); return thread }
	if isThread("bad") || isThread("bad") || calls != 2 {
		t.Errorf("a failed lookup is cached or a thread: %d calls", calls)
	}
	if !isThread("t1") || !isThread("t1") || calls != 3 {
		t.Errorf("calls %d", calls)
	}
	isThread("t2") // over max: the cache starts again
	if len(k.parent) != 1 {
		t.Errorf("cache %v", k.parent)
	}
	// A thread's messages belong to its parent channel's memory; a
	// channel's to its own, asked for once.
	if home, thread := k.home(ctx, "t2"); home != "p-t2" || !thread {
		t.Errorf("home(t2) = %q, %v", home, thread)
	}
	before := calls
	for range 2 {
		if home, thread := k.home(ctx, "c1"); home != "c1" || thread {
			t.Errorf("home(c1) = %q, %v", home, thread)
		}
	}
	if calls != before+1 {
		t.Errorf("c1 looked up %d times", calls-before)
	}
	if home, thread := k.home(ctx, "bad"); home != "bad" || thread {
		t.Errorf("home(bad) = %q, %v", home, thread)
	}
}

func TestDisplayName(t *testing.T) {
	u := &discordgo.User{ID: "1", Username: "ada", GlobalName: "Ada\nLovelace"}
	for _, tc := range []struct {
		u    *discordgo.User
		m    *discordgo.Member
		want string
	}{
		{u, nil, "Ada Lovelace"},
		{u, &discordgo.Member{Nick: "Countess\u202e"}, "Countess"},
		{nil, &discordgo.Member{Nick: "x"}, "x"},
		{&discordgo.User{Username: "ada"}, nil, "ada"},
	} {
		if got := displayName(tc.u, tc.m); got != tc.want {
			t.Errorf("displayName(%+v, %+v) = %q", tc.u, tc.m, got)
		}
	}
}
