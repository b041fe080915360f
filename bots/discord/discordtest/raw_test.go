package discordtest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// Raw REST

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func do(t *testing.T, srv *discordtest.Server, method, path, body, auth string) answer {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL()+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func (a answer) code() int {
	c, _ := a.body["code"].(float64)
	return int(c)
}

const bot = "Bot test-token"

func TestRawREST(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{})
	if srv.APIURL() != srv.URL()+"api/v9/" || !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Fatalf("urls %s %s", srv.URL(), srv.APIURL())
	}

	a := do(t, srv, "GET", "/api/v9/gateway", "", "")
	if a.status != 200 || a.body["url"] != srv.GatewayURL() || a.header.Get("X-RateLimit-Remaining") != "4" ||
		a.header.Get("X-RateLimit-Bucket") == "" || a.header.Get("X-RateLimit-Reset-After") != "1.000" {
		t.Fatalf("gateway %+v", a)
	}
	for _, tc := range []struct {
		method, path, body, auth string
		status, code             int
	}{
		{"GET", "/api/v9/gateway/bot", "", "", 401, 0},
		{"GET", "/api/v9/gateway/bot", "", "test-token", 401, 0},
		{"GET", "/api/v9/gateway/bot", "", bot, 200, 0},
		{"GET", "/api/v10/users/@me", "", bot, 404, 0},
		{"GET", "/api/v9/guilds/1", "", bot, 404, 0},
		{"GET", "/api/v9/users/", "", bot, 404, 0},
		{"DELETE", "/api/v9/channels/" + channelID, "", bot, 405, 0},
		{"POST", "/api/v9/channels/" + channelID + "/messages", "{", bot, 400, 50109},
		{"POST", "/api/v9/channels/" + channelID + "/messages", `{"content":"x","components":[{"type":99}]}`, bot, 400, 50109},
		{"GET", "/api/v9/channels/" + channelID + "/messages?limit=abc", "", bot, 400, 50035},
		{"GET", "/api/v9/channels/" + channelID + "/messages?limit=0", "", bot, 400, 50035},
		{"GET", "/api/v9/channels/" + channelID + "/messages?before=xyz", "", bot, 400, 50035},
		{"GET", "/api/v9/channels/" + channelID + "/messages?before=1&after=2", "", bot, 400, 50035},
		{"GET", "/api/v9/channels/1/messages/1", "", bot, 404, 10003},
		{"PUT", "/api/v9/applications/" + discordtest.DefaultBotID + "/commands", "{", bot, 400, 50109},
		{"PUT", "/api/v9/applications/" + discordtest.DefaultBotID + "/commands", "", bot, 400, 50109},
		{"POST", "/api/v9/interactions/1/x/callback", "{}", "Bot wrong", 401, 0},
		{"POST", "/api/v9/webhooks/1/x", "{}", "", 404, 10015},
	} {
		a := do(t, srv, tc.method, tc.path, tc.body, tc.auth)
		if a.status != tc.status || a.code() != tc.code {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, a.status, a.raw)
		}
	}
	a = do(t, srv, "GET", "/api/v9/gateway/bot", "", bot)
	limit, _ := a.body["session_start_limit"].(map[string]any)
	if a.body["shards"] != 1.0 || limit["total"] != 1000.0 || limit["remaining"] != 1000.0 {
		t.Fatalf("gateway/bot %s", a.raw)
	}
	a = do(t, srv, "PUT", "/api/v9/applications/"+discordtest.DefaultBotID+"/guilds/"+guildID+"/commands", "[]", bot)
	if a.status != 200 || string(bytes.TrimSpace(a.raw)) != "[]" {
		t.Fatalf("empty overwrite %d %s", a.status, a.raw)
	}
	a = do(t, srv, "POST", "/api/v9/channels/"+channelID+"/messages", `{"content":"`+strings.Repeat("x", 2001)+`"}`, bot)
	errs, _ := a.body["errors"].(map[string]any)
	content, _ := errs["content"].(map[string]any)
	list, _ := content["_errors"].([]any)
	if a.status != 400 || a.code() != 50035 || a.body["message"] != "Invalid Form Body" || len(list) != 1 {
		t.Fatalf("too long %s", a.raw)
	}
	if first, _ := list[0].(map[string]any); first["code"] != "BASE_TYPE_MAX_LENGTH" || first["message"] != "Must be 2000 or fewer in length." {
		t.Fatalf("too long %s", a.raw)
	}

	// Faults: the longest matching route wins; 429 carries Discord's headers.
	srv.FailNext("GET /api/v9/", discordtest.HTTPError(500, 0, "boom"))
	srv.FailNext("GET /api/v9/users/", discordtest.RateLimited(1500*time.Millisecond, true))
	a = do(t, srv, "GET", "/api/v9/users/@me", "", bot)
	if a.status != 429 || a.header.Get("Retry-After") != "2" || a.header.Get("X-RateLimit-Global") != "true" ||
		a.header.Get("X-RateLimit-Scope") != "global" || a.header.Get("X-RateLimit-Remaining") != "0" ||
		a.header.Get("X-RateLimit-Reset-After") != "1.500" || a.body["retry_after"] != 1.5 || a.body["global"] != true ||
		a.body["message"] != "You are being rate limited." {
		t.Fatalf("429 %+v", a)
	}
	a = do(t, srv, "GET", "/api/v9/users/@me", "", bot)
	if a.status != 500 || a.body["message"] != "boom" {
		t.Fatalf("500 %+v", a)
	}
	srv.FailNext("GET /api/v9/users/", discordtest.RateLimited(time.Second, false))
	a = do(t, srv, "GET", "/api/v9/users/@me", "", bot)
	if a.header.Get("X-RateLimit-Scope") != "user" || a.header.Get("X-RateLimit-Global") != "" || a.body["global"] != false {
		t.Fatalf("route 429 %+v", a)
	}

	calls, err := srv.WaitCalls("GET /api/v9/users/@me", 3, wait)
	if err != nil || calls[0].Status != 429 || calls[1].Status != 500 || calls[0].Query == nil {
		t.Fatalf("calls %+v, %v", calls, err)
	}
	if _, err := srv.WaitCalls("PATCH ", 1, 10*time.Millisecond); !errors.Is(err, discordtest.ErrTimeout) {
		t.Fatalf("WaitCalls: %v", err)
	}
}

