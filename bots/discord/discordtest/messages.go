package discordtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Discord's documented limits that the fake enforces.
const (
	MaxContentLength = 2000 // characters (Unicode code points) in a message
	MaxEmbeds        = 10
	MaxHistoryLimit  = 100 // "limit" of GET /channels/{id}/messages
)

// Intents the fake looks at (discordgo names them Intents*).
const (
	intentGuildMessages  = 1 << 9
	intentDirectMessages = 1 << 12
	intentMessageContent = 1 << 15
)

// timestampLayout is ISO8601 as Discord writes it: microseconds and "+00:00".
const timestampLayout = "2006-01-02T15:04:05.000000-07:00"

// FormatTimestamp writes t as Discord does ("2024-01-02T03:04:05.678000+00:00").
func FormatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

var mentionRE = regexp.MustCompile(`<@!?(\d+)>`)

// AddUser registers (or replaces) a user. Messages and interactions whose
// author carries only an id are filled in from it, GET /users/{id} answers it,
// and <@id> mentions in the bot's posts resolve to it.
func (s *Server) AddUser(u discordgo.User) {
	if u.ID == "" {
		panic("discordtest: AddUser needs an ID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// AddChannel registers (or replaces) a channel: a guild text channel (type
// 0, GuildID set), a DM (type 1) or a public thread (type 11, GuildID and
// ParentID set). Channels are also created implicitly by MessageCreate and
// AddMessage (type 1 without a GuildID, else 0).
func (s *Server) AddChannel(c discordgo.Channel) {
	if c.ID == "" {
		panic("discordtest: AddChannel needs an ID")
	}
	c.Messages = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
	if _, ok := s.history[c.ID]; !ok {
		s.history[c.ID] = nil
	}
}

// AddMessage stores m in its channel's history without dispatching it. ID
// and Timestamp are filled when empty (an ID from the Timestamp when only that
// is given, a Timestamp from the ID when only that is given); GuildID comes
// from the channel when empty, Author defaults to DefaultUserID. It returns
// the stored message.
func (s *Server) AddMessage(m discordgo.Message) discordgo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillMessageLocked(&m, false)
	s.storeMessageLocked(m)
	return cloneMessage(m)
}

// Messages returns the history of channelID, oldest first.
func (s *Server) Messages(channelID string) []discordgo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	hist := s.history[channelID]
	out := make([]discordgo.Message, len(hist))
	for i, m := range hist {
		out[i] = cloneMessage(m)
	}
	return out
}

// fillMessageLocked completes a message pushed by the test: ID, Timestamp,
// GuildID, Author (from the known users), and makes sure the channel exists.
// live is true for MessageCreate (a new message now).
func (s *Server) fillMessageLocked(m *discordgo.Message, live bool) {
	if m.ChannelID == "" {
		what := "AddMessage"
		if live {
			what = "MessageCreate"
		}
		panic("discordtest: " + what + " needs a ChannelID")
	}
	switch {
	case m.ID == "" && (live || m.Timestamp.IsZero()):
		var at time.Time
		m.ID, at = s.newMessageIDLocked()
		if m.Timestamp.IsZero() {
			m.Timestamp = at
		}
	case m.ID == "":
		m.ID = s.idAtLocked(m.Timestamp)
	default:
		if n, ok := parseSnowflake(m.ID); ok {
			s.observeIDLocked(n)
		}
	}
	if m.Timestamp.IsZero() {
		if t := SnowflakeTime(m.ID); !t.IsZero() {
			m.Timestamp = t
		} else {
			m.Timestamp = s.now()
		}
	}
	m.Timestamp = m.Timestamp.UTC().Truncate(time.Microsecond)
	ch, known := s.channels[m.ChannelID]
	if m.GuildID == "" && known {
		m.GuildID = ch.GuildID
	}
	m.Author = s.userLocked(m.Author)
	if !known {
		ch = discordgo.Channel{ID: m.ChannelID, GuildID: m.GuildID, Type: discordgo.ChannelTypeGuildText}
		if m.GuildID == "" {
			ch.Type = discordgo.ChannelTypeDM
			ch.Recipients = []*discordgo.User{m.Author}
		} else {
			ch.Name = "channel-" + m.ChannelID
		}
		s.channels[m.ChannelID] = ch
	}
	for i, u := range m.Mentions {
		m.Mentions[i] = s.userLocked(u)
	}
}

// userLocked completes a user that may carry only an id; nil becomes the
// default user.
func (s *Server) userLocked(u *discordgo.User) *discordgo.User {
	if u == nil {
		u = &discordgo.User{ID: DefaultUserID, Username: DefaultUserName, Discriminator: "0"}
		if known, ok := s.users[u.ID]; ok {
			*u = known
		}
		return u
	}
	if known, ok := s.users[u.ID]; ok && u.Username == "" {
		k := known
		return &k
	}
	c := *u
	return &c
}

// storeMessageLocked inserts or replaces m in its channel's history.
func (s *Server) storeMessageLocked(m discordgo.Message) {
	hist := s.history[m.ChannelID]
	i := sort.Search(len(hist), func(i int) bool { return !snowflakeLess(hist[i].ID, m.ID) })
	if i < len(hist) && hist[i].ID == m.ID {
		hist[i] = m
	} else {
		hist = append(hist, discordgo.Message{})
		copy(hist[i+1:], hist[i:])
		hist[i] = m
	}
	s.history[m.ChannelID] = hist
	if ch, ok := s.channels[m.ChannelID]; ok && !snowflakeLess(m.ID, ch.LastMessageID) {
		ch.LastMessageID = m.ID
		s.channels[m.ChannelID] = ch
	}
}

func (s *Server) findMessageLocked(channelID, id string) (int, bool) {
	hist := s.history[channelID]
	i := sort.Search(len(hist), func(i int) bool { return !snowflakeLess(hist[i].ID, id) })
	return i, i < len(hist) && hist[i].ID == id
}

// mentionsLocked resolves the <@id> mentions of content as Discord does,
// honouring allowed_mentions, plus the replied-to author when pinged.
func (s *Server) mentionsLocked(content string, am *discordgo.MessageAllowedMentions, replied *discordgo.User) []*discordgo.User {
	allowed := func(id string) bool {
		if am == nil {
			return true
		}
		for _, p := range am.Parse {
			if p == discordgo.AllowedMentionTypeUsers {
				return true
			}
		}
		for _, u := range am.Users {
			if u == id {
				return true
			}
		}
		return false
	}
	out := []*discordgo.User{}
	seen := map[string]bool{}
	add := func(u *discordgo.User) {
		if !seen[u.ID] {
			seen[u.ID] = true
			out = append(out, u)
		}
	}
	for _, m := range mentionRE.FindAllStringSubmatch(content, -1) {
		if allowed(m[1]) {
			add(s.userLocked(&discordgo.User{ID: m[1]}))
		}
	}
	if replied != nil && (am == nil || am.RepliedUser) {
		add(replied)
	}
	return out
}

// Wire encoding

// messageJSON is a message as Discord sends it: ISO8601 timestamps, the
// components discordgo's Message does not marshal, [] for empty lists, and
// no nulls for absent optional fields.
func messageJSON(m discordgo.Message) json.RawMessage {
	ref := m.ReferencedMessage
	m.ReferencedMessage = nil
	obj := objectJSON(m)
	if string(obj["webhook_id"]) == `""` {
		delete(obj, "webhook_id")
	}
	obj["timestamp"] = mustJSON(FormatTimestamp(m.Timestamp))
	obj["edited_timestamp"] = json.RawMessage("null")
	if m.EditedTimestamp != nil {
		obj["edited_timestamp"] = mustJSON(FormatTimestamp(*m.EditedTimestamp))
	}
	comps := m.Components
	if comps == nil {
		comps = []discordgo.MessageComponent{}
	}
	obj["components"] = mustJSON(comps)
	for _, k := range []string{"mentions", "mention_roles", "attachments", "embeds"} {
		if _, ok := obj[k]; !ok {
			obj[k] = json.RawMessage("[]")
		}
	}
	if ref != nil {
		r := *ref
		r.ReferencedMessage = nil
		obj["referenced_message"] = messageJSON(r)
	} else if m.Type == discordgo.MessageTypeReply {
		obj["referenced_message"] = json.RawMessage("null") // deleted
	}
	return mustJSON(obj)
}

// interactionJSON is an interaction as Discord sends it.
func interactionJSON(i discordgo.Interaction) json.RawMessage {
	msg := i.Message
	i.Message = nil
	obj := objectJSON(i)
	if _, ok := obj["entitlements"]; !ok {
		obj["entitlements"] = json.RawMessage("[]")
	}
	if msg != nil {
		obj["message"] = messageJSON(*msg)
	}
	return mustJSON(obj)
}

// objectJSON is v (a struct) as a JSON object, without its null fields:
// Discord leaves absent optional fields out.
func objectJSON(v any) map[string]json.RawMessage {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(mustJSON(v), &obj)
	for k, v := range obj {
		if string(v) == "null" {
			delete(obj, k)
		}
	}
	return obj
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("discordtest: cannot encode %T: %v", v, err))
	}
	return b
}

