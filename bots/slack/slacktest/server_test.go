package slacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/goleak"
)

const wait = 5 * time.Second

// TestMain fails the run if any goroutine (the server's, socketmode's)
// outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newServer(t *testing.T, opts Options) (*Server, *slack.Client) {
	t.Helper()
	srv := New(t, opts)
	api := slack.New(srv.Options().BotToken, slack.OptionAppLevelToken(srv.Options().AppToken),
		slack.OptionAPIURL(srv.APIURL()))
	return srv, api
}

// client runs a socketmode client until the test ends and forwards its
// events; Ack is done by the test.
type client struct {
	sm     *socketmode.Client
	events chan socketmode.Event
	done   chan error
}

func startClient(t *testing.T, api *slack.Client, opts ...socketmode.Option) *client {
	t.Helper()
	c := &client{sm: socketmode.New(api, opts...), events: make(chan socketmode.Event, 1000),
		done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case e := <-c.sm.Events:
				c.events <- e
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { c.done <- c.sm.RunContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		case <-time.After(wait):
			t.Error("RunContext did not return after cancel")
		}
		wg.Wait()
	})
	return c
}

// next returns the next event of type typ, skipping others.
func (c *client) next(t *testing.T, typ socketmode.EventType) socketmode.Event {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case e := <-c.events:
			if e.Type == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

// none checks that no event of type typ arrives within d.
func (c *client) none(t *testing.T, typ socketmode.EventType, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e := <-c.events:
			if e.Type == typ {
				t.Fatalf("unexpected %s event: %+v", typ, e.Request)
			}
		case <-timeout:
			return
		}
	}
}

func connected(t *testing.T, api *slack.Client, opts ...socketmode.Option) (*client, socketmode.Event) {
	t.Helper()
	c := startClient(t, api, opts...)
	c.next(t, socketmode.EventTypeConnected)
	return c, c.next(t, socketmode.EventTypeHello)
}

