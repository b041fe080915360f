package discordtest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// session is a gateway session: it outlives its connection so that a RESUME
// can continue it.
type session struct {
	id      string
	shard   [2]int
	intents int
	seq     int // last sequence number used
	evicted int // highest seq dropped from buf because it was full
	buf     []bufferedEvent
	conn    *conn // nil while no connection carries it
	live    bool  // false once invalidated or superseded
}

type bufferedEvent struct {
	s             int
	typ           string
	data          json.RawMessage
	interactionID string
}

func (be bufferedEvent) frame(connID int, sessionID string, replayed bool) outFrame {
	return outFrame{data: dispatchFrame(be.typ, be.s, be.data), interactionID: be.interactionID,
		event: &Event{Conn: connID, SessionID: sessionID, S: be.s, Type: be.typ, Data: be.data, Replayed: replayed}}
}

// pendingEvent waits for the first session that owns it.
type pendingEvent struct {
	typ           string
	data          json.RawMessage
	guildID       string
	interactionID string
}

// SessionInfo describes one gateway session.
type SessionInfo struct {
	ID      string
	Shard   [2]int
	Intents int
	Seq     int  // last sequence number dispatched
	Conn    int  // connection carrying it, 0 if none
	Live    bool // false once invalidated or replaced by a new IDENTIFY for its shard
}

// Sessions returns every session in the order they were created.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, len(s.sessions))
	for i, sess := range s.sessions {
		out[i] = SessionInfo{ID: sess.id, Shard: sess.shard, Intents: sess.intents, Seq: sess.seq, Live: sess.live}
		if sess.conn != nil {
			out[i].Conn = sess.conn.id
		}
	}
	return out
}

// Dropped is the number of events that were not delivered because the
// session that would have carried them had ended (as Discord loses them).
func (s *Server) Dropped() int { return faketest.Locked(&s.mu, func() int { return s.dropped }) }

func (s *Server) newSessionLocked(shard [2]int, intents int) *session {
	for _, old := range s.sessions {
		if old.live && old.shard == shard {
			old.live = false // a new IDENTIFY replaces the shard's session
		}
	}
	sess := &session{id: faketest.RandomHex(16), shard: shard, intents: intents, live: true}
	s.sessions = append(s.sessions, sess)
	return sess
}

func (s *Server) sessionLocked(id string) *session {
	for _, sess := range s.sessions {
		if sess.id == id {
			return sess
		}
	}
	return nil
}

// ShardFor is the shard that receives events of guildID among count shards:
// (guild_id >> 22) % count, and 0 for DMs (guildID "").
func ShardFor(guildID string, count int) int {
	if count <= 1 || guildID == "" {
		return 0
	}
	id, _ := parseSnowflake(guildID)
	return int((id >> 22) % uint64(count))
}

func (sess *session) owns(guildID string) bool {
	return ShardFor(guildID, sess.shard[1]) == sess.shard[0]
}

// dispatchLocked routes one event: to the live session of its shard, else
// (when no session ever owned it) to the pending queue, else nowhere. It
// returns the sequence number, 0 when not dispatched now.
func (s *Server) dispatchLocked(ev pendingEvent) int {
	for i := len(s.sessions) - 1; i >= 0; i-- {
		if sess := s.sessions[i]; sess.live && sess.owns(ev.guildID) {
			return s.sendLocked(sess, ev)
		}
	}
	for _, sess := range s.sessions {
		if sess.owns(ev.guildID) {
			s.dropped++
			return 0
		}
	}
	s.pending = append(s.pending, ev)
	return 0
}