func TestRawWebhooks(t *testing.T) {
	t.Parallel()
	// The clock stands still: the callback comes eight requests after
	// the interaction, which can be more than its 3-second window of wall
	// time on a loaded machine (a 404 10062 to the callback, the webhook
	// dead after it).
	srv := seeded(t, discordtest.Options{Now: newClock().now})
	i := srv.InteractionCreate(askInteraction())
	cb := "/api/v9/interactions/" + i.ID + "/" + i.Token + "/callback"
	hook := "/api/v9/webhooks/" + i.AppID + "/" + i.Token
	for _, tc := range []struct {
		method, path, body string
		status, code       int
	}{
		{"POST", cb, "{", 400, 50109},
		{"POST", cb, `{"type":4,"data":{"components":[{"type":99}]}}`, 400, 50109},
		{"POST", cb, `{"type":8}`, 400, 50035},
		{"POST", cb, `{"type":4,"data":{"content":"` + strings.Repeat("x", 2001) + `"}}`, 400, 50035},
		{"PATCH", hook + "/messages/@original", `{"content":"x"}`, 404, 10008},
		{"GET", hook + "/messages/@original", "", 404, 10008},
		{"POST", "/api/v9/interactions/" + i.ID + "/wrong/callback", `{"type":5}`, 404, 10062},
		{"POST", "/api/v9/webhooks/1/" + i.Token, `{"content":"x"}`, 404, 10015},
		{"POST", cb, `{"type":4,"data":{"content":"answer","flags":64}}`, 204, 0},
		{"GET", hook + "/messages/@original", "", 200, 0},
		{"PATCH", hook + "/messages/@original", "{", 400, 50109},
		{"PATCH", hook + "/messages/@original", `{"components":[{"type":99}]}`, 400, 50109},
		{"PATCH", hook + "/messages/@original", `{"content":"` + strings.Repeat("x", 2001) + `"}`, 400, 50035},
		{"PATCH", hook + "/messages/@original", `{"content":"ok","embeds":[{"title":"t"}]}`, 200, 0},
		{"PATCH", hook + "/messages/1", `{"content":"x"}`, 404, 10008},
		{"GET", hook + "/messages/1", "", 404, 10008},
		{"POST", hook, "{", 400, 50109},
		{"POST", hook, `{"content":"x","components":[{"type":99}]}`, 400, 50109},
		{"POST", hook, `{}`, 400, 50006},
		{"POST", hook + "?wait=true", `{"content":"more"}`, 200, 0},
	} {
		a := do(t, srv, tc.method, tc.path, tc.body, "")
		if a.status != tc.status || a.code() != tc.code {
			t.Errorf("%s %s %.40s: %d %s", tc.method, tc.path, tc.body, a.status, a.raw)
		}
	}
	// The ephemeral response stays out of the channel; the followup is in it.
	if hist := srv.Messages(channelID); len(hist) != 1 || hist[0].Content != "more" {
		t.Fatalf("history %+v", hist)
	}
	edits := srv.WebhookEdits()
	if len(edits) != 2 || edits[0].Message.Content != "ok" || edits[0].Message.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("edits %+v", edits)
	}
}