func TestAuthTest(t *testing.T) {
	srv, api := newServer(t, Options{TeamID: "T1", BotUserID: "U1BOT"})
	res, err := api.AuthTest()
	if err != nil {
		t.Fatal(err)
	}
	if res.UserID != "U1BOT" || res.TeamID != "T1" || res.BotID != DefaultBotID ||
		res.Team != DefaultTeamName || res.User != DefaultBotName || res.URL != "https://mnemo-test.slack.com/" {
		t.Fatalf("auth.test = %+v", res)
	}
	calls := srv.Calls("auth.test")
	if len(calls) != 1 || !calls[0].OK || calls[0].Token != DefaultBotToken || calls[0].TokenInHeader ||
		calls[0].Status != 200 || calls[0].HTTPMethod != "POST" {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestInvalidToken(t *testing.T) {
	srv, _ := newServer(t, Options{})
	for tok, want := range map[string]string{"xoxb-wrong": "invalid_auth", "": "not_authed"} {
		_, err := slack.New(tok, slack.OptionAPIURL(srv.APIURL())).AuthTest()
		var se slack.SlackErrorResponse
		if !errors.As(err, &se) || se.Err != want {
			t.Fatalf("token %q: err = %v, want %s", tok, err, want)
		}
	}
	// The app-level token only opens connections, from the header only.
	_, err := slack.New(DefaultAppToken, slack.OptionAPIURL(srv.APIURL())).AuthTest()
	if err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("auth.test with app token: %v", err)
	}
	for _, tok := range []string{DefaultBotToken, "xapp-wrong"} {
		api := slack.New(DefaultBotToken, slack.OptionAppLevelToken(tok), slack.OptionAPIURL(srv.APIURL()))
		if _, _, err := api.StartSocketModeContext(context.Background()); err == nil || err.Error() != "invalid_auth" {
			t.Fatalf("apps.connections.open with %s: %v", tok, err)
		}
	}
	api := slack.New(DefaultBotToken, slack.OptionAPIURL(srv.APIURL()))
	if _, _, err := api.StartSocketModeContext(context.Background()); err == nil || err.Error() != "not_authed" {
		t.Fatalf("apps.connections.open without token: %v", err)
	}
	// A token in the form body is refused for apps.connections.open.
	resp, err := http.PostForm(srv.APIURL()+"apps.connections.open", map[string][]string{"token": {DefaultAppToken}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"invalid_auth"`) {
		t.Fatalf("form token: %s", body)
	}
	if n := len(srv.Calls("")); n != 7 {
		t.Fatalf("%d calls recorded", n)
	}
}

func TestPostMessage(t *testing.T) {
	srv, api := newServer(t, Options{})
	block := slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "*hi*", false, false), nil, nil)
	ch, ts, err := api.PostMessage("D1", slack.MsgOptionText("hello <world>", false),
		slack.MsgOptionTS("1700000000.000001"), slack.MsgOptionBlocks(block), slack.MsgOptionDisableMarkdown(),
		slack.MsgOptionBroadcast())
	if err != nil {
		t.Fatal(err)
	}
	if ch != "D1" || !regexp.MustCompile(`^\d{10}\.\d{6}$`).MatchString(ts) {
		t.Fatalf("channel %q ts %q", ch, ts)
	}
	_, ts2, err := api.PostMessage("D1", slack.MsgOptionText("second", false))
	if err != nil {
		t.Fatal(err)
	}
	if tsKey(ts2) <= tsKey(ts) {
		t.Fatalf("ts not increasing: %s then %s", ts, ts2)
	}
	posts, err := srv.WaitPosts(2, wait)
	if err != nil {
		t.Fatal(err)
	}
	p := posts[0]
	if p.Channel != "D1" || p.Text != "hello <world>" || p.ThreadTS != "1700000000.000001" || p.TS != ts ||
		p.Mrkdwn || !p.ReplyBroadcast || !strings.Contains(string(p.Blocks), `"*hi*"`) || p.Attachments != nil {
		t.Fatalf("post = %+v", p)
	}
	if !posts[1].Mrkdwn || posts[1].ThreadTS != "" || posts[1].Blocks != nil || posts[1].Seq <= p.Seq {
		t.Fatalf("second post = %+v", posts[1])
	}

	_, _, msg, err := api.PostMessageWithResponse("C1", slack.MsgOptionText("x", false))
	if err != nil || msg.BotID != DefaultBotID || msg.User != DefaultBotUserID || msg.Text != "x" {
		t.Fatalf("message = %+v, %v", msg, err)
	}

	long := strings.Repeat("a", MaxTextLength+1)
	bigSection := slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", strings.Repeat("b", MaxSectionTextLength+1), false, false), nil, nil)
	for _, tc := range []struct {
		channel string
		opts    []slack.MsgOption
		want    string
	}{
		{"", []slack.MsgOption{slack.MsgOptionText("x", false)}, "channel_not_found"},
		{"D1", nil, "no_text"},
		{"D1", []slack.MsgOption{slack.MsgOptionText(long, false)}, "msg_too_long"},
		{"D1", []slack.MsgOption{slack.MsgOptionBlocks(bigSection)}, "invalid_blocks"},
		{"D1", []slack.MsgOption{slack.MsgOptionText("x", false), slack.MsgOptionBlocks(make([]slack.Block, 51)...)}, "invalid_blocks"},
	} {
		_, _, err := api.PostMessage(tc.channel, tc.opts...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v", tc.want, err)
		}
	}
	if n := len(srv.Posts()); n != 3 {
		t.Fatalf("%d posts", n)
	}
}

func TestEphemeralUpdateDelete(t *testing.T) {
	srv, api := newServer(t, Options{})
	ets, err := api.PostEphemeral("C1", "U7", slack.MsgOptionText("psst", false))
	if err != nil || ets == "" {
		t.Fatalf("ephemeral: %q %v", ets, err)
	}
	if _, err := api.PostEphemeral("", "U7", slack.MsgOptionText("psst", false)); err == nil || err.Error() != "channel_not_found" {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeral("C1", "", slack.MsgOptionText("psst", false)); err == nil || err.Error() != "user_not_in_channel" {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeral("C1", "U7"); err == nil || err.Error() != "no_text" {
		t.Fatal(err)
	}
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("draft", false))
	if err != nil {
		t.Fatal(err)
	}
	block := slack.NewSectionBlock(slack.NewTextBlockObject("plain_text", "final", false, false), nil, nil)
	if _, uts, text, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("final", false), slack.MsgOptionBlocks(block)); err != nil || uts != ts || text != "final" {
		t.Fatalf("update: %s %s %v", uts, text, err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts); err == nil || err.Error() != "no_text" {
		t.Fatalf("empty update: %v", err)
	}
	if got := srv.ChannelMessages("C1"); len(got) != 1 || got[0].Text != "final" || got[0].Blocks == nil {
		t.Fatalf("stored = %+v", got)
	}
	if _, _, _, err := api.UpdateMessage("C1", "1.2", slack.MsgOptionText("x", false)); err == nil || err.Error() != "message_not_found" {
		t.Fatal(err)
	}
	if _, dts, err := api.DeleteMessage("C1", ts); err != nil || dts != ts {
		t.Fatalf("delete: %v", err)
	}
	if _, _, err := api.DeleteMessage("C1", ts); err == nil || err.Error() != "message_not_found" {
		t.Fatal(err)
	}
	var methods []string
	for _, p := range srv.Chat("") {
		methods = append(methods, p.Method)
	}
	if strings.Join(methods, ",") != "chat.postEphemeral,chat.postMessage,chat.update,chat.delete" {
		t.Fatalf("chat = %v", methods)
	}
	if e := srv.Chat("chat.postEphemeral"); len(e) != 1 || e[0].User != "U7" || e[0].TS != ets {
		t.Fatalf("ephemeral = %+v", e)
	}
}

func TestConversationsRepliesPagination(t *testing.T) {
	srv, api := newServer(t, Options{})
	parent := "1700000100.000100"
	srv.SetThread("C1", parent, []Message{
		{User: "U1", Text: "parent", TS: parent},
		{User: "U2", Text: "r1", TS: "1700000100.000300"},
		{User: DefaultBotUserID, BotID: DefaultBotID, Text: "r2", TS: "1700000100.000200"},
		{User: "U1", Text: "r3"},
	})
	srv.AddMessage("C1", Message{User: "U9", Text: "unrelated"})
	// The bot's own reply lands in the thread too.
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("r4", false), slack.MsgOptionTS(parent)); err != nil {
		t.Fatal(err)
	}

	var all []slack.Message
	cursor, pages := "", 0
	for {
		msgs, hasMore, next, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{
			ChannelID: "C1", Timestamp: parent, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, msgs...)
		if hasMore != (next != "") {
			t.Fatalf("has_more %v with cursor %q", hasMore, next)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	var texts []string
	for _, m := range all {
		texts = append(texts, m.Text)
		if m.ThreadTimestamp != parent {
			t.Errorf("%s: thread_ts %q", m.Text, m.ThreadTimestamp)
		}
	}
	if pages != 3 || strings.Join(texts, ",") != "parent,r2,r1,r3,r4" {
		t.Fatalf("%d pages: %v", pages, texts)
	}
	if all[0].ReplyCount != 4 || all[1].BotID != DefaultBotID || all[2].ParentUserId != "U1" ||
		all[4].User != DefaultBotUserID || all[4].BotID != DefaultBotID {
		t.Fatalf("messages = %+v", all)
	}

	msgs, hasMore, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent})
	if err != nil || hasMore || len(msgs) != 5 {
		t.Fatalf("default limit: %d %v %v", len(msgs), hasMore, err)
	}
	// A message without replies is its own one-message thread.
	lone := srv.ChannelMessages("C1")[len(srv.ChannelMessages("C1"))-2]
	if lone.Text != "unrelated" {
		t.Fatalf("channel order: %+v", srv.ChannelMessages("C1"))
	}
	msgs, _, _, err = api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: lone.TS})
	if err != nil || len(msgs) != 1 || msgs[0].ReplyCount != 0 {
		t.Fatalf("lone: %+v %v", msgs, err)
	}
	for _, tc := range []struct {
		p    slack.GetConversationRepliesParameters
		want string
	}{
		{slack.GetConversationRepliesParameters{ChannelID: "C404", Timestamp: parent}, "channel_not_found"},
		{slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.1"}, "thread_not_found"},
		{slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent, Cursor: "bogus"}, "invalid_cursor"},
	} {
		if _, _, _, err := api.GetConversationReplies(&tc.p); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
	// SetThread replaces the whole thread.
	srv.SetThread("C1", parent, []Message{{User: "U1", Text: "only", TS: parent}})
	msgs, _, _, _ = api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent})
	if len(msgs) != 1 || msgs[0].Text != "only" {
		t.Fatalf("after SetThread: %+v", msgs)
	}
}

// conversations.history: top-level messages, newest first, in the
// oldest/latest window, paginated; metadata only when asked for.
func TestConversationsHistoryAndMetadata(t *testing.T) {
	srv, api := newServer(t, Options{})
	srv.AddMessage("D1", Message{User: "U1", Text: "m1", TS: "1700000200.000100"})
	srv.SetThread("D1", "1700000200.000100", []Message{{User: "U1", Text: "m1", TS: "1700000200.000100"},
		{User: "U2", Text: "in thread", TS: "1700000200.000150"}})
	meta := slack.SlackMetadata{EventType: "mnemo_reply", EventPayload: map[string]any{"reply_to": "x", "part": 1}}
	for _, text := range []string{"r1", "r2", "r3"} {
		if _, _, err := api.PostMessage("D1", slack.MsgOptionText(text, false), slack.MsgOptionMetadata(meta)); err != nil {
			t.Fatal(err)
		}
	}
	texts := func(msgs []slack.Message) string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Text)
		}
		return strings.Join(out, ",")
	}
	var all []slack.Message
	cursor, pages := "", 0
	for {
		res, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "D1", Limit: 2,
			Cursor: cursor, Oldest: "1700000200.000100", IncludeAllMetadata: true})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, res.Messages...)
		if cursor = res.ResponseMetaData.NextCursor; cursor == "" || !res.HasMore {
			break
		}
	}
	if pages != 2 || texts(all) != "r3,r2,r1" {
		t.Fatalf("%d pages: %s", pages, texts(all))
	}
	if all[0].Metadata.EventType != "mnemo_reply" || all[0].Metadata.EventPayload["reply_to"] != "x" ||
		all[0].Metadata.EventPayload["part"] != float64(1) || all[0].BotID != DefaultBotID {
		t.Errorf("metadata %+v", all[0])
	}
	res, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "D1",
		Oldest: "1700000200.000100", Inclusive: true, Latest: all[2].Timestamp})
	if err != nil || texts(res.Messages) != "r1,m1" || res.Messages[0].Metadata.EventType != "" {
		t.Fatalf("window: %s %+v %v", texts(res.Messages), res.Messages, err)
	}
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "D1",
		Timestamp: "1700000200.000100", IncludeAllMetadata: true})
	if err != nil || texts(msgs) != "m1,in thread" {
		t.Fatalf("replies %s %v", texts(msgs), err)
	}
	if _, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "D404"}); err == nil ||
		err.Error() != "channel_not_found" {
		t.Errorf("unknown channel: %v", err)
	}
	if _, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "D1", Cursor: "bogus"}); err == nil ||
		err.Error() != "invalid_cursor" {
		t.Errorf("bad cursor: %v", err)
	}
	for _, bad := range []slack.SlackMetadata{{EventType: "", EventPayload: map[string]any{"a": 1}}, {EventType: "t"}} {
		if _, _, err := api.PostMessage("D1", slack.MsgOptionText("x", false), slack.MsgOptionMetadata(bad)); err == nil ||
			err.Error() != "invalid_metadata_format" {
			t.Errorf("metadata %+v: %v", bad, err)
		}
	}
}

func TestFaults(t *testing.T) {
	srv, api := newServer(t, Options{})
	srv.FailNext("chat.postMessage", RateLimited(2*time.Second))
	_, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("err = %#v", err)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	srv.FailNextN("chat.postMessage", 2, RateLimited(1500*time.Millisecond))
	for range 2 {
		if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false)); !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
			t.Fatalf("err = %v", err)
		}
	}
	srv.FailNext("chat.postMessage", APIError("channel_not_found"))
	srv.FailNext("chat.postMessage", HTTPError(http.StatusInternalServerError))
	var se slack.SlackErrorResponse
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false)); !errors.As(err, &se) || se.Err != "channel_not_found" {
		t.Fatalf("err = %v", err)
	}
	var sce slack.StatusCodeError
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false)); !errors.As(err, &sce) || sce.Code != 500 {
		t.Fatalf("err = %v", err)
	}
	srv.FailNext("auth.test", APIError("ratelimited"))
	srv.ClearFaults()
	if _, err := api.AuthTest(); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls("chat.postMessage")
	var got []string
	for _, c := range calls {
		got = append(got, c.Error)
	}
	if strings.Join(got, ",") != "ratelimited,,ratelimited,ratelimited,channel_not_found,Internal Server Error" ||
		calls[0].Status != 429 || calls[5].Status != 500 {
		t.Fatalf("errors = %q", got)
	}
	if len(srv.Posts()) != 1 {
		t.Fatal("failed posts recorded as posts")
	}
	for f, want := range map[Fault]string{RateLimited(0): "429 Retry-After 0", APIError("x"): "error x",
		HTTPError(503): "HTTP 503"} {
		if f.String() != want {
			t.Errorf("%q != %q", f.String(), want)
		}
	}
	// A 429 on apps.connections.open makes socketmode back off by Retry-After.
	srv.FailNext("apps.connections.open", RateLimited(time.Second))
	c := startClient(t, api)
	ev := c.next(t, socketmode.EventTypeConnectionError)
	if ce := ev.Data.(*slack.ConnectionErrorEvent); !errors.As(ce.ErrorObj, &rl) || ce.Backoff < time.Second {
		t.Fatalf("connection error = %+v", ce)
	}
	c.next(t, socketmode.EventTypeHello)
}

func TestReactionsStatusUsers(t *testing.T) {
	srv, api := newServer(t, Options{})
	item := slack.NewRefToMessage("C1", "1700000000.000100")
	if err := api.AddReaction("eyes", item); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReaction("eyes", item); err == nil || err.Error() != "already_reacted" {
		t.Fatal(err)
	}
	if err := api.RemoveReaction("eyes", item); err != nil {
		t.Fatal(err)
	}
	if err := api.RemoveReaction("eyes", item); err == nil || err.Error() != "no_reaction" {
		t.Fatal(err)
	}
	if err := api.AddReaction("", item); err == nil || err.Error() != "invalid_name" {
		t.Fatal(err)
	}
	if err := api.AddReaction("x", slack.ItemRef{}); err == nil || err.Error() != "no_item_specified" {
		t.Fatal(err)
	}
	r := srv.Reactions()
	if len(r) != 2 || r[0].Method != "reactions.add" || r[1].Method != "reactions.remove" || r[0].Name != "eyes" ||
		r[0].Channel != "C1" || r[0].Timestamp != "1700000000.000100" {
		t.Fatalf("reactions = %+v", r)
	}

	if err := api.SetAssistantThreadsStatus(slack.AssistantThreadsSetStatusParameters{ChannelID: "D1",
		ThreadTS: "1.2", Status: "is thinking…", LoadingMessages: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := api.SetAssistantThreadsStatus(slack.AssistantThreadsSetStatusParameters{}); err == nil {
		t.Fatal("status without channel accepted")
	}
	st := srv.Statuses()
	if len(st) != 1 || st[0].ChannelID != "D1" || st[0].ThreadTS != "1.2" || st[0].Status != "is thinking…" ||
		strings.Join(st[0].LoadingMessages, "|") != "a|b" {
		t.Fatalf("statuses = %+v", st)
	}

	srv.SetUser(User{ID: "U7", Name: "zhang", RealName: "Zhang San", DisplayName: "zs", TZ: "Asia/Shanghai"})
	u, err := api.GetUserInfo("U7")
	if err != nil || u.Name != "zhang" || u.RealName != "Zhang San" || u.Profile.DisplayName != "zs" ||
		u.TZ != "Asia/Shanghai" || u.TeamID != DefaultTeamID || u.IsBot {
		t.Fatalf("user = %+v, %v", u, err)
	}
	if u, err := api.GetUserInfo(DefaultBotUserID); err != nil || !u.IsBot {
		t.Fatalf("bot user = %+v, %v", u, err)
	}
	if _, err := api.GetUserInfo("U404"); err == nil || err.Error() != "user_not_found" {
		t.Fatal(err)
	}
}

func TestUnknownAndCustomMethods(t *testing.T) {
	srv, api := newServer(t, Options{})
	if _, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C1"}); err == nil || err.Error() != "unknown_method" {
		t.Fatalf("err = %v", err)
	}
	if got := srv.UnknownMethods(); len(got) != 1 || got[0] != "conversations.info" {
		t.Fatalf("unknown = %v", got)
	}
	srv.HandleMethod("conversations.info", func(c Call) any {
		return map[string]any{"ok": true, "channel": map[string]any{"id": c.Params.Get("channel"), "is_im": true}}
	})
	ch, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "D5"})
	if err != nil || ch.ID != "D5" || !ch.IsIM {
		t.Fatalf("channel = %+v, %v", ch, err)
	}
	srv.HandleMethod("conversations.join", func(Call) any { return nil })
	if _, _, _, err := api.JoinConversation("C1"); err != nil {
		t.Fatal(err)
	}
	srv.HandleMethod("conversations.mark", func(Call) any { return map[string]any{"ok": false, "error": "not_in_channel"} })
	if err := api.MarkConversation("C1", "1.1"); err == nil || err.Error() != "not_in_channel" {
		t.Fatal(err)
	}
	if c := srv.Calls("conversations.mark"); len(c) != 1 || c[0].OK || c[0].Error != "not_in_channel" {
		t.Fatalf("calls = %+v", c)
	}
	// Custom methods still check the token.
	bad := slack.New("xoxb-bad", slack.OptionAPIURL(srv.APIURL()))
	if _, _, _, err := bad.JoinConversation("C1"); err == nil || err.Error() != "invalid_auth" {
		t.Fatal(err)
	}
	if _, err := srv.WaitCalls("conversations.join", 2, wait); err != nil {
		t.Fatal(err)
	}
}

func TestJSONBodyAndGET(t *testing.T) {
	srv, _ := newServer(t, Options{})
	req, _ := http.NewRequest("POST", srv.APIURL()+"chat.postMessage",
		strings.NewReader(`{"channel":"C1","text":"hi","thread_ts":"1.1","blocks":[{"type":"divider"}],"unfurl_links":false}`))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+DefaultBotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		OK bool   `json:"ok"`
		TS string `json:"ts"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if !out.OK || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("response %+v", out)
	}
	p := srv.Posts()[0]
	if p.Text != "hi" || p.ThreadTS != "1.1" || string(p.Blocks) != `[{"type":"divider"}]` ||
		p.Params.Get("unfurl_links") != "false" {
		t.Fatalf("post = %+v", p)
	}
	if c := srv.Calls("chat.postMessage")[0]; !c.TokenInHeader || !strings.HasPrefix(c.ContentType, "application/json") {
		t.Fatalf("call = %+v", c)
	}
	resp, err = http.Get(srv.APIURL() + "users.info?user=" + DefaultBotUserID + "&token=" + DefaultBotToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := srv.Calls("users.info")[0]; !c.OK || c.HTTPMethod != "GET" {
		t.Fatalf("call = %+v", c)
	}
}

func TestSocketModeEventsAPI(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, hello := connected(t, api)
	if hello.Request.NumConnections != 1 || hello.Request.ConnectionInfo.AppID != DefaultAppID ||
		hello.Request.DebugInfo.Host == "" {
		t.Fatalf("hello = %+v", hello.Request)
	}

	env := srv.Message(MessageEvent{Text: "hello bot", ThreadTS: "1700000000.000050"})
	ev := c.next(t, socketmode.EventTypeEventsAPI)
	if ev.Request.EnvelopeID != env.ID || ev.Request.RetryAttempt != 0 || ev.Request.AcceptsResponsePayload {
		t.Fatalf("request = %+v", ev.Request)
	}
	outer, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok || outer.Type != slackevents.CallbackEvent || outer.TeamID != DefaultTeamID || outer.APIAppID != DefaultAppID {
		t.Fatalf("data = %#v", ev.Data)
	}
	cb := outer.Data.(*slackevents.EventsAPICallbackEvent)
	if cb.EventID != env.EventID || !strings.HasPrefix(cb.EventID, "Ev") || cb.EventTime == 0 ||
		len(cb.Authorizations) != 1 || cb.Authorizations[0].UserID != DefaultBotUserID {
		t.Fatalf("callback = %+v", cb)
	}
	msg, ok := outer.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || msg.ChannelType != "im" || msg.Channel != DefaultDMChannel || msg.User != DefaultUserID ||
		msg.Text != "hello bot" || msg.TimeStamp != env.TS || msg.ThreadTimeStamp != "1700000000.000050" ||
		msg.ClientMsgID == "" || msg.BotID != "" || msg.SubType != "" || msg.EventTimeStamp != env.TS {
		t.Fatalf("message = %+v", msg)
	}
	if err := c.sm.Ack(*ev.Request); err != nil {
		t.Fatal(err)
	}
	ack, err := srv.WaitAck(env.ID, wait)
	if err != nil || ack.Payload != nil || ack.Conn != 1 || ack.Latency <= 0 || ack.Latency > wait {
		t.Fatalf("ack = %+v, %v", ack, err)
	}

	// The bot's own message and an edit.
	srv.Message(MessageEvent{Text: "my reply", BotID: DefaultBotID})
	ev = c.next(t, socketmode.EventTypeEventsAPI)
	msg = ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent)
	if msg.BotID != DefaultBotID || msg.User != DefaultBotUserID || msg.ClientMsgID != "" {
		t.Fatalf("bot message = %+v", msg)
	}
	srv.Message(MessageEvent{SubType: "message_changed", TS: env.TS, Text: "hello bot (edited)", PreviousText: "hello bot"})
	ev = c.next(t, socketmode.EventTypeEventsAPI)
	msg = ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent)
	if msg.SubType != "message_changed" || msg.Message == nil || msg.Message.Text != "hello bot (edited)" ||
		msg.Message.Timestamp != env.TS || msg.PreviousMessage == nil || msg.PreviousMessage.Text != "hello bot" {
		t.Fatalf("edit = %+v", msg)
	}
	if got := srv.ChannelMessages(DefaultDMChannel); got[0].Text != "hello bot (edited)" {
		t.Fatalf("stored = %+v", got)
	}

	// app_mention in a channel, in a thread.
	parent := srv.AddMessage("C9", Message{User: "U3", Text: "root"})
	men := srv.AppMention(AppMentionEvent{Channel: "C9", ThreadTS: parent.TS})
	ev = c.next(t, socketmode.EventTypeEventsAPI)
	am, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok || am.Channel != "C9" || am.User != DefaultUserID || am.Text != "<@U0BOT> hi" || am.TimeStamp != men.TS ||
		am.ThreadTimeStamp != parent.TS {
		t.Fatalf("app_mention = %+v", am)
	}
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C9", Timestamp: parent.TS})
	if err != nil || len(msgs) != 2 || msgs[1].Text != "<@U0BOT> hi" || msgs[1].ParentUserId != "U3" {
		t.Fatalf("thread = %+v %v", msgs, err)
	}

	// Raw inner events pass through untouched.
	srv.EventsAPI(json.RawMessage(`{"type":"reaction_added","user":"U1","reaction":"eyes","item":{"type":"message","channel":"C1","ts":"1.1"},"event_ts":"1.2"}`))
	ev = c.next(t, socketmode.EventTypeEventsAPI)
	if ra, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.ReactionAddedEvent); !ok || ra.Reaction != "eyes" {
		t.Fatalf("raw = %#v", ev.Data)
	}
	srv.EventsAPI(map[string]any{"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages"})
	srv.EventsAPI([]byte(`{"type":"member_joined_channel","user":"U1","channel":"C1"}`))
	c.next(t, socketmode.EventTypeEventsAPI)
	c.next(t, socketmode.EventTypeEventsAPI)
	sent, err := srv.WaitSent(7, wait)
	if err != nil || sent[0].ID != env.ID || sent[0].Conn != 1 || sent[0].Seq >= ack.Seq {
		t.Fatalf("sent = %+v %v", sent, err)
	}
	if acks := srv.Acks(); len(acks) != 1 {
		t.Fatalf("acks = %+v", acks)
	}
}

