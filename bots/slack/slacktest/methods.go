package slacktest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

func (s *Server) authTest(*Call) apiResult {
	return okResult(map[string]any{
		"url":                   "https://" + s.opts.TeamName + ".slack.com/",
		"team":                  s.opts.TeamName,
		"user":                  s.opts.BotName,
		"team_id":               s.opts.TeamID,
		"user_id":               s.opts.BotUserID,
		"bot_id":                s.opts.BotID,
		"is_enterprise_install": false,
	})
}

func (s *Server) connectionsOpen(*Call) apiResult {
	ticket := faketest.RandomHex(16)
	s.tickets[ticket] = false
	u := "ws://" + strings.TrimPrefix(s.http.URL, "http://") + "/link/?ticket=" + ticket + "&app_id=" + s.opts.AppID
	return okResult(map[string]any{"url": u})
}

// checkContent validates text/blocks/attachments as chat.postMessage does.
func checkContent(p url.Values) string {
	text, blocks, atts := p.Get("text"), p.Get("blocks"), p.Get("attachments")
	if utf8.RuneCountInString(text) > MaxTextLength {
		return "msg_too_long"
	}
	var list []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	if blocks != "" {
		if json.Unmarshal([]byte(blocks), &list) != nil || len(list) > MaxBlocks {
			return "invalid_blocks"
		}
		for _, b := range list {
			if b.Type == "section" && b.Text != nil && utf8.RuneCountInString(b.Text.Text) > MaxSectionTextLength {
				return "invalid_blocks"
			}
		}
	}
	if text == "" && len(list) == 0 && (atts == "" || atts == "[]") {
		return "no_text"
	}
	return ""
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func (s *Server) recordChatLocked(method string, c *Call, ts string) Post {
	p := c.Params
	post := Post{
		Method:         method,
		Channel:        p.Get("channel"),
		Text:           p.Get("text"),
		TS:             ts,
		ThreadTS:       p.Get("thread_ts"),
		User:           p.Get("user"),
		Blocks:         rawOrNil(p.Get("blocks")),
		Attachments:    rawOrNil(p.Get("attachments")),
		Mrkdwn:         p.Get("mrkdwn") != "false",
		ReplyBroadcast: p.Get("reply_broadcast") == "true",
		Time:           c.Time,
		Params:         faketest.CloneValues(p),
	}
	post.Seq = s.nextSeqLocked()
	s.chats = append(s.chats, post)
	return post
}

func (s *Server) chatPostMessage(c *Call) apiResult {
	p := c.Params
	channel := p.Get("channel")
	if channel == "" {
		return errResult("channel_not_found")
	}
	if code := checkContent(p); code != "" {
		return errResult(code)
	}
	ts := s.nextTSLocked()
	meta := rawOrNil(p.Get("metadata"))
	if meta != nil && !validMetadata(meta) {
		return errResult("invalid_metadata_format")
	}
	msg := Message{Type: "message", User: s.opts.BotUserID, BotID: s.opts.BotID, AppID: s.opts.AppID,
		Text: p.Get("text"), TS: ts, ThreadTS: p.Get("thread_ts"), Team: s.opts.TeamID,
		Blocks: rawOrNil(p.Get("blocks")), Metadata: meta}
	s.storeLocked(channel, msg)
	s.recordChatLocked("chat.postMessage", c, ts)
	res := okResult(map[string]any{"channel": channel, "ts": ts, "message": msg})
	if s.opts.EchoBotPosts && strings.HasPrefix(channel, "D") {
		echo := MessageEvent{Channel: channel, User: s.opts.BotUserID, BotID: s.opts.BotID,
			AppID: s.opts.AppID, Text: msg.Text, TS: ts, ThreadTS: msg.ThreadTS, Blocks: msg.Blocks}
		res.after = func() { s.EventsAPI(echo) }
	}
	return res
}

func (s *Server) chatPostEphemeral(c *Call) apiResult {
	p := c.Params
	if p.Get("channel") == "" {
		return errResult("channel_not_found")
	}
	if p.Get("user") == "" {
		return errResult("user_not_in_channel")
	}
	if code := checkContent(p); code != "" {
		return errResult(code)
	}
	ts := s.nextTSLocked()
	s.recordChatLocked("chat.postEphemeral", c, ts)
	return okResult(map[string]any{"message_ts": ts})
}

func (s *Server) findLocked(channel, ts string) int {
	for i, m := range s.channels[channel] {
		if m.TS == ts {
			return i
		}
	}
	return -1
}

// messageLocked finds the message that the channel and ts parameters name
// (i < 0 when there is none).
func (s *Server) messageLocked(p url.Values) (channel, ts string, i int) {
	channel, ts = p.Get("channel"), p.Get("ts")
	return channel, ts, s.findLocked(channel, ts)
}

func (s *Server) chatUpdate(c *Call) apiResult {
	p := c.Params
	channel, ts, i := s.messageLocked(p)
	if i < 0 {
		return errResult("message_not_found")
	}
	if s.streaming[channel+"/"+ts] { // stop the stream first
		return errResult("cant_update_message")
	}
	if code := checkContent(p); code != "" {
		return errResult(code)
	}
	msg := &s.channels[channel][i]
	msg.Text = p.Get("text")
	if b := p.Get("blocks"); b != "" {
		msg.Blocks = rawOrNil(b)
	}
	s.recordChatLocked("chat.update", c, ts)
	return okResult(map[string]any{"channel": channel, "ts": ts, "text": msg.Text, "message": *msg})
}

func (s *Server) chatDelete(c *Call) apiResult {
	channel, ts, i := s.messageLocked(c.Params)
	if i < 0 {
		return errResult("message_not_found")
	}
	msgs := s.channels[channel]
	s.channels[channel] = append(msgs[:i:i], msgs[i+1:]...)
	s.recordChatLocked("chat.delete", c, ts)
	return okResult(map[string]any{"channel": channel, "ts": ts})
}

func (s *Server) conversationsReplies(c *Call) apiResult {
	p := c.Params
	channel, ts := p.Get("channel"), p.Get("ts")
	all, known := s.channels[channel]
	if !known {
		return errResult("channel_not_found")
	}
	var parent *Message
	var thread []Message
	for _, m := range all {
		switch {
		case m.TS == ts:
			mm := m
			parent = &mm
		case m.ThreadTS == ts:
			thread = append(thread, m)
		}
	}
	if parent == nil && len(thread) == 0 {
		return errResult("thread_not_found")
	}
	sortMessages(thread)
	var msgs []Message
	if parent != nil {
		if len(thread) > 0 {
			parent.ThreadTS = ts
			if parent.ReplyCount == 0 {
				parent.ReplyCount = len(thread)
			}
		}
		msgs = append(msgs, *parent)
		for i := range thread {
			if thread[i].ParentUserID == "" {
				thread[i].ParentUserID = parent.User
			}
		}
	}
	msgs = append(msgs, thread...)

	return page(msgs, p, MaxRepliesLimit)
}

// conversationsHistory answers the channel's top-level messages (thread
// replies left out), newest first, after oldest and before latest (both
// excluded unless inclusive), with limit (default 100) and cursor
// pagination.
func (s *Server) conversationsHistory(c *Call) apiResult {
	p := c.Params
	all, known := s.channels[p.Get("channel")]
	if !known {
		return errResult("channel_not_found")
	}
	inclusive := p.Get("inclusive") == "1" || p.Get("inclusive") == "true"
	oldest, latest := p.Get("oldest"), p.Get("latest")
	var msgs []Message
	for _, m := range all {
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue
		}
		k := tsKey(m.TS)
		if oldest != "" && (k < tsKey(oldest) || k == tsKey(oldest) && !inclusive) {
			continue
		}
		if latest != "" && (k > tsKey(latest) || k == tsKey(latest) && !inclusive) {
			continue
		}
		msgs = append(msgs, m)
	}
	sortMessages(msgs)
	slices.Reverse(msgs)
	return page(msgs, p, 100)
}

