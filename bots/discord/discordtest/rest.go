package discordtest

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

const apiPrefix = "/api/v9/"

// result is a REST answer; body nil means no body (204).
type result struct {
	status int
	header http.Header
	body   any
	bucket string // route template for X-RateLimit-Bucket
}

func ok(body any) result { return result{status: http.StatusOK, body: body} }

func noContent() result { return result{status: http.StatusNoContent} }

// apiError is Discord's JSON error: {"message":…, "code":…}.
func apiError(status, code int, message string) result {
	return result{status: status, body: map[string]any{"message": message, "code": code}}
}

// formError is 400 "Invalid Form Body" (50035) with Discord's nested errors:
// path "data.content" becomes {"data":{"content":{"_errors":[…]}}}, path ""
// an error of the whole body.
func formError(path, code, message string) result {
	errs := map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	if path != "" {
		parts := strings.Split(path, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			errs = map[string]any{parts[i]: errs}
		}
	}
	return result{status: http.StatusBadRequest, body: map[string]any{
		"message": "Invalid Form Body", "code": 50035, "errors": errs}}
}

func badJSON() result {
	return apiError(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
}

func notFound() result { return apiError(http.StatusNotFound, 0, "404: Not Found") }

func unknownChannel() result { return apiError(http.StatusNotFound, 10003, "Unknown Channel") }

func unknownMessage() result { return apiError(http.StatusNotFound, 10008, "Unknown Message") }

// request is one REST call being answered.
type request struct {
	method string
	path   string   // below /api/v9/
	segs   []string // path split on "/"
	query  url.Values
	header http.Header
	body   []byte
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	key := r.Method + " " + r.URL.Path

	s.mu.Lock()
	var res result
	if f, faulted := s.faults.Take(key, true); faulted {
		res = f.result(s.now())
	} else {
		res = s.routeLocked(r, body)
	}
	s.calls = append(s.calls, Call{Seq: s.nextSeqLocked(), Method: r.Method, Path: r.URL.Path,
		Query: r.URL.Query(), Body: bytes.Clone(body), Header: r.Header.Clone(), Status: res.status, At: s.now()})
	s.changes.NotifyLocked()
	now := s.now()
	s.mu.Unlock()

	h := w.Header()
	if res.header.Get("X-RateLimit-Remaining") == "" {
		// Like Discord, every answer carries its bucket's state; Remaining
		// stays above 0 so discordgo never waits on a normal answer.
		bucket := res.bucket
		if bucket == "" {
			bucket = r.Method + " " + r.URL.Path
		}
		sum := sha1.Sum([]byte(bucket))
		h.Set("X-RateLimit-Limit", "5")
		h.Set("X-RateLimit-Remaining", "4")
		h.Set("X-RateLimit-Reset", formatEpoch(now.Add(1e9)))
		h.Set("X-RateLimit-Reset-After", "1.000")
		h.Set("X-RateLimit-Bucket", hex.EncodeToString(sum[:16]))
	}
	for k, vs := range res.header {
		h[k] = vs
	}
	if res.body == nil {
		w.WriteHeader(res.status)
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(res.status)
	_ = json.NewEncoder(w).Encode(res.body)
}

// routeLocked answers one call; s.mu is held.
func (s *Server) routeLocked(r *http.Request, body []byte) result {
	if !strings.HasPrefix(r.URL.Path, apiPrefix) {
		return notFound()
	}
	rest := strings.TrimPrefix(r.URL.Path, apiPrefix)
	req := &request{method: r.Method, path: rest, segs: strings.Split(rest, "/"), query: r.URL.Query(),
		header: r.Header, body: body}

	auth := r.Header.Get("Authorization")
	authOK := auth == "Bot "+s.opts.Token
	switch {
	case rest == "gateway":
		// No authorization needed, as on Discord.
	case req.segs[0] == "webhooks" || req.segs[0] == "interactions":
		// The interaction token is the credential; a bad Authorization
		// header still fails.
		if auth != "" && !authOK {
			return unauthorized()
		}
	case !authOK:
		return unauthorized()
	}

	type route struct {
		pattern string
		method  string
		handle  func(*request) result
	}
	routes := []route{
		{"gateway", "GET", s.getGateway},
		{"gateway/bot", "GET", s.getGatewayBot},
		{"users/*", "GET", s.getUser},
		{"users/@me/channels", "POST", s.createDM},
		{"channels/*", "GET", s.getChannel},
		{"channels/*/messages", "GET", s.listMessages},
		{"channels/*/messages", "POST", s.postMessage},
		{"channels/*/messages/*", "GET", s.getMessage},
		{"channels/*/messages/*", "PATCH", s.editMessage},
		{"channels/*/typing", "POST", s.postTyping},
		{"applications/*/commands", "GET", s.getCommands},
		{"applications/*/commands", "PUT", s.putCommands},
		{"applications/*/guilds/*/commands", "GET", s.getCommands},
		{"applications/*/guilds/*/commands", "PUT", s.putCommands},
		{"interactions/*/*/callback", "POST", s.interactionCallback},
		{"webhooks/*/*", "POST", s.webhookExecute},
		{"webhooks/*/*/messages/*", "GET", s.webhookMessage},
		{"webhooks/*/*/messages/*", "PATCH", s.webhookEdit},
	}
	pathKnown := false
	for _, rt := range routes {
		if !matchPattern(rt.pattern, req.segs) {
			continue
		}
		pathKnown = true
		if rt.method == req.method {
			res := rt.handle(req)
			res.bucket = rt.method + " " + rt.pattern
			return res
		}
	}
	if pathKnown {
		return apiError(http.StatusMethodNotAllowed, 0, "405: Method Not Allowed")
	}
	return notFound()
}

func unauthorized() result { return apiError(http.StatusUnauthorized, 0, "401: Unauthorized") }

func matchPattern(pattern string, segs []string) bool {
	ps := strings.Split(pattern, "/")
	if len(ps) != len(segs) {
		return false
	}
	for i, p := range ps {
		if segs[i] == "" || (p != "*" && p != segs[i]) {
			return false
		}
	}
	return true
}

// Gateway and users

func (s *Server) getGateway(*request) result {
	return ok(map[string]any{"url": s.gatewayURL})
}

func (s *Server) getGatewayBot(*request) result {
	return ok(map[string]any{"url": s.gatewayURL, "shards": s.opts.Shards,
		"session_start_limit": map[string]any{"total": 1000, "remaining": max(1000-len(s.identifies), 0),
			"reset_after": 86400000, "max_concurrency": 1}})
}

func (s *Server) getUser(req *request) result {
	id := req.segs[1]
	if id == "@me" {
		id = s.opts.BotID
	}
	u, known := s.users[id]
	if !known {
		return apiError(http.StatusNotFound, 10013, "Unknown User")
	}
	return ok(u)
}

// Channels and messages

func (s *Server) getChannel(req *request) result {
	ch, known := s.channels[req.segs[1]]
	if !known {
		return unknownChannel()
	}
	return ok(ch)
}

func (s *Server) postTyping(req *request) result {
	id := req.segs[1]
	if _, known := s.channels[id]; !known {
		return unknownChannel()
	}
	s.typings = append(s.typings, Typing{Seq: s.nextSeqLocked(), ChannelID: id, At: s.now()})
	return noContent()
}

// viewLocked is a stored message as the REST API shows it: content emptied
// when the developer portal denies the message content intent.
func (s *Server) viewLocked(m discordgo.Message) json.RawMessage {
	if !s.opts.contentAllowed() && !s.canSeeContent(m.GuildID, authorID(m), userIDs(m.Mentions)) {
		m = stripContent(m)
	}
	return messageJSON(m)
}

func (s *Server) getMessage(req *request) result {
	id, mid := req.segs[1], req.segs[3]
	if _, known := s.channels[id]; !known {
		return unknownChannel()
	}
	i, found := s.findMessageLocked(id, mid)
	if !found {
		return unknownMessage()
	}
	return ok(s.viewLocked(s.history[id][i]))
}

func (s *Server) listMessages(req *request) result {
	id := req.segs[1]
	if _, known := s.channels[id]; !known {
		return unknownChannel()
	}
	limit := 50
	if v := req.query.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			return formError("limit", "NUMBER_TYPE_COERCE", "Value \""+v+"\" is not int.")
		case n < 1:
			return formError("limit", "NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
		case n > MaxHistoryLimit:
			return formError("limit", "NUMBER_TYPE_MAX", "int value should be less than or equal to 100.")
		}
		limit = n
	}
	anchors := 0
	for _, k := range []string{"before", "after", "around"} {
		if v := req.query.Get(k); v != "" {
			anchors++
			if _, valid := parseSnowflake(v); !valid {
				return formError(k, "NUMBER_TYPE_COERCE", "Value \""+v+"\" is not snowflake.")
			}
		}
	}
	hist := s.history[id]
	var page []discordgo.Message
	switch {
	case anchors > 1:
		return formError("", "ANCHORS_EXCLUSIVE", "Only one of before, after and around can be given.")
	case req.query.Get("before") != "":
		before := req.query.Get("before")
		n := 0
		for n < len(hist) && snowflakeLess(hist[n].ID, before) {
			n++
		}
		page = hist[max(n-limit, 0):n]
	case req.query.Get("after") != "":
		after := req.query.Get("after")
		n := 0
		for n < len(hist) && !snowflakeLess(after, hist[n].ID) {
			n++
		}
		page = hist[n:min(n+limit, len(hist))]
	case req.query.Get("around") != "":
		around := req.query.Get("around")
		n := 0
		for n < len(hist) && snowflakeLess(hist[n].ID, around) {
			n++
		}
		start := max(n-limit/2, 0)
		page = hist[start:min(start+limit, len(hist))]
	default:
		page = hist[max(len(hist)-limit, 0):]
	}
	out := make([]json.RawMessage, 0, len(page))
	for i := len(page) - 1; i >= 0; i-- { // newest first, as Discord answers
		out = append(out, s.viewLocked(page[i]))
	}
	return ok(out)
}

// decodeComponents turns raw component JSON into discordgo's types.
func decodeComponents(raws []json.RawMessage) ([]discordgo.MessageComponent, error) {
	if raws == nil {
		return nil, nil
	}
	out := make([]discordgo.MessageComponent, 0, len(raws))
	for _, raw := range raws {
		c, err := discordgo.MessageComponentFromJSON(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeMessageSend(body []byte) (discordgo.MessageSend, error) {
	var aux struct {
		discordgo.MessageSend
		Components []json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(body, &aux); err != nil {
		return discordgo.MessageSend{}, err
	}
	comps, err := decodeComponents(aux.Components)
	aux.MessageSend.Components = comps
	return aux.MessageSend, err
}

// checkContent applies Discord's rules for a message's content; prefix is
// the form field path ("" or "data.").
func checkContent(prefix, content string, embeds int, others bool) (result, bool) {
	if utf8.RuneCountInString(content) > MaxContentLength {
		return formError(prefix+"content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."), false
	}
	if embeds > MaxEmbeds {
		return formError(prefix+"embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."), false
	}
	if strings.TrimSpace(content) == "" && embeds == 0 && !others {
		return apiError(http.StatusBadRequest, 50006, "Cannot send an empty message"), false
	}
	return result{}, true
}

func (s *Server) postMessage(req *request) result {
	id := req.segs[1]
	ch, known := s.channels[id]
	if !known {
		return unknownChannel()
	}
	if res, refused := s.dmRefusedLocked(ch); refused {
		return res
	}
	send, err := decodeMessageSend(req.body)
	if err != nil {
		return badJSON()
	}
	if res, valid := checkContent("", send.Content, len(send.Embeds),
		len(send.Components) > 0 || len(send.StickerIDs) > 0 || send.Poll != nil); !valid {
		return res
	}
	mid, at := s.newMessageIDLocked()
	m := discordgo.Message{ID: mid, ChannelID: id, GuildID: ch.GuildID, Content: send.Content,
		Timestamp: at, Author: ptr(s.botUser()), Embeds: send.Embeds,
		Components: send.Components, TTS: send.TTS, Flags: send.Flags, Type: discordgo.MessageTypeDefault,
		MentionRoles: []string{}, Attachments: []*discordgo.MessageAttachment{}}
	var replied *discordgo.User
	if ref := send.Reference; ref != nil && ref.Type == discordgo.MessageReferenceTypeDefault {
		refCh := ref.ChannelID
		if refCh == "" {
			refCh = id
		}
		i, found := s.findMessageLocked(refCh, ref.MessageID)
		switch {
		case found && refCh == id:
			target := s.history[refCh][i]
			target.ReferencedMessage = nil
			m.Type = discordgo.MessageTypeReply
			m.MessageReference = &discordgo.MessageReference{MessageID: target.ID, ChannelID: id, GuildID: ch.GuildID}
			m.ReferencedMessage = &target
			replied = target.Author
		case ref.FailIfNotExists == nil || *ref.FailIfNotExists:
			return formError("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
		}
	}
	m.Mentions = s.mentionsLocked(send.Content, send.AllowedMentions, replied)
	s.storeMessageLocked(m)
	s.posts = append(s.posts, Post{Seq: s.nextSeqLocked(), ChannelID: id, Message: m, Body: send,
		RawBody: bytes.Clone(req.body)})
	// Like Discord, the bot's own message comes back over the gateway.
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	return ok(messageJSON(m))
}

func ptr[T any](v T) *T { return &v }

// Application commands

func commandsKey(app, guild string) string { return app + "/" + guild }

func commandPath(req *request) (app, guild string) {
	if len(req.segs) == 5 {
		return req.segs[1], req.segs[3]
	}
	return req.segs[1], ""
}

func (s *Server) getCommands(req *request) result {
	app, guild := commandPath(req)
	if app != s.opts.ApplicationID {
		return apiError(http.StatusForbidden, 50001, "Missing Access")
	}
	cmds := s.commands[commandsKey(app, guild)]
	if cmds == nil {
		cmds = []discordgo.ApplicationCommand{}
	}
	return ok(cmds)
}

func (s *Server) putCommands(req *request) result {
	app, guild := commandPath(req)
	if app != s.opts.ApplicationID {
		return apiError(http.StatusForbidden, 50001, "Missing Access")
	}
	var cmds []discordgo.ApplicationCommand
	if err := json.Unmarshal(req.body, &cmds); err != nil {
		return badJSON()
	}
	old := s.commands[commandsKey(app, guild)]
	seen := map[string]bool{}
	chatInput := 0
	for i := range cmds {
		c := &cmds[i]
		if c.Type == 0 {
			c.Type = discordgo.ChatApplicationCommand
		}
		at := strconv.Itoa(i) + "."
		if res, valid := checkCommand(at, *c); !valid {
			return res
		}
		key := strconv.Itoa(int(c.Type)) + "/" + c.Name
		if seen[key] {
			return formError(at+"name", "APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique")
		}
		seen[key] = true
		if c.Type == discordgo.ChatApplicationCommand {
			chatInput++
		}
		c.ID = ""
		for _, o := range old {
			if o.Type == c.Type && o.Name == c.Name {
				c.ID = o.ID
			}
		}
		if c.ID == "" {
			c.ID = s.newIDLocked()
		}
		c.ApplicationID, c.GuildID, c.Version = app, guild, s.newIDLocked()
	}
	if chatInput > 100 {
		return formError("", "APPLICATION_COMMANDS_TOO_MANY", "Maximum number of application commands reached (100)")
	}
	if cmds == nil {
		cmds = []discordgo.ApplicationCommand{}
	}
	s.commands[commandsKey(app, guild)] = cmds
	s.commandSets = append(s.commandSets, CommandSet{Seq: s.nextSeqLocked(), ApplicationID: app, GuildID: guild,
		Commands: append([]discordgo.ApplicationCommand(nil), cmds...)})
	return ok(cmds)
}

// checkCommand applies Discord's naming rules.
func checkCommand(at string, c discordgo.ApplicationCommand) (result, bool) {
	n := utf8.RuneCountInString(c.Name)
	if n < 1 || n > 32 {
		return formError(at+"name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length."), false
	}
	d := utf8.RuneCountInString(c.Description)
	if c.Type == discordgo.ChatApplicationCommand {
		if strings.ToLower(c.Name) != c.Name || strings.ContainsAny(c.Name, " \t") {
			return formError(at+"name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"), false
		}
		if d < 1 || d > 100 {
			return formError(at+"description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."), false
		}
	} else if d != 0 {
		return formError(at+"description", "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION",
			"Context menu commands cannot have description"), false
	}
	return result{}, true
}