func TestSlashCommand(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, _ := connected(t, api)
	env := srv.SlashCommand(SlashCommand{Text: "forget all", UserID: "U7"})
	ev := c.next(t, socketmode.EventTypeSlashCommand)
	cmd, ok := ev.Data.(slack.SlashCommand)
	if !ok || cmd.Command != "/memory" || cmd.Text != "forget all" || cmd.UserID != "U7" || cmd.UserName != DefaultUserName ||
		cmd.TeamID != DefaultTeamID || cmd.TeamDomain != DefaultTeamName || cmd.ChannelID != DefaultDMChannel ||
		cmd.ResponseURL != env.ResponseURL || !strings.HasPrefix(cmd.ResponseURL, srv.URL()+"/commands/") ||
		cmd.TriggerID == "" || cmd.APIAppID != DefaultAppID || cmd.Token != DefaultVerificationToken {
		t.Fatalf("command = %+v", cmd)
	}
	if !ev.Request.AcceptsResponsePayload || ev.Request.EnvelopeID != env.ID {
		t.Fatalf("request = %+v", ev.Request)
	}
	if err := c.sm.Ack(*ev.Request, map[string]any{"response_type": "ephemeral", "text": "Forgotten."}); err != nil {
		t.Fatal(err)
	}
	ack, err := srv.WaitAck(env.ID, wait)
	if err != nil || string(ack.Payload) != `{"response_type":"ephemeral","text":"Forgotten."}` {
		t.Fatalf("ack = %s, %v", ack.Payload, err)
	}
	// Acks of 20 KB or more are refused by slack-go itself.
	if err := c.sm.Ack(*ev.Request, map[string]string{"text": strings.Repeat("x", 20*1024)}); err == nil {
		t.Fatal("big ack accepted")
	}

	// A later answer through response_url.
	if _, _, err := api.PostMessage("", slack.MsgOptionResponseURL(cmd.ResponseURL, slack.ResponseTypeEphemeral),
		slack.MsgOptionText("Done later.", false)); err != nil {
		t.Fatal(err)
	}
	res, err := srv.WaitResponses(1, wait)
	if err != nil || res[0].Text != "Done later." || res[0].ResponseType != "ephemeral" ||
		!strings.HasPrefix(cmd.ResponseURL, srv.URL()+res[0].Path) {
		t.Fatalf("responses = %+v %v", res, err)
	}
	resp, err := http.Post(cmd.ResponseURL, "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(srv.Responses()) != 1 {
		t.Fatalf("bad response_url body: %d", resp.StatusCode)
	}
}