// flushPendingLocked gives a new session the queued events it owns.
func (s *Server) flushPendingLocked(sess *session) {
	rest := s.pending[:0]
	for _, ev := range s.pending {
		if sess.owns(ev.guildID) {
			s.sendLocked(sess, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	s.pending = rest
}

// sendLocked gives ev the session's next sequence number, keeps it for
// RESUME and writes it when the session has a READY connection. Events the
// session's intents exclude are not sent (0 is returned).
func (s *Server) sendLocked(sess *session, ev pendingEvent) int {
	data, ok := s.filterLocked(sess, ev.typ, ev.data)
	if !ok {
		return 0
	}
	sess.seq++
	be := bufferedEvent{s: sess.seq, typ: ev.typ, data: data, interactionID: ev.interactionID}
	sess.buf = append(sess.buf, be)
	if extra := len(sess.buf) - s.opts.ReplayBuffer; extra > 0 {
		sess.evicted = sess.buf[extra-1].s
		sess.buf = append([]bufferedEvent(nil), sess.buf[extra:]...)
	}
	if c := sess.conn; c != nil && c.state == stateReady {
		c.enqueue(be.frame(c.id, sess.id, false))
	}
	s.changes.NotifyLocked()
	return sess.seq
}

// filterLocked applies the session's intents to message events: guild
// messages need GUILD_MESSAGES, DMs DIRECT_MESSAGES, and without
// MESSAGE_CONTENT the content fields are emptied unless the bot may see them.
func (s *Server) filterLocked(sess *session, typ string, data json.RawMessage) (json.RawMessage, bool) {
	switch typ {
	case "MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE":
	default:
		return data, true
	}
	var m struct {
		GuildID string `json:"guild_id"`
		Author  *struct {
			ID string `json:"id"`
		} `json:"author"`
		Mentions []struct {
			ID string `json:"id"`
		} `json:"mentions"`
	}
	_ = json.Unmarshal(data, &m)
	need := intentGuildMessages
	if m.GuildID == "" {
		need = intentDirectMessages
	}
	if sess.intents&need == 0 {
		return nil, false
	}
	if typ == "MESSAGE_DELETE" || sess.intents&intentMessageContent != 0 {
		return data, true
	}
	author := ""
	if m.Author != nil {
		author = m.Author.ID
	}
	mentions := make([]string, len(m.Mentions))
	for i, u := range m.Mentions {
		mentions[i] = u.ID
	}
	if s.canSeeContent(m.GuildID, author, mentions) {
		return data, true
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(data, &obj)
	obj["content"] = json.RawMessage(`""`)
	for _, k := range []string{"embeds", "attachments", "components"} {
		obj[k] = json.RawMessage("[]")
	}
	delete(obj, "poll")
	return mustJSON(obj), true
}

// eventGuild finds the guild an event belongs to: "guild_id", or "id" for
// GUILD_CREATE / GUILD_UPDATE / GUILD_DELETE.
func eventGuild(typ string, data json.RawMessage) string {
	var v struct {
		GuildID string `json:"guild_id"`
		ID      string `json:"id"`
	}
	_ = json.Unmarshal(data, &v)
	switch typ {
	case "GUILD_CREATE", "GUILD_UPDATE", "GUILD_DELETE":
		if v.GuildID == "" {
			return v.ID
		}
	}
	return v.GuildID
}

// Dispatch sends a raw dispatch (op 0) of eventType with data as "d" to the
// session of the right shard (see ShardFor; guild from "guild_id"). A
// discordgo.Message or Interaction (or pointer to one) is encoded as Discord
// does; json.RawMessage and []byte are sent as they are. It returns the
// event's sequence number, or 0 when it is queued (no session has identified
// for its shard yet), dropped (its session ended) or filtered out by intents.
func (s *Server) Dispatch(eventType string, data any) int {
	raw := encodeEvent(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dispatchLocked(pendingEvent{typ: eventType, data: raw, guildID: eventGuild(eventType, raw)})
}

func encodeEvent(data any) json.RawMessage {
	switch v := data.(type) {
	case json.RawMessage:
		return bytes.Clone(v)
	case []byte:
		return bytes.Clone(v)
	case discordgo.Message:
		return messageJSON(v)
	case *discordgo.Message:
		return messageJSON(*v)
	case discordgo.Interaction:
		return interactionJSON(v)
	case *discordgo.Interaction:
		return interactionJSON(*v)
	}
	return mustJSON(data)
}

// Redispatch sends an already dispatched event again: same type and payload,
// a new sequence number, to the same session (a duplicate delivery, which
// clients must tolerate). seq is looked up in the newest live session that
// has it in its replay buffer. It returns the new sequence number.
func (s *Server) Redispatch(seq int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.sessions) - 1; i >= 0; i-- {
		sess := s.sessions[i]
		if !sess.live {
			continue
		}
		for _, be := range sess.buf {
			if be.s == seq {
				return s.sendLocked(sess, pendingEvent{typ: be.typ, data: be.data, interactionID: be.interactionID})
			}
		}
	}
	panic(fmt.Sprintf("discordtest: Redispatch: no live session has event %d", seq))
}

// MessageCreate stores m in its channel's history and dispatches
// MESSAGE_CREATE. ChannelID is required; ID (a new snowflake), Timestamp,
// GuildID (from the channel), Author (DefaultUserID, or the AddUser user
// with that id), Mentions (from the <@id> in Content, when nil) and, for a
// MessageReference to a stored message, ReferencedMessage and Type (reply)
// are filled in. A channel that does not exist yet is created:
// a DM (type 1) without GuildID, else a guild text channel. It returns the
// message as sent.
func (s *Server) MessageCreate(m discordgo.Message) discordgo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillMessageLocked(&m, true)
	if ref := m.MessageReference; ref != nil && m.ReferencedMessage == nil {
		refCh := ref.ChannelID
		if refCh == "" {
			refCh = m.ChannelID
		}
		if i, found := s.findMessageLocked(refCh, ref.MessageID); found {
			target := s.history[refCh][i]
			target.ReferencedMessage = nil
			m.ReferencedMessage = &target
			if m.Type == discordgo.MessageTypeDefault {
				m.Type = discordgo.MessageTypeReply
			}
		}
	}
	if m.Mentions == nil {
		// Discord resolves the <@id> mentions in the content.
		m.Mentions = s.mentionsLocked(m.Content, &discordgo.MessageAllowedMentions{
			Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}}, nil)
	}
	s.storeMessageLocked(m)
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	return cloneMessage(m)
}

func (s *Server) dispatchMessageLocked(typ string, m discordgo.Message) int {
	return s.dispatchLocked(pendingEvent{typ: typ, data: messageJSON(m), guildID: m.GuildID})
}

// InteractionCreate dispatches INTERACTION_CREATE. ID (a new snowflake),
// Token (random), AppID (Options.ApplicationID), Version (1), Type
// (application command) and Locale are filled in; as on Discord a guild
// interaction carries Member (made from User when missing) and a DM one User.
// The server remembers it so that its callback, webhook edits and followups
// can be answered. It returns the interaction as sent.
func (s *Server) InteractionCreate(i discordgo.Interaction) discordgo.Interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i.ID == "" {
		i.ID = s.newIDLocked()
	}
	if i.Token == "" {
		i.Token = interactionToken(i.ID)
	}
	if i.AppID == "" {
		i.AppID = s.opts.ApplicationID
	}
	if i.Version == 0 {
		i.Version = 1
	}
	if i.Type == 0 {
		i.Type = discordgo.InteractionApplicationCommand
	}
	if i.Locale == "" {
		i.Locale = discordgo.EnglishUS
	}
	if i.Type != discordgo.InteractionPing {
		switch {
		case i.GuildID != "" && i.Member == nil:
			i.Member = &discordgo.Member{User: s.userLocked(i.User), GuildID: i.GuildID}
			i.User = nil
		case i.GuildID != "":
			m := *i.Member
			m.User = s.userLocked(m.User)
			i.Member, i.User = &m, nil
		case i.User == nil && i.Member != nil:
			i.User, i.Member = s.userLocked(i.Member.User), nil
		default:
			i.User = s.userLocked(i.User)
		}
	}
	st := &interactionState{i: i, createdAt: s.now(), followups: map[string]bool{},
		messages: map[string]discordgo.Message{}}
	s.interactions[i.ID] = st
	s.tokens[i.Token] = st
	s.dispatchLocked(pendingEvent{typ: "INTERACTION_CREATE", data: interactionJSON(i), guildID: i.GuildID,
		interactionID: i.ID})
	return i
}