// Raw gateway

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int            `json:"s"`
	T  *string         `json:"t"`
}

type rawConn struct {
	t  *testing.T
	ws *websocket.Conn
}

// dialRaw connects and reads HELLO.
func dialRaw(t *testing.T, srv *discordtest.Server, query string) *rawConn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(srv.GatewayURL()+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	rc := &rawConn{t: t, ws: ws}
	hello := rc.read()
	var d struct {
		HeartbeatInterval int `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(hello.D, &d); hello.Op != 10 || err != nil || d.HeartbeatInterval != 41250 || hello.S != nil || hello.T != nil {
		t.Fatalf("hello %+v %s", hello, hello.D)
	}
	return rc
}

func (rc *rawConn) send(v any) {
	rc.t.Helper()
	var err error
	if s, isString := v.(string); isString {
		err = rc.ws.WriteMessage(websocket.TextMessage, []byte(s))
	} else {
		err = rc.ws.WriteJSON(v)
	}
	if err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) read() frame {
	rc.t.Helper()
	_ = rc.ws.SetReadDeadline(time.Now().Add(wait))
	_, b, err := rc.ws.ReadMessage()
	if err != nil {
		rc.t.Fatalf("read: %v", err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		rc.t.Fatalf("frame %s: %v", b, err)
	}
	return f
}

func (rc *rawConn) expectClose(code int, reason string) {
	rc.t.Helper()
	_ = rc.ws.SetReadDeadline(time.Now().Add(wait))
	_, b, err := rc.ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != code || ce.Text != reason {
		rc.t.Fatalf("want close %d %q, got %v (%s)", code, reason, err, b)
	}
}

func identifyPayload(token string, intents int, shard *[2]int) map[string]any {
	d := map[string]any{"token": token, "intents": intents, "properties": map[string]string{"os": "linux"}}
	if shard != nil {
		d["shard"] = *shard
	}
	return map[string]any{"op": 2, "d": d}
}

func (rc *rawConn) identify() string {
	rc.t.Helper()
	rc.send(identifyPayload(bot, int(allIntents), nil))
	f := rc.read()
	var ready struct {
		SessionID string `json:"session_id"`
		ResumeURL string `json:"resume_gateway_url"`
	}
	_ = json.Unmarshal(f.D, &ready)
	if f.Op != 0 || f.T == nil || *f.T != "READY" || f.S == nil || *f.S != 1 || ready.SessionID == "" || ready.ResumeURL == "" {
		rc.t.Fatalf("ready %+v %s", f, f.D)
	}
	return ready.SessionID
}

func TestRawGatewayCloseCodes(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{})
	for _, tc := range []struct {
		name, query string
		send        []any
		code        int
		reason      string
	}{
		{"version", "?v=8&encoding=json", nil, 4012, "Invalid API version."},
		{"encoding", "?v=9&encoding=etf", nil, 4002, "Error while decoding payload."},
		{"not json", "", []any{"{"}, 4002, "Error while decoding payload."},
		{"no op", "", []any{`{"d":1}`}, 4002, "Error while decoding payload."},
		{"unknown op", "", []any{`{"op":99}`}, 4001, "Unknown opcode."},
		{"presence first", "", []any{`{"op":3,"d":{}}`}, 4003, "Not authenticated."},
		{"identify garbage", "", []any{`{"op":2,"d":"x"}`}, 4002, "Error while decoding payload."},
		{"resume garbage", "", []any{`{"op":6,"d":"x"}`}, 4002, "Error while decoding payload."},
		{"no intents", "", []any{map[string]any{"op": 2, "d": map[string]any{"token": bot}}}, 4013, "Invalid intent(s)."},
		{"bad shard", "", []any{identifyPayload(bot, 1, &[2]int{2, 2})}, 4010, "Invalid shard."},
		{"resume token", "", []any{map[string]any{"op": 6, "d": map[string]any{"token": "x", "session_id": "s", "seq": 1}}},
			4004, "Authentication failed."},
	} {
		rc := dialRaw(t, srv, tc.query)
		for _, p := range tc.send {
			rc.send(p)
		}
		rc.expectClose(tc.code, tc.reason)
	}

	rc := dialRaw(t, srv, "?v=9&encoding=json")
	rc.identify()
	rc.send(identifyPayload(bot, 1, nil))
	rc.expectClose(4005, "Already authenticated.")
	rc = dialRaw(t, srv, "")
	rc.identify()
	rc.send(map[string]any{"op": 6, "d": map[string]any{"token": bot, "session_id": "s", "seq": 1}})
	rc.expectClose(4005, "Already authenticated.")

	ids, err := srv.WaitIdentifies(4, wait)
	if err != nil || ids[0].CloseCode != 4013 || ids[1].CloseCode != 4010 || ids[1].Shard == nil {
		t.Fatalf("identifies %+v, %v", ids, err)
	}
	if _, err := srv.WaitDisconnects(13, wait); err != nil {
		t.Fatal(err)
	}
	if srv.OpenConnections() != 0 || srv.Connections() != 13 {
		t.Fatalf("open %d of %d", srv.OpenConnections(), srv.Connections())
	}
}

// InvalidNextIdentify: op 9 (d=false) instead of READY, then the close;
// discordgo's answer to op 9, a second IDENTIFY on the closing socket, is
// ignored. The next connection identifies as usual.
func TestRawInvalidNextIdentify(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{})
	srv.InvalidNextIdentify(4000, "Unknown error.")
	rc := dialRaw(t, srv, "")
	rc.send(identifyPayload(bot, int(allIntents), nil))
	if f := rc.read(); f.Op != 9 || string(f.D) != "false" {
		t.Fatalf("first frame after IDENTIFY %+v %s; want op 9 false", f, f.D)
	}
	rc.send(identifyPayload(bot, int(allIntents), nil))
	rc.expectClose(4000, "Unknown error.")
	ids := srv.Identifies()
	if len(ids) != 1 || !ids[0].InvalidSession || ids[0].CloseCode != 4000 || ids[0].SessionID != "" {
		t.Fatalf("identifies %+v", ids)
	}
	if ds, err := srv.WaitDisconnects(1, wait); err != nil || ds[0].ServerCode != 4000 {
		t.Fatalf("disconnects %+v, %v", ds, err)
	}
	dialRaw(t, srv, "").identify()
	if ids := srv.Identifies(); len(ids) != 2 || ids[1].InvalidSession || ids[1].SessionID == "" {
		t.Fatalf("identifies %+v", ids)
	}
}

func TestRawGatewayResume(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{ReplayBuffer: 2})

	// An unknown session: op 9, then IDENTIFY works on the same socket.
	rc := dialRaw(t, srv, "")
	rc.send(map[string]any{"op": 6, "d": map[string]any{"token": bot, "session_id": "nope", "seq": 3}})
	if f := rc.read(); f.Op != 9 || string(f.D) != "false" {
		t.Fatalf("want op 9 false, got %+v %s", f, f.D)
	}
	sessionID := rc.identify()

	for _, c := range []string{"a", "b", "c"} {
		srv.MessageCreate(msg(channelID, c))
		rc.read()
	}
	// A second connection resumes while the first is still open: the first
	// is dropped, events after seq 3 are replayed.
	rc2 := dialRaw(t, srv, "")
	rc2.send(map[string]any{"op": 6, "d": map[string]any{"token": bot, "session_id": sessionID, "seq": 3}})
	if f := rc2.read(); *f.T != "MESSAGE_CREATE" || *f.S != 4 {
		t.Fatalf("replay %+v", f)
	}
	if f := rc2.read(); *f.T != "RESUMED" || *f.S != 5 {
		t.Fatalf("resumed %+v", f)
	}
	if _, _, err := rc.ws.ReadMessage(); err == nil {
		t.Fatal("first connection still open")
	}
	res, err := srv.WaitResumes(2, wait)
	if err != nil || res[0].Accepted || !res[1].Accepted || res[1].Replayed != 1 || res[1].ClientSeq != 3 {
		t.Fatalf("resumes %+v, %v", res, err)
	}

	// seq 2 has left the two-event replay buffer: not resumable any more.
	rc3 := dialRaw(t, srv, "")
	rc3.send(map[string]any{"op": 6, "d": map[string]any{"token": bot, "session_id": sessionID, "seq": 1}})
	if f := rc3.read(); f.Op != 9 {
		t.Fatalf("want op 9, got %+v", f)
	}
	if sess := srv.Sessions(); sess[0].Live {
		t.Fatalf("sessions %+v", sess)
	}

	// Heartbeats are ACKed unless turned off; op 1 from the server asks for one.
	rc3.identify()
	rc3.send(`{"op":1,"d":null}`)
	if f := rc3.read(); f.Op != 11 {
		t.Fatalf("want ACK, got %+v", f)
	}
	srv.SetHeartbeatACKs(false)
	rc3.send(`{"op":3,"d":{"status":"online"}}`) // ignored once identified
	rc3.send(`{"op":1,"d":5}`)
	srv.RequestHeartbeat()
	if f := rc3.read(); f.Op != 1 {
		t.Fatalf("want op 1, got %+v", f)
	}
	if err := srv.WaitHeartbeats(2, wait); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitHeartbeats(3, 10*time.Millisecond); !errors.Is(err, discordtest.ErrTimeout) {
		t.Fatalf("WaitHeartbeats: %v", err)
	}
	if err := srv.WaitReady(10, 10*time.Millisecond); !errors.Is(err, discordtest.ErrTimeout) {
		t.Fatalf("WaitReady: %v", err)
	}
	if _, err := srv.WaitPosts(1, 10*time.Millisecond); !errors.Is(err, discordtest.ErrTimeout) ||
		!strings.Contains(err.Error(), "0 of 1 posts") {
		t.Fatalf("WaitPosts: %v", err)
	}

	// Reconnect: frames from a leaving client are ignored.
	srv.Reconnect()
	if f := rc3.read(); f.Op != 7 {
		t.Fatalf("want op 7, got %+v", f)
	}
	rc3.send(`{"op":99}`)
	srv.CloseConnections(4000, "bye")
	rc3.expectClose(4000, "bye")
}

// SetHeartbeatInterval changes what HELLO says to the connections opened
// after it, and counts those opened before.
func TestSetHeartbeatInterval(t *testing.T) {
	srv := discordtest.New(t, discordtest.Options{})
	dialRaw(t, srv, "")
	if before := srv.SetHeartbeatInterval(1500 * time.Millisecond); before != 1 {
		t.Errorf("SetHeartbeatInterval: %d connections before; want 1", before)
	}
	ws, _, err := websocket.DefaultDialer.Dial(srv.GatewayURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	hello := (&rawConn{t: t, ws: ws}).read()
	var d struct {
		HeartbeatInterval int `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(hello.D, &d); hello.Op != 10 || err != nil || d.HeartbeatInterval != 1500 {
		t.Errorf("hello after the change %+v %s", hello, hello.D)
	}
}
