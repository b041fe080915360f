package slacktest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Slack's documented limits that the fake enforces.
const (
	MaxTextLength        = 40000 // chat.postMessage text, else "msg_too_long"
	MaxSectionTextLength = 3000  // section block text, else "invalid_blocks"
	MaxBlocks            = 50    // blocks per message, else "invalid_blocks"
	MaxRepliesLimit      = 1000  // conversations.replies page size cap and default
)

// Call is one Web API request as the server saw it.
type Call struct {
	Seq           int    // position among every record of the server
	Method        string // e.g. "chat.postMessage"
	HTTPMethod    string // "POST" or "GET"
	ContentType   string
	Token         string     // from "Authorization: Bearer" or the token parameter
	TokenInHeader bool       // the token came in the Authorization header
	Params        url.Values // query + form fields, or top-level JSON fields (non-strings as JSON text)
	Body          []byte     // the raw request body
	Status        int        // HTTP status answered
	OK            bool       // the "ok" answered
	Error         string     // the "error" answered, if any
	Time          time.Time
}

// Post is a successful chat.postMessage, chat.postEphemeral, chat.update,
// chat.delete, chat.startStream, chat.appendStream or chat.stopStream (for
// the three stream methods Text is what the message shows after the call).
type Post struct {
	Seq            int
	Method         string
	Channel        string
	Text           string
	TS             string // ts of the new, updated or deleted message (message_ts for ephemerals)
	ThreadTS       string
	User           string          // chat.postEphemeral's target user
	Blocks         json.RawMessage // nil when not sent
	Attachments    json.RawMessage // nil when not sent
	Mrkdwn         bool            // false only when the client sent mrkdwn=false
	ReplyBroadcast bool
	Params         url.Values
	Time           time.Time // when the call came (the server's clock)
}

func (p Post) clone() Post {
	p.Blocks = bytes.Clone(p.Blocks)
	p.Attachments = bytes.Clone(p.Attachments)
	p.Params = faketest.CloneValues(p.Params)
	return p
}

// Reaction is a successful reactions.add or reactions.remove.
type Reaction struct {
	Seq       int
	Method    string // "reactions.add" or "reactions.remove"
	Name      string
	Channel   string
	Timestamp string
}

// Status is an assistant.threads.setStatus call.
type Status struct {
	Seq             int
	ChannelID       string
	ThreadTS        string
	Status          string // "" clears the status
	LoadingMessages []string
}

// Response is a POST to a slash command's response_url.
type Response struct {
	Seq             int
	Path            string
	Text            string
	ResponseType    string // "ephemeral" or "in_channel"
	ReplaceOriginal bool
	DeleteOriginal  bool
	ThreadTS        string
	Blocks          json.RawMessage
	Body            []byte
}

// User is what users.info answers for a user id registered with SetUser.
type User struct {
	ID          string
	TeamID      string
	Name        string
	RealName    string
	DisplayName string
	TZ          string
	IsBot       bool
	Deleted     bool
}

func (u User) wire() map[string]any {
	return map[string]any{
		"id": u.ID, "team_id": u.TeamID, "name": u.Name, "real_name": u.RealName,
		"deleted": u.Deleted, "is_bot": u.IsBot, "tz": u.TZ,
		"profile": map[string]any{
			"real_name": u.RealName, "display_name": u.DisplayName, "team": u.TeamID,
		},
	}
}

// Message is a stored channel message, as conversations.replies returns it.
type Message struct {
	Type         string          `json:"type"`
	SubType      string          `json:"subtype,omitempty"`
	User         string          `json:"user,omitempty"`
	BotID        string          `json:"bot_id,omitempty"`
	AppID        string          `json:"app_id,omitempty"`
	Text         string          `json:"text"`
	TS           string          `json:"ts"`
	ThreadTS     string          `json:"thread_ts,omitempty"`
	ParentUserID string          `json:"parent_user_id,omitempty"`
	ReplyCount   int             `json:"reply_count,omitempty"`
	Team         string          `json:"team,omitempty"`
	ClientMsgID  string          `json:"client_msg_id,omitempty"`
	Blocks       json.RawMessage `json:"blocks,omitempty"`
	// Metadata is the message metadata a chat.postMessage carried
	// ({"event_type":…,"event_payload":{…}}); conversations.history and
	// conversations.replies return it only with include_all_metadata.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// SetUser registers (or replaces) a user for users.info.
func (s *Server) SetUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.TeamID == "" {
		u.TeamID = s.opts.TeamID
	}
	s.users[u.ID] = u
}

// SetThread replaces the thread rooted at ts in channel with msgs (the first
// one normally being the parent, with TS == ts). Empty Type becomes
// "message", empty TS a fresh NextTS (later than every ts given or stored so
// far), empty ThreadTS ts.
func (s *Server) SetThread(channel, ts string, msgs []Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.channels[channel][:0:0]
	for _, m := range s.channels[channel] {
		if m.TS != ts && m.ThreadTS != ts {
			kept = append(kept, m)
		}
	}
	s.observeTSLocked(ts)
	for _, m := range msgs {
		s.observeTSLocked(m.TS)
	}
	for _, m := range msgs {
		if m.ThreadTS == "" {
			m.ThreadTS = ts
		}
		kept = append(kept, s.fillMessageLocked(m))
	}
	s.channels[channel] = kept
}