// page answers one page of msgs as conversations.replies and
// conversations.history do: limit (default def, at most MaxRepliesLimit)
// messages from the cursor on, and the cursor of the next page.
func page(msgs []Message, p url.Values, def int) apiResult {
	limit := def
	if n, err := strconv.Atoi(p.Get("limit")); err == nil && n > 0 && n < MaxRepliesLimit {
		limit = n
	}
	start := 0
	if cur := p.Get("cursor"); cur != "" {
		start = -1
		if raw, err := base64.StdEncoding.DecodeString(cur); err == nil {
			if next, ok := strings.CutPrefix(string(raw), "next_ts:"); ok {
				for i, m := range msgs {
					if m.TS == next {
						start = i
						break
					}
				}
			}
		}
		if start < 0 {
			return errResult("invalid_cursor")
		}
	}
	end := min(start+limit, len(msgs))
	nextCursor := ""
	if end < len(msgs) {
		nextCursor = base64.StdEncoding.EncodeToString([]byte("next_ts:" + msgs[end].TS))
	}
	return okResult(map[string]any{
		"messages":          withMetadata(msgs[start:end], includeMetadata(p)),
		"has_more":          nextCursor != "",
		"response_metadata": map[string]any{"next_cursor": nextCursor},
	})
}

func includeMetadata(p url.Values) bool {
	v := p.Get("include_all_metadata")
	return v == "1" || v == "true"
}