func TestInteractiveAndBadFrames(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, _ := connected(t, api)
	srv.Push(Envelope{Type: "interactive", AcceptsResponsePayload: true,
		Payload: json.RawMessage(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"forget","value":"x"}]}`)})
	ev := c.next(t, socketmode.EventTypeInteractive)
	if cb := ev.Data.(slack.InteractionCallback); cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U1" {
		t.Fatalf("interactive = %+v", cb)
	}
	if err := srv.SendRaw([]byte(`{"type":"bogus"}`)); err != nil {
		t.Fatal(err)
	}
	c.next(t, socketmode.EventTypeErrorBadMessage)
	if err := srv.SendRaw([]byte(`{not json`)); err != nil {
		t.Fatal(err)
	}
	c.next(t, socketmode.EventTypeIncomingError)
	// The connection survives both.
	srv.Message(MessageEvent{Text: "still here"})
	c.next(t, socketmode.EventTypeEventsAPI)
	if srv.Connections() != 1 {
		t.Fatalf("%d connections", srv.Connections())
	}
}

func TestDisconnectReconnects(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, _ := connected(t, api)
	if err := srv.Disconnect("refresh_requested"); err != nil {
		t.Fatal(err)
	}
	// Sent between the disconnect and the reconnect: queued, then delivered.
	env := srv.Message(MessageEvent{Text: "after"})
	ev := c.next(t, socketmode.EventTypeConnected)
	if ce := ev.Data.(*socketmode.ConnectedEvent); ce.ConnectionCount != 1 {
		t.Fatalf("connected = %+v", ce)
	}
	if err := srv.WaitConnected(2, wait); err != nil {
		t.Fatal(err)
	}
	ev = c.next(t, socketmode.EventTypeEventsAPI)
	if ev.Request.EnvelopeID != env.ID {
		t.Fatalf("got %s", ev.Request.EnvelopeID)
	}
	if err := srv.WaitOpen(1, wait); err != nil {
		t.Fatal(err)
	}
	conns := srv.Conns()
	if len(conns) != 2 || conns[0].Ticket == conns[1].Ticket || conns[0].ClosedAt.IsZero() || !conns[1].ClosedAt.IsZero() {
		t.Fatalf("conns = %+v", conns)
	}
	if sent := srv.Sent(); sent[len(sent)-1].Conn != 2 {
		t.Fatalf("sent = %+v", sent)
	}
	if n := len(srv.Calls("apps.connections.open")); n != 2 {
		t.Fatalf("%d apps.connections.open", n)
	}
}

func TestDropConnectionReconnects(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, _ := connected(t, api)
	if err := srv.DropConnection(); err != nil {
		t.Fatal(err)
	}
	env := srv.Message(MessageEvent{Text: "queued"})
	if err := srv.WaitConnected(2, wait); err != nil {
		t.Fatal(err)
	}
	ev := c.next(t, socketmode.EventTypeEventsAPI)
	if ev.Request.EnvelopeID != env.ID || srv.Pending() != 0 {
		t.Fatalf("got %s", ev.Request.EnvelopeID)
	}
}

func TestRedeliver(t *testing.T) {
	srv, api := newServer(t, Options{})
	c, _ := connected(t, api)
	env := srv.Message(MessageEvent{Text: "slow"})
	first := c.next(t, socketmode.EventTypeEventsAPI)
	re := srv.Redeliver(env, 1)
	second := c.next(t, socketmode.EventTypeEventsAPI)
	id := func(e socketmode.Event) string {
		return e.Data.(slackevents.EventsAPIEvent).Data.(*slackevents.EventsAPICallbackEvent).EventID
	}
	if second.Request.RetryAttempt != 1 || second.Request.RetryReason != "timeout" ||
		second.Request.EnvelopeID == first.Request.EnvelopeID || second.Request.EnvelopeID != re.ID ||
		id(first) != id(second) || id(second) != env.EventID {
		t.Fatalf("first %+v second %+v", first.Request, second.Request)
	}
	// Attempt 0 again, as after a reconnect.
	srv.Redeliver(env, 0)
	if third := c.next(t, socketmode.EventTypeEventsAPI); third.Request.RetryAttempt != 0 || third.Request.RetryReason != "" || id(third) != env.EventID {
		t.Fatalf("third = %+v", third.Request)
	}
}

func TestAutoRedeliver(t *testing.T) {
	srv, api := newServer(t, Options{RedeliverAfter: 200 * time.Millisecond, MaxRedeliveries: 2})
	c, _ := connected(t, api)
	env := srv.Message(MessageEvent{Text: "never acked"})
	for want := range 3 {
		ev := c.next(t, socketmode.EventTypeEventsAPI)
		if ev.Request.RetryAttempt != want {
			t.Fatalf("attempt %d, want %d", ev.Request.RetryAttempt, want)
		}
	}
	c.none(t, socketmode.EventTypeEventsAPI, 450*time.Millisecond)

	// Acking any delivery stops the retries.
	env2 := srv.Message(MessageEvent{Text: "acked"})
	ev := c.next(t, socketmode.EventTypeEventsAPI)
	_ = c.sm.Ack(*ev.Request)
	c.none(t, socketmode.EventTypeEventsAPI, 450*time.Millisecond)

	srv.SetRedeliverAfter(0)
	srv.Message(MessageEvent{Text: "no retries now"})
	c.next(t, socketmode.EventTypeEventsAPI)
	c.none(t, socketmode.EventTypeEventsAPI, 450*time.Millisecond)

	var ids []string
	for _, e := range srv.Sent() {
		if e.EventID == env.EventID || e.EventID == env2.EventID {
			ids = append(ids, e.EventID)
		}
	}
	if len(ids) != 4 {
		t.Fatalf("deliveries = %v", ids)
	}
}

func TestAutoRedeliverStoppedByClose(t *testing.T) {
	srv := New(t, Options{RedeliverAfter: time.Hour})
	ws := dial(t, srv)
	readFrame(t, ws) // hello
	srv.Message(MessageEvent{Text: "x"})
	readFrame(t, ws)
	srv.Close()
	srv.Close()
	// After Close nothing is sent or queued.
	if env := srv.Message(MessageEvent{Text: "late"}); env.Seq != 0 || srv.Pending() != 0 {
		t.Fatalf("late = %+v", env)
	}
}

func dial(t *testing.T, srv *Server) *websocket.Conn {
	t.Helper()
	api := slack.New(DefaultBotToken, slack.OptionAppLevelToken(DefaultAppToken), slack.OptionAPIURL(srv.APIURL()))
	_, u, err := api.StartSocketModeContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func readFrame(t *testing.T, ws *websocket.Conn) map[string]any {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	var m map[string]any
	if err := ws.ReadJSON(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWireFormatsAndTickets(t *testing.T) {
	srv := New(t, Options{PingInterval: 20 * time.Millisecond})
	api := slack.New(DefaultBotToken, slack.OptionAppLevelToken(DefaultAppToken), slack.OptionAPIURL(srv.APIURL()))
	_, u, err := api.StartSocketModeContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ws://127\.0\.0\.1:\d+/link/\?ticket=[0-9a-f]+&app_id=A0APP$`).MatchString(u) {
		t.Fatalf("url = %s", u)
	}
	ws, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	pings := make(chan struct{}, 10)
	ws.SetPingHandler(func(string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return nil
	})
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	_, hello, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"hello","num_connections":1,"debug_info":{"host":"applink-slacktest-1","build_number":1,"approximate_connection_time":18060},"connection_info":{"app_id":"A0APP"}}`; string(hello) != want {
		t.Fatalf("hello = %s", hello)
	}
	// Tickets are single-use; unknown tickets are refused too.
	for _, bad := range []string{u, strings.Replace(u, "ticket=", "ticket=00", 1)} {
		if _, resp, err := websocket.DefaultDialer.Dial(bad, nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("dial %s: %v", bad, err)
		}
	}
	if srv.RejectedDials() != 2 {
		t.Fatalf("rejected = %d", srv.RejectedDials())
	}

	env := srv.Message(MessageEvent{Channel: "D1", User: "U1", Text: "hi", TS: "1700000001.000100", ClientMsgID: "cm"})
	_, frame, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	_ = json.Unmarshal(frame, &got)
	if string(got["type"]) != `"events_api"` || string(got["accepts_response_payload"]) != "false" ||
		string(got["retry_attempt"]) != "0" || string(got["retry_reason"]) != `""` ||
		string(got["envelope_id"]) != `"`+env.ID+`"` {
		t.Fatalf("envelope = %s", frame)
	}
	var payload map[string]json.RawMessage
	_ = json.Unmarshal(got["payload"], &payload)
	if string(payload["type"]) != `"event_callback"` || string(payload["token"]) != `"verification-token"` ||
		string(payload["team_id"]) != `"T0TEAM"` || string(payload["api_app_id"]) != `"A0APP"` ||
		string(payload["event_id"]) != `"`+env.EventID+`"` {
		t.Fatalf("payload = %s", got["payload"])
	}
	if want := `{"client_msg_id":"cm","type":"message","text":"hi","user":"U1","ts":"1700000001.000100","team":"T0TEAM","channel":"D1","event_ts":"1700000001.000100","channel_type":"im"}`; string(payload["event"]) != want {
		t.Fatalf("event = %s", payload["event"])
	}
	// slash_commands carry no retry fields.
	srv.SlashCommand(SlashCommand{})
	_, frame, _ = ws.ReadMessage()
	if bytes.Contains(frame, []byte("retry_attempt")) || !bytes.Contains(frame, []byte(`"accepts_response_payload":true`)) {
		t.Fatalf("slash = %s", frame)
	}
	readDone := make(chan struct{})
	go func() { // control frames are handled while reading
		defer close(readDone)
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	defer func() { ws.Close(); <-readDone }()
	select {
	case <-pings:
	case <-time.After(wait):
		t.Fatal("no ping")
	}
	_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"envelope_id":"`+env.ID+`","payload":{"a":1}}`))
	_ = ws.WriteMessage(websocket.TextMessage, []byte(`garbage`))
	ack, err := srv.WaitAck(env.ID, wait)
	if err != nil || string(ack.Payload) != `{"a":1}` {
		t.Fatalf("ack = %+v %v", ack, err)
	}
	if _, err := srv.WaitAck("nope", 50*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatal(err)
	}
	srv.waitFor(wait, func() bool { return len(srv.acks) == 2 })
	if acks := srv.Acks(); len(acks) != 2 || acks[1].EnvelopeID != "" || string(acks[1].Raw) != "garbage" {
		t.Fatalf("acks = %+v", acks)
	}
}

