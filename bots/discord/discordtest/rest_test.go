package discordtest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// restCode returns the Discord error code and HTTP status of err.
func restCode(t *testing.T, err error) (code, status int) {
	t.Helper()
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		t.Fatalf("want *discordgo.RESTError with a message, got %T %v", err, err)
	}
	return re.Message.Code, re.Response.StatusCode
}

func TestPostMessageAndOwnEcho(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{})
	question := srv.MessageCreate(msg(channelID, "question?"))
	c.waitMessages(1)

	yes := true
	sent, err := c.dg.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content:         "answer for <@" + userID + ">",
		Reference:       question.Reference(),
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}, RepliedUser: yes},
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "More", Style: discordgo.PrimaryButton, CustomID: "more"}}}},
		Flags: discordgo.MessageFlagsSuppressEmbeds,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sent.ID == "" || sent.Author == nil || sent.Author.ID != discordtest.DefaultBotID || !sent.Author.Bot ||
		sent.ChannelID != channelID || sent.GuildID != guildID || sent.Type != discordgo.MessageTypeReply ||
		sent.MessageReference == nil || sent.MessageReference.MessageID != question.ID ||
		sent.ReferencedMessage == nil || sent.ReferencedMessage.Content != "question?" ||
		len(sent.Mentions) != 1 || sent.Mentions[0].Username != "alice" || len(sent.Components) != 1 ||
		sent.Timestamp.IsZero() || sent.Flags != discordgo.MessageFlagsSuppressEmbeds {
		t.Fatalf("sent %+v", sent)
	}
	posts, err := srv.WaitPosts(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	p := posts[0]
	if p.ChannelID != channelID || p.Message.ID != sent.ID || p.Body.Content != sent.Content ||
		p.Body.Reference == nil || p.Body.Reference.MessageID != question.ID || len(p.Body.Components) != 1 ||
		p.Body.AllowedMentions == nil || !p.Body.AllowedMentions.RepliedUser || len(p.RawBody) == 0 {
		t.Fatalf("post %+v", p)
	}
	if row, isRow := p.Body.Components[0].(*discordgo.ActionsRow); !isRow || len(row.Components) != 1 {
		t.Fatalf("components %#v", p.Body.Components)
	}
	// Like Discord, the bot's own message comes back over the gateway.
	echo := c.waitMessages(2)[1]
	if echo.ID != sent.ID || echo.Author.ID != discordtest.DefaultBotID {
		t.Fatalf("echo %+v", echo.Message)
	}
	if hist := srv.Messages(channelID); len(hist) != 2 || hist[1].ID != sent.ID {
		t.Fatalf("history %+v", hist)
	}

	// A reply without the ping leaves the author out of mentions.
	quiet, err := c.dg.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "quiet",
		Reference: question.Reference(), AllowedMentions: &discordgo.MessageAllowedMentions{}})
	if err != nil || len(quiet.Mentions) != 0 {
		t.Fatalf("quiet %+v, %v", quiet, err)
	}
}