// withMetadata is msgs with their metadata, or without it (a copy) when
// not asked for, as Slack answers.
func withMetadata(msgs []Message, include bool) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if !include {
			m.Metadata = nil
		}
		out[i] = m
	}
	return out
}

// validMetadata: an object with a non-empty event_type and an object
// event_payload, as chat.postMessage requires.
func validMetadata(raw json.RawMessage) bool {
	var m struct {
		EventType    string          `json:"event_type"`
		EventPayload json.RawMessage `json:"event_payload"`
	}
	if json.Unmarshal(raw, &m) != nil || m.EventType == "" {
		return false
	}
	var payload map[string]any
	return json.Unmarshal(m.EventPayload, &payload) == nil && payload != nil
}

func (s *Server) reaction(c *Call, add bool) apiResult {
	p := c.Params
	name, channel, ts := p.Get("name"), p.Get("channel"), p.Get("timestamp")
	if channel == "" || ts == "" {
		return errResult("no_item_specified")
	}
	if name == "" {
		return errResult("invalid_name")
	}
	key := channel + "\x00" + ts + "\x00" + name
	switch {
	case add && s.reactionSet[key]:
		return errResult("already_reacted")
	case !add && !s.reactionSet[key]:
		return errResult("no_reaction")
	}
	s.reactionSet[key] = add
	s.reactions = append(s.reactions, Reaction{Seq: s.nextSeqLocked(), Method: c.Method, Name: name,
		Channel: channel, Timestamp: ts})
	return okResult(nil)
}

func (s *Server) reactionsAdd(c *Call) apiResult    { return s.reaction(c, true) }
func (s *Server) reactionsRemove(c *Call) apiResult { return s.reaction(c, false) }

func (s *Server) setStatus(c *Call) apiResult {
	p := c.Params
	if p.Get("channel_id") == "" {
		return errResult("channel_not_found")
	}
	st := Status{Seq: s.nextSeqLocked(), ChannelID: p.Get("channel_id"), ThreadTS: p.Get("thread_ts"),
		Status: p.Get("status")}
	if lm := p.Get("loading_messages"); lm != "" {
		st.LoadingMessages = strings.Split(lm, ",")
	}
	s.statuses = append(s.statuses, st)
	return okResult(nil)
}

func (s *Server) usersInfo(c *Call) apiResult {
	u, ok := s.users[c.Params.Get("user")]
	if !ok {
		return errResult("user_not_found")
	}
	return okResult(map[string]any{"user": u.wire()})
}

func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		Text            string          `json:"text"`
		ResponseType    string          `json:"response_type"`
		ReplaceOriginal bool            `json:"replace_original"`
		DeleteOriginal  bool            `json:"delete_original"`
		ThreadTS        string          `json:"thread_ts"`
		Blocks          json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.responses = append(s.responses, Response{Seq: s.nextSeqLocked(), Path: r.URL.Path, Text: msg.Text,
		ResponseType: msg.ResponseType, ReplaceOriginal: msg.ReplaceOriginal, DeleteOriginal: msg.DeleteOriginal,
		ThreadTS: msg.ThreadTS, Blocks: bytes.Clone(msg.Blocks), Body: body})
	s.changes.NotifyLocked()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = io.WriteString(w, `{"ok":true}`)
}