func TestDisconnectGraceAndErrors(t *testing.T) {
	srv := New(t, Options{DisconnectGrace: 50 * time.Millisecond, PingInterval: -1})
	for _, err := range []error{srv.Disconnect("warning"), srv.DropConnection(), srv.SendRaw([]byte("{}"))} {
		if !errors.Is(err, ErrNoConnection) {
			t.Fatalf("err = %v", err)
		}
	}
	// Queued before anyone connects, delivered right after hello.
	env := srv.Message(MessageEvent{Text: "early"})
	if srv.Pending() != 1 || env.Seq != 0 {
		t.Fatalf("pending %d, env %+v", srv.Pending(), env)
	}
	ws := dial(t, srv)
	if m := readFrame(t, ws); m["type"] != "hello" {
		t.Fatalf("first frame %v", m)
	}
	if m := readFrame(t, ws); m["envelope_id"] != env.ID {
		t.Fatalf("second frame %v", m)
	}
	if err := srv.Disconnect("warning"); err != nil {
		t.Fatal(err)
	}
	if m := readFrame(t, ws); m["type"] != "disconnect" || m["reason"] != "warning" ||
		m["debug_info"].(map[string]any)["host"] != "applink-slacktest-1" {
		t.Fatalf("disconnect frame %v", m)
	}
	// This client does not close: the server does after the grace period.
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("connection still open")
	}
	if err := srv.WaitOpen(0, wait); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"connected": srv.WaitConnected(2, 10*time.Millisecond),
		"open":      srv.WaitOpen(1, 10*time.Millisecond),
	} {
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := srv.WaitPosts(1, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Error(err)
	}
	if _, err := srv.WaitCalls("x", 1, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Error(err)
	}
	if _, err := srv.WaitResponses(1, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Error(err)
	}
	if _, err := srv.WaitSent(5, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Error(err)
	}
}