func TestPostMessageValidation(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{})

	_, err := c.dg.ChannelMessageSend(channelID, "  ")
	if code, status := restCode(t, err); code != 50006 || status != 400 {
		t.Fatalf("empty: %d %d", code, status)
	}
	_, err = c.dg.ChannelMessageSend(channelID, strings.Repeat("é", 2001))
	if code, status := restCode(t, err); code != 50035 || status != 400 ||
		!strings.Contains(err.Error(), "BASE_TYPE_MAX_LENGTH") {
		t.Fatalf("too long: %v", err)
	}
	if _, err := c.dg.ChannelMessageSend(channelID, strings.Repeat("é", 2000)); err != nil {
		t.Fatalf("2000 characters: %v", err)
	}
	if _, err := c.dg.ChannelMessageSendEmbed(channelID, &discordgo.MessageEmbed{Title: "only an embed"}); err != nil {
		t.Fatalf("embed: %v", err)
	}
	embeds := make([]*discordgo.MessageEmbed, 11)
	for i := range embeds {
		embeds[i] = &discordgo.MessageEmbed{Title: "e"}
	}
	_, err = c.dg.ChannelMessageSendEmbeds(channelID, embeds)
	if code, _ := restCode(t, err); code != 50035 {
		t.Fatalf("11 embeds: %v", err)
	}
	_, err = c.dg.ChannelMessageSend("123", "nowhere")
	if code, status := restCode(t, err); code != 10003 || status != 404 {
		t.Fatalf("unknown channel: %v", err)
	}
	_, err = c.dg.ChannelMessageSendReply(channelID, "re", &discordgo.MessageReference{MessageID: "1"})
	if code, _ := restCode(t, err); code != 50035 || !strings.Contains(err.Error(), "MESSAGE_REFERENCE_UNKNOWN_MESSAGE") {
		t.Fatalf("unknown reference: %v", err)
	}
	no := false
	plain, err := c.dg.ChannelMessageSendReply(channelID, "re", &discordgo.MessageReference{MessageID: "1", FailIfNotExists: &no})
	if err != nil || plain.Type != discordgo.MessageTypeDefault || plain.MessageReference != nil {
		t.Fatalf("soft reference: %+v, %v", plain, err)
	}
	if n := len(srv.Posts()); n != 3 {
		t.Fatalf("%d posts", n)
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{})
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 6 {
		m := srv.AddMessage(discordgo.Message{ChannelID: channelID, Content: string(rune('a' + i)),
			Timestamp: base.Add(time.Duration(i) * time.Minute), Author: &discordgo.User{ID: userID}})
		if !discordtest.SnowflakeTime(m.ID).Equal(m.Timestamp) {
			t.Fatalf("id %s for %v", m.ID, m.Timestamp)
		}
		ids = append(ids, m.ID)
	}
	contents := func(ms []*discordgo.Message) string {
		var b strings.Builder
		for _, m := range ms {
			b.WriteString(m.Content)
		}
		return b.String()
	}
	for _, tc := range []struct {
		limit                 int
		before, after, around string
		want                  string
	}{
		{0, "", "", "", "fedcba"},
		{2, "", "", "", "fe"},
		{2, ids[4], "", "", "dc"},
		{10, ids[1], "", "", "a"},
		{2, "", ids[1], "", "dc"},
		{3, "", "", ids[3], "edc"},
	} {
		got, err := c.dg.ChannelMessages(channelID, tc.limit, tc.before, tc.after, tc.around)
		if err != nil || contents(got) != tc.want {
			t.Fatalf("%+v: got %q, %v", tc, contents(got), err)
		}
	}
	one, err := c.dg.ChannelMessage(channelID, ids[2])
	if err != nil || one.Content != "c" || one.Author.Username != "alice" || !one.Timestamp.Equal(base.Add(2*time.Minute)) {
		t.Fatalf("one %+v, %v", one, err)
	}
	_, err = c.dg.ChannelMessage(channelID, "1")
	if code, status := restCode(t, err); code != 10008 || status != 404 {
		t.Fatalf("unknown message: %v", err)
	}
	_, err = c.dg.ChannelMessages("1", 1, "", "", "")
	if code, _ := restCode(t, err); code != 10003 {
		t.Fatalf("unknown channel: %v", err)
	}
	_, err = c.dg.ChannelMessages(channelID, 101, "", "", "")
	if code, _ := restCode(t, err); code != 50035 {
		t.Fatalf("limit 101: %v", err)
	}
	// A seeded id is kept, and its time becomes the timestamp.
	m := srv.AddMessage(discordgo.Message{ID: ids[5] + "0", ChannelID: dmID, Content: "seeded"})
	if m.ID != ids[5]+"0" || !m.Timestamp.Equal(discordtest.SnowflakeTime(m.ID)) || m.Author.ID != discordtest.DefaultUserID {
		t.Fatalf("seeded %+v", m)
	}
}

func TestChannelUserGatewayTyping(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{BotName: "bot"})
	srv.AddChannel(discordgo.Channel{ID: "700", GuildID: guildID, ParentID: channelID, Type: discordgo.ChannelTypeGuildPublicThread,
		Name: "thread"})
	c := newClient(t, srv, "")

	ch, err := c.dg.Channel("700")
	if err != nil || ch.Type != discordgo.ChannelTypeGuildPublicThread || ch.ParentID != channelID || ch.GuildID != guildID {
		t.Fatalf("channel %+v, %v", ch, err)
	}
	_, err = c.dg.Channel("1")
	if code, _ := restCode(t, err); code != 10003 {
		t.Fatalf("unknown channel: %v", err)
	}
	me, err := c.dg.User("@me")
	if err != nil || me.ID != discordtest.DefaultBotID || !me.Bot || me.Username != "bot" {
		t.Fatalf("@me %+v, %v", me, err)
	}
	alice, err := c.dg.User(userID)
	if err != nil || alice.Username != "alice" {
		t.Fatalf("user %+v, %v", alice, err)
	}
	_, err = c.dg.User("1")
	if code, _ := restCode(t, err); code != 10013 {
		t.Fatalf("unknown user: %v", err)
	}
	gw, err := c.dg.Gateway()
	if err != nil || gw != srv.GatewayURL()+"/" {
		t.Fatalf("gateway %q, %v", gw, err)
	}

	if err := c.dg.ChannelTyping(dmID); err != nil {
		t.Fatal(err)
	}
	typings, err := srv.WaitTypings(1, wait)
	if err != nil || typings[0].ChannelID != dmID || typings[0].At.IsZero() {
		t.Fatalf("typings %+v, %v", typings, err)
	}
	if code, _ := restCode(t, c.dg.ChannelTyping("1")); code != 10003 {
		t.Fatal("typing in an unknown channel")
	}
	calls := srv.Calls("POST /api/v9/channels/" + dmID + "/typing")
	if len(calls) != 1 || calls[0].Status != http.StatusNoContent || calls[0].Header.Get("Authorization") != "Bot test-token" {
		t.Fatalf("calls %+v", calls)
	}
	if all := srv.Calls(""); len(all) != 8 {
		t.Fatalf("%d calls", len(all))
	}
}