// cloneMessage deep-copies m through its wire form.
func cloneMessage(m discordgo.Message) discordgo.Message {
	var out discordgo.Message
	_ = json.Unmarshal(messageJSON(m), &out) // the server's own encoding always decodes
	out.Timestamp = out.Timestamp.UTC()
	if out.EditedTimestamp != nil {
		t := out.EditedTimestamp.UTC()
		out.EditedTimestamp = &t
	}
	if out.ReferencedMessage != nil {
		out.ReferencedMessage.Timestamp = out.ReferencedMessage.Timestamp.UTC()
	}
	return out
}

// canSeeContent reports whether an app without the MESSAGE_CONTENT intent
// still gets m's content: DMs, its own messages and messages mentioning it.
func (s *Server) canSeeContent(guildID, authorID string, mentions []string) bool {
	if guildID == "" || authorID == s.opts.BotID {
		return true
	}
	for _, id := range mentions {
		if id == s.opts.BotID {
			return true
		}
	}
	return false
}

func stripContent(m discordgo.Message) discordgo.Message {
	m.Content = ""
	m.Embeds = nil
	m.Attachments = nil
	m.Components = nil
	m.Poll = nil
	return m
}

func userIDs(us []*discordgo.User) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		if u != nil {
			out = append(out, u.ID)
		}
	}
	return out
}

// authorID is the id of m's author; stored messages always have one.
func authorID(m discordgo.Message) string { return m.Author.ID }