// AddMessage stores one message in channel (replacing one with the same ts)
// and returns it with its defaults filled in.
func (s *Server) AddMessage(channel string, m Message) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	m = s.fillMessageLocked(m)
	s.storeLocked(channel, m)
	return m
}

// ChannelMessages returns the messages stored for channel, in ts order.
func (s *Server) ChannelMessages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Message(nil), s.channels[channel]...)
	sortMessages(out)
	return out
}

func (s *Server) fillMessageLocked(m Message) Message {
	if m.Type == "" {
		m.Type = "message"
	}
	if m.TS == "" {
		m.TS = s.nextTSLocked()
	}
	m.Blocks = bytes.Clone(m.Blocks)
	m.Metadata = bytes.Clone(m.Metadata)
	return m
}

func (s *Server) storeLocked(channel string, m Message) {
	s.observeTSLocked(m.TS)
	msgs := s.channels[channel]
	for i := range msgs {
		if msgs[i].TS == m.TS {
			msgs[i] = m
			return
		}
	}
	s.channels[channel] = append(msgs, m)
}

func sortMessages(msgs []Message) {
	sort.SliceStable(msgs, func(i, j int) bool { return tsKey(msgs[i].TS) < tsKey(msgs[j].TS) })
}

// HandleMethod answers method (built-in or not) with fn's result, encoded as
// JSON; a nil result answers {"ok":true}. The bot token is checked first and
// faults still apply. fn runs without the server's lock held.
func (s *Server) HandleMethod(method string, fn func(Call) any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = fn
}

// Calls returns the recorded Web API calls to method, or all calls for "".
func (s *Server) Calls(method string) []Call {
	return faketest.Locked(&s.mu, func() []Call { return s.callsLocked(method) })
}

func (s *Server) callsLocked(method string) []Call {
	return faketest.Select(s.calls, func(c Call) bool { return method == "" || c.Method == method }, Call.clone)
}

func (c Call) clone() Call {
	c.Params = faketest.CloneValues(c.Params)
	c.Body = bytes.Clone(c.Body)
	return c
}

// WaitCalls waits until at least n calls to method ("" for any) have been
// recorded and returns them all.
func (s *Server) WaitCalls(method string, n int, timeout time.Duration) ([]Call, error) {
	return waitRecords(s, n, timeout, strconv.Quote(method)+" calls", func() int { return len(s.callsLocked(method)) },
		func() []Call { return s.Calls(method) })
}

// UnknownMethods returns, in order, the methods called that the server does
// not implement (each answered {"ok":false,"error":"unknown_method"}).
func (s *Server) UnknownMethods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		if c.Error == "unknown_method" {
			out = append(out, c.Method)
		}
	}
	return out
}

// Posts returns the successful chat.postMessage calls in order.
func (s *Server) Posts() []Post { return s.Chat("chat.postMessage") }

// Chat returns the successful chat.* writes to method (chat.postMessage,
// chat.postEphemeral, chat.update, chat.delete), or all of them for "".
func (s *Server) Chat(method string) []Post {
	return faketest.Locked(&s.mu, func() []Post { return s.chatLocked(method) })
}

func (s *Server) chatLocked(method string) []Post {
	return faketest.Select(s.chats, func(p Post) bool { return method == "" || p.Method == method }, Post.clone)
}

// WaitPosts waits until at least n chat.postMessage calls succeeded and
// returns them all.
func (s *Server) WaitPosts(n int, timeout time.Duration) ([]Post, error) {
	return waitRecords(s, n, timeout, "posts", func() int { return len(s.chatLocked("chat.postMessage")) }, s.Posts)
}

// Reactions returns the successful reactions.add / reactions.remove calls.
func (s *Server) Reactions() []Reaction { return faketest.Copy(&s.mu, &s.reactions, nil) }

// Statuses returns the assistant.threads.setStatus calls.
func (s *Server) Statuses() []Status {
	return faketest.Copy(&s.mu, &s.statuses, func(r Status) Status {
		r.LoadingMessages = append([]string(nil), r.LoadingMessages...)
		return r
	})
}

// Responses returns the POSTs to response_url addresses.
func (s *Server) Responses() []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.responsesLocked()
}

func (s *Server) responsesLocked() []Response {
	out := append([]Response(nil), s.responses...)
	for i := range out {
		out[i].Blocks = bytes.Clone(out[i].Blocks)
		out[i].Body = bytes.Clone(out[i].Body)
	}
	return out
}

// WaitResponses waits until at least n response_url POSTs were recorded.
func (s *Server) WaitResponses(n int, timeout time.Duration) ([]Response, error) {
	return waitRecords(s, n, timeout, "responses", func() int { return len(s.responses) }, s.Responses)
}

// apiResult is what a method handler decides.
type apiResult struct {
	status int
	header http.Header
	body   any    // JSON-encoded, unless raw is set
	raw    string // sent as text/html when status != 200
	after  func() // run after the lock is released
}