func TestBulkOverwriteCommands(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{ApplicationID: "500"})
	c := newClient(t, srv, "")
	global, err := c.dg.ApplicationCommandBulkOverwrite("500", "", []*discordgo.ApplicationCommand{
		{Name: "ask", Description: "Ask something", Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionString, Name: "question", Description: "What", Required: true}}},
		{Name: "Summarize", Type: discordgo.MessageApplicationCommand},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(global) != 2 || global[0].ID == "" || global[0].ApplicationID != "500" || global[0].Version == "" ||
		global[0].GuildID != "" || global[0].Type != discordgo.ChatApplicationCommand || len(global[0].Options) != 1 {
		t.Fatalf("global %+v", global)
	}
	guild, err := c.dg.ApplicationCommandBulkOverwrite("500", guildID, []*discordgo.ApplicationCommand{
		{Name: "forget", Description: "Forget"}})
	if err != nil || len(guild) != 1 || guild[0].GuildID != guildID {
		t.Fatalf("guild %+v, %v", guild, err)
	}
	again, err := c.dg.ApplicationCommandBulkOverwrite("500", "", []*discordgo.ApplicationCommand{
		{Name: "ask", Description: "Ask again"}})
	if err != nil || len(again) != 1 || again[0].ID != global[0].ID || again[0].Version == global[0].Version {
		t.Fatalf("again %+v, %v", again, err)
	}
	sets, err := srv.WaitCommandSets(3, wait)
	if err != nil || sets[1].GuildID != guildID || sets[0].ApplicationID != "500" || len(sets[2].Commands) != 1 {
		t.Fatalf("sets %+v, %v", sets, err)
	}
	list, err := c.dg.ApplicationCommands("500", "")
	if err != nil || len(list) != 1 || list[0].Description != "Ask again" {
		t.Fatalf("list %+v, %v", list, err)
	}
	if list, err := c.dg.ApplicationCommands("500", "1"); err != nil || len(list) != 0 {
		t.Fatalf("empty list %+v, %v", list, err)
	}

	for _, bad := range [][]*discordgo.ApplicationCommand{
		{{Name: "Ask", Description: "upper case"}},
		{{Name: "ask"}},
		{{Name: "", Description: "no name"}},
		{{Name: "ask", Description: "one"}, {Name: "ask", Description: "two"}},
		{{Name: "Menu", Type: discordgo.UserApplicationCommand, Description: "not allowed"}},
	} {
		_, err := c.dg.ApplicationCommandBulkOverwrite("500", "", bad)
		if code, status := restCode(t, err); code != 50035 || status != 400 {
			t.Fatalf("%+v: %v", bad[0], err)
		}
	}
	_, err = c.dg.ApplicationCommandBulkOverwrite("501", "", nil)
	if code, status := restCode(t, err); code != 50001 || status != 403 {
		t.Fatalf("other app: %v", err)
	}
	if _, err := c.dg.ApplicationCommands("501", ""); err == nil {
		t.Fatal("listed another app's commands")
	}
	if n := len(srv.CommandSets()); n != 3 {
		t.Fatalf("%d sets", n)
	}
}