func TestWriteFailureRequeues(t *testing.T) {
	srv := New(t, Options{})
	ws := dial(t, srv)
	readFrame(t, ws)
	// Break the socket under the server without it noticing yet.
	srv.mu.Lock()
	conn := srv.conns[0]
	srv.mu.Unlock()
	if err := conn.ws.NetConn().(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	env := srv.Message(MessageEvent{Text: "lost?"})
	if env.Seq != 0 || srv.Pending() != 1 || len(srv.Sent()) != 0 || srv.OpenConnections() != 1 {
		t.Fatalf("env %+v pending %d", env, srv.Pending())
	}
	env2 := srv.Message(MessageEvent{Text: "queued behind"})
	ws2 := dial(t, srv)
	readFrame(t, ws2)
	if m := readFrame(t, ws2); m["envelope_id"] != env.ID {
		t.Fatalf("frame %v", m)
	}
	if m := readFrame(t, ws2); m["envelope_id"] != env2.ID {
		t.Fatalf("frame %v", m)
	}
	if sent := srv.Sent(); len(sent) != 2 || sent[0].Conn != 2 {
		t.Fatalf("sent %+v", sent)
	}
}

func TestPingTimeoutReconnects(t *testing.T) {
	// Without server pings slack-go gives up on the connection after its
	// ping interval and reconnects.
	srv, api := newServer(t, Options{PingInterval: -1})
	connected(t, api, socketmode.OptionPingInterval(200*time.Millisecond))
	if err := srv.WaitConnected(2, wait); err != nil {
		t.Fatal(err)
	}
	// With pings it stays: after the client has answered pings for three
	// of its intervals (30 × 20 ms), it is still on its first connection.
	srv2, api2 := newServer(t, Options{PingInterval: 20 * time.Millisecond})
	connected(t, api2, socketmode.OptionPingInterval(200*time.Millisecond))
	if !srv2.waitFor(wait, func() bool { return srv2.pongs >= 30 }) {
		t.Fatal("the client did not answer 30 pings")
	}
	if n := srv2.Connections(); n != 1 {
		t.Fatalf("%d connections", n)
	}
}

func TestRunContextInvalidAuth(t *testing.T) {
	srv := New(t, Options{})
	api := slack.New(DefaultBotToken, slack.OptionAppLevelToken("xapp-wrong"), slack.OptionAPIURL(srv.APIURL()))
	sm := socketmode.New(api)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	go func() {
		for {
			select {
			case <-sm.Events: // RunContext blocks until its events are read
			case <-ctx.Done():
				return
			}
		}
	}()
	err := sm.RunContext(ctx)
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_auth" {
		t.Fatalf("RunContext = %v", err)
	}
}