func okResult(fields map[string]any) apiResult {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["ok"] = true
	return apiResult{status: http.StatusOK, body: fields}
}

func errResult(code string) apiResult {
	return apiResult{status: http.StatusOK, body: map[string]any{"ok": false, "error": code}}
}

var builtinMethods = map[string]func(*Server, *Call) apiResult{
	"auth.test":                   (*Server).authTest,
	"apps.connections.open":       (*Server).connectionsOpen,
	"chat.postMessage":            (*Server).chatPostMessage,
	"chat.postEphemeral":          (*Server).chatPostEphemeral,
	"chat.update":                 (*Server).chatUpdate,
	"chat.startStream":            (*Server).chatStartStream,
	"chat.appendStream":           (*Server).chatAppendStream,
	"chat.stopStream":             (*Server).chatStopStream,
	"chat.delete":                 (*Server).chatDelete,
	"conversations.replies":       (*Server).conversationsReplies,
	"conversations.history":       (*Server).conversationsHistory,
	"reactions.add":               (*Server).reactionsAdd,
	"reactions.remove":            (*Server).reactionsRemove,
	"assistant.threads.setStatus": (*Server).setStatus,
	"users.info":                  (*Server).usersInfo,
	"views.publish":               (*Server).viewsPublish,

	// assistant.go
	"assistant.threads.setSuggestedPrompts": (*Server).setSuggestedPrompts,
	"assistant.threads.setTitle":            (*Server).setTitle,
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	call := Call{
		Method:      strings.TrimPrefix(r.URL.Path, "/api/"),
		HTTPMethod:  r.Method,
		ContentType: r.Header.Get("Content-Type"),
		Body:        body,
		Params:      parseParams(r, body),
		Time:        time.Now(),
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		call.Token, call.TokenInHeader = tok, true
	} else {
		call.Token = call.Params.Get("token")
	}

	// A built-in method's effect (a message posted, updated) and its call
	// record become visible together: a test that saw the message finds
	// the call. A custom handler runs unlocked, and is recorded after it.
	s.mu.Lock()
	res, custom := s.decideLocked(&call)
	if custom != nil {
		s.mu.Unlock()
		out := custom(call)
		if out == nil {
			out = map[string]any{"ok": true}
		}
		res = apiResult{status: http.StatusOK, body: out}
		s.mu.Lock()
	}
	raw, _ := json.Marshal(res.body)
	s.recordLocked(&call, res, raw)
	s.mu.Unlock()

	for k, vs := range res.header {
		w.Header()[k] = vs
	}
	if res.status != http.StatusOK && res.raw != "" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(res.status)
		_, _ = io.WriteString(w, res.raw)
	} else {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(res.status)
		_, _ = w.Write(raw)
	}
	if res.after != nil {
		res.after()
	}
}

// recordLocked completes call with the answer res (raw, its body) and
// records it.
func (s *Server) recordLocked(call *Call, res apiResult, raw []byte) {
	call.Status = res.status
	var answer struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if res.status == http.StatusOK && json.Unmarshal(raw, &answer) == nil {
		call.OK, call.Error = answer.OK, answer.Error
	} else if m, ok := res.body.(map[string]any); ok {
		call.Error, _ = m["error"].(string)
	}
	call.Seq = s.nextSeqLocked()
	s.calls = append(s.calls, *call)
	s.changes.NotifyLocked()
}

// decideLocked applies faults, authentication and the method. It returns a
// custom handler to run unlocked instead when one is registered.
func (s *Server) decideLocked(call *Call) (apiResult, func(Call) any) {
	if f, ok := s.faults.Take(call.Method, false); ok {
		return f.result(), nil
	}
	custom := s.handlers[call.Method]
	builtin := builtinMethods[call.Method]
	if custom == nil && builtin == nil {
		return errResult("unknown_method"), nil
	}
	if code := s.authLocked(call); code != "" {
		return errResult(code), nil
	}
	if custom != nil {
		return apiResult{}, custom
	}
	return builtin(s, call), nil
}

// authLocked returns the error code for a bad token, or "".
func (s *Server) authLocked(call *Call) string {
	if call.Method == "apps.connections.open" {
		// Slack wants the app-level token in the Authorization header here.
		switch {
		case call.TokenInHeader && call.Token == s.opts.AppToken:
			return ""
		case call.Token == "":
			return "not_authed"
		default:
			return "invalid_auth"
		}
	}
	switch call.Token {
	case s.opts.BotToken:
		return ""
	case "":
		return "not_authed"
	default:
		return "invalid_auth"
	}
}

func parseParams(r *http.Request, body []byte) url.Values {
	v := faketest.CloneValues(r.URL.Query())
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil {
			for k, raw := range m {
				var str string
				if json.Unmarshal(raw, &str) == nil {
					v.Add(k, str)
				} else {
					v.Add(k, string(raw))
				}
			}
		}
		return v
	}
	form, _ := url.ParseQuery(string(body))
	for k, vs := range form {
		v[k] = append(v[k], vs...)
	}
	return v
}