func TestRateLimitedRetried(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{})
	limited := make(chan *discordgo.RateLimit, 2)
	c.dg.AddHandler(func(_ *discordgo.Session, e *discordgo.RateLimit) { limited <- e })

	srv.FailNext("POST /api/v9/channels/", discordtest.RateLimited(150*time.Millisecond, false))
	start := time.Now()
	m, err := c.dg.ChannelMessageSend(channelID, "patient")
	if err != nil || m.Content != "patient" {
		t.Fatalf("send %+v, %v", m, err)
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Fatalf("retried after %v", elapsed)
	}
	calls := srv.Calls("POST /api/v9/channels/" + channelID + "/messages")
	if len(calls) != 2 || calls[0].Status != 429 || calls[1].Status != 200 {
		t.Fatalf("calls %+v", calls)
	}
	if rl := <-limited; rl.RetryAfter != 150*time.Millisecond || rl.Message != "You are being rate limited." {
		t.Fatalf("rate limit event %+v", rl.TooManyRequests)
	}

	srv.FailNext("GET /api/v9/users/@me", discordtest.RateLimited(100*time.Millisecond, true))
	if me, err := c.dg.User("@me"); err != nil || me.ID != discordtest.DefaultBotID {
		t.Fatalf("@me %+v, %v", me, err)
	}
	if calls := srv.Calls("GET /api/v9/users/@me"); len(calls) != 2 || calls[0].Status != 429 {
		t.Fatalf("calls %+v", calls)
	}

	srv.FailNext("POST /api/v9/channels/"+channelID, discordtest.RateLimited(2500*time.Millisecond, false))
	_, err = c.dg.ChannelMessageSend(channelID, "impatient", discordgo.WithRetryOnRatelimit(false))
	var rle *discordgo.RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != 2500*time.Millisecond {
		t.Fatalf("want RateLimitError, got %v", err)
	}
	if got := discordtest.RateLimited(time.Second, true).String(); got != "429 global retry after 1s" {
		t.Fatal(got)
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	srv, c := unopened(t, discordtest.Options{})

	f := discordtest.HTTPError(403, 50013, "Missing Permissions")
	if f.String() != `HTTP 403 code 50013 "Missing Permissions"` {
		t.Fatal(f.String())
	}
	srv.FailNext("POST /api/v9/channels/", f)
	_, err := c.dg.ChannelMessageSend(channelID, "no")
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil || re.Message.Code != 50013 || re.Message.Message != "Missing Permissions" ||
		re.Response.StatusCode != 403 {
		t.Fatalf("want RESTError 50013, got %v", err)
	}

	// discordgo retries a 502 MaxRestRetries (3) times, then fails with a
	// plain error, not a RESTError.
	srv.FailNextN("GET /api/v9/channels/", 4, discordtest.HTTPError(502, 0, "Bad Gateway"))
	_, err = c.dg.Channel(channelID)
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "Exceeded Max retries HTTP 502") {
		t.Fatalf("502: %v", err)
	}
	if n := len(srv.Calls("GET /api/v9/channels/")); n != 4 {
		t.Fatalf("%d calls", n)
	}
	srv.FailNextN("GET /api/v9/channels/", 2, discordtest.HTTPError(500, 0, "Internal Server Error"))
	srv.ClearFaults()
	if _, err := c.dg.Channel(channelID); err != nil {
		t.Fatal(err)
	}

	bad := newClient(t, srv, "wrong")
	_, err = bad.dg.User("@me")
	if code, status := restCode(t, err); code != 0 || status != 401 {
		t.Fatalf("bad token: %v", err)
	}
}

func TestTooManyCommands(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{})
	var b strings.Builder
	b.WriteString("[")
	for i := range 101 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"c` + strings.Repeat("x", i%30) + string(rune('a'+i/26)) + string(rune('a'+i%26)) + `","description":"d"}`)
	}
	b.WriteString("]")
	a := do(t, srv, "PUT", "/api/v9/applications/"+discordtest.DefaultBotID+"/commands", b.String(), bot)
	if a.status != 400 || a.code() != 50035 ||
		!strings.Contains(string(a.raw), `"errors":{"_errors":[{"code":"APPLICATION_COMMANDS_TOO_MANY"`) {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	a = do(t, srv, "PUT", "/api/v9/applications/"+discordtest.DefaultBotID+"/commands", "null", bot)
	if a.status != 200 || strings.TrimSpace(string(a.raw)) != "[]" {
		t.Fatalf("null: %d %s", a.status, a.raw)
	}
	calls := srv.Calls("PUT ")
	if len(calls) != 2 || len(calls[0].Body) == 0 {
		t.Fatalf("calls %d", len(calls))
	}
	if q := do(t, srv, "GET", "/api/v9/applications/"+discordtest.DefaultBotID+"/commands?with_localizations=true", "", bot); q.status != 200 {
		t.Fatal(q.status)
	}
	if got := srv.Calls("GET "); len(got) != 1 || got[0].Query.Get("with_localizations") != "true" {
		t.Fatalf("query %+v", got)
	}
}