func TestEchoBotPosts(t *testing.T) {
	srv, api := newServer(t, Options{EchoBotPosts: true})
	c, _ := connected(t, api)
	_, ts, err := api.PostMessage("D1", slack.MsgOptionText("echo me", false))
	if err != nil {
		t.Fatal(err)
	}
	ev := c.next(t, socketmode.EventTypeEventsAPI)
	msg := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent)
	if msg.BotID != DefaultBotID || msg.User != DefaultBotUserID || msg.TimeStamp != ts || msg.Text != "echo me" ||
		msg.ChannelType != "im" {
		t.Fatalf("echo = %+v", msg)
	}
	// Channel posts are not echoed.
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("no echo", false)); err != nil {
		t.Fatal(err)
	}
	c.none(t, socketmode.EventTypeEventsAPI, 200*time.Millisecond)
	if got := srv.ChannelMessages("D1"); len(got) != 1 {
		t.Fatalf("stored = %+v", got)
	}
}

func TestHelpers(t *testing.T) {
	for ch, want := range map[string]string{"C1": "channel", "G1": "group", "D1": "im", "X": "im"} {
		if got := channelType(ch); got != want {
			t.Errorf("%s: %s", ch, got)
		}
	}
	if !(tsKey("9.5") < tsKey("10.1")) || !(tsKey("1.000001") < tsKey("1.5")) || tsKey("1.5") != tsKey("1.500000") {
		t.Fatal("tsKey order")
	}
	srv := New(t, Options{})
	if a, b := srv.NextTS(), srv.NextTS(); a != "1700000000.000100" || b != "1700000000.000200" {
		t.Fatalf("ts %s %s", a, b)
	}
	srv.tsCounter = 9999
	if ts := srv.NextTS(); ts != "1700000001.000000" {
		t.Fatalf("ts %s", ts)
	}
	if opts := srv.Options(); opts.PingInterval != DefaultPingInterval || opts.MaxRedeliveries != DefaultMaxRedeliveries {
		t.Fatalf("opts %+v", opts)
	}
}
