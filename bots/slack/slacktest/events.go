package slacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Defaults of the event helpers.
const (
	DefaultUserID    = "U0USER"
	DefaultUserName  = "user"
	DefaultDMChannel = "D0DM"
	DefaultChannel   = "C0CHAN"
	DefaultCommand   = "/memory"
)

// innerEvent is implemented by the event helpers.
type innerEvent interface {
	// build returns the inner event JSON and its ts; s.mu is held.
	build(s *Server) (json.RawMessage, string)
}

// MessageEvent builds a "message" inner event (message.im by default).
// Zero fields take defaults: Channel DefaultDMChannel; ChannelType from the
// channel id ("D" im, "C" channel, "G" group, else im); User DefaultUserID,
// or the bot's user id when BotID is set; TS a fresh NextTS; Team the team
// id; ClientMsgID a random UUID for a plain message from a person.
//
// Plain messages (no SubType, or "bot_message", "thread_broadcast",
// "file_share") are also stored, so conversations.replies sees them. With
// SubType "message_changed", Text/User/TS describe the edited message (TS is
// the original message's ts, required), PreviousText its old text; the
// event gets a fresh ts and the stored message is updated.
type MessageEvent struct {
	Channel      string
	ChannelType  string
	User         string
	Text         string
	TS           string
	ThreadTS     string
	BotID        string
	AppID        string
	SubType      string
	ClientMsgID  string
	Team         string
	Blocks       json.RawMessage
	PreviousText string
	// Files are attached (from AddFile): the event gets a "files" array,
	// and a plain message the subtype "file_share", as Slack sends them.
	Files []File
}

// AppMentionEvent builds an "app_mention" inner event. Zero fields: Channel
// DefaultChannel, User DefaultUserID, Text "<@BOT> hi", TS a fresh NextTS,
// ClientMsgID a random UUID (none when BotID is set), Team the team id. The
// message is stored like a MessageEvent's.
type AppMentionEvent struct {
	Channel     string
	User        string
	Text        string
	TS          string
	ThreadTS    string
	BotID       string
	ClientMsgID string
	Team        string
	Blocks      json.RawMessage
	Files       []File // attached (from AddFile): the event gets a "files" array
}

// SlashCommand builds a slash_commands envelope. Zero fields: Command
// DefaultCommand, UserID DefaultUserID, UserName DefaultUserName, ChannelID
// DefaultDMChannel, ChannelName "directmessage", TeamID/TeamDomain/APIAppID/
// Token from Options, ResponseURL an address on this server (POSTs to it are
// recorded in Responses), TriggerID a fresh one.
type SlashCommand struct {
	Command             string
	Text                string
	UserID              string
	UserName            string
	ChannelID           string
	ChannelName         string
	TeamID              string
	TeamDomain          string
	EnterpriseID        string
	EnterpriseName      string
	IsEnterpriseInstall bool
	ResponseURL         string
	TriggerID           string
	APIAppID            string
	Token               string
}

type wireMsg struct {
	ClientMsgID  string          `json:"client_msg_id,omitempty"`
	Type         string          `json:"type"`
	SubType      string          `json:"subtype,omitempty"`
	Text         string          `json:"text"`
	User         string          `json:"user,omitempty"`
	BotID        string          `json:"bot_id,omitempty"`
	AppID        string          `json:"app_id,omitempty"`
	TS           string          `json:"ts"`
	ThreadTS     string          `json:"thread_ts,omitempty"`
	ParentUserID string          `json:"parent_user_id,omitempty"`
	Blocks       json.RawMessage `json:"blocks,omitempty"`
	Team         string          `json:"team,omitempty"`
	Edited       *struct {
		User string `json:"user"`
		TS   string `json:"ts"`
	} `json:"edited,omitempty"`
	Channel     string     `json:"channel,omitempty"`
	EventTS     string     `json:"event_ts,omitempty"`
	ChannelType string     `json:"channel_type,omitempty"`
	Files       []wireFile `json:"files,omitempty"`
	Upload      bool       `json:"upload,omitempty"`
}

type wireChanged struct {
	Type            string   `json:"type"`
	SubType         string   `json:"subtype"`
	Message         wireMsg  `json:"message"`
	PreviousMessage *wireMsg `json:"previous_message,omitempty"`
	Channel         string   `json:"channel"`
	Hidden          bool     `json:"hidden"`
	TS              string   `json:"ts"`
	EventTS         string   `json:"event_ts"`
	ChannelType     string   `json:"channel_type"`
}

func channelType(channel string) string {
	switch {
	case strings.HasPrefix(channel, "C"):
		return "channel"
	case strings.HasPrefix(channel, "G"):
		return "group"
	default:
		return "im"
	}
}

func (s *Server) parentUserLocked(channel, threadTS, ts string) string {
	if threadTS == "" || threadTS == ts {
		return ""
	}
	if i := s.findLocked(channel, threadTS); i >= 0 {
		return s.channels[channel][i].User
	}
	return ""
}

func (e MessageEvent) build(s *Server) (json.RawMessage, string) {
	if e.Channel == "" {
		e.Channel = DefaultDMChannel
	}
	if e.ChannelType == "" {
		e.ChannelType = channelType(e.Channel)
	}
	if e.User == "" {
		e.User = DefaultUserID
		if e.BotID != "" {
			e.User = s.opts.BotUserID
		}
	}
	if e.Team == "" {
		e.Team = s.opts.TeamID
	}
	if e.SubType == "message_changed" {
		ts := s.nextTSLocked()
		w := wireChanged{Type: "message", SubType: e.SubType, Channel: e.Channel, Hidden: true,
			TS: ts, EventTS: ts, ChannelType: e.ChannelType,
			Message: wireMsg{Type: "message", Text: e.Text, User: e.User, BotID: e.BotID, TS: e.TS,
				ThreadTS: e.ThreadTS, Team: e.Team, Blocks: e.Blocks, ClientMsgID: e.ClientMsgID}}
		w.Message.Edited = &struct {
			User string `json:"user"`
			TS   string `json:"ts"`
		}{User: e.User, TS: ts}
		if e.PreviousText != "" {
			w.PreviousMessage = &wireMsg{Type: "message", Text: e.PreviousText, User: e.User, TS: e.TS,
				ThreadTS: e.ThreadTS, Team: e.Team}
		}
		if i := s.findLocked(e.Channel, e.TS); i >= 0 {
			s.channels[e.Channel][i].Text = e.Text
		}
		b, _ := json.Marshal(w)
		return b, ts
	}
	if e.TS == "" {
		e.TS = s.nextTSLocked()
	}
	if len(e.Files) > 0 && e.SubType == "" {
		e.SubType = "file_share"
	}
	if e.ClientMsgID == "" && e.BotID == "" && e.SubType == "" {
		e.ClientMsgID = randomUUID()
	}
	w := wireMsg{ClientMsgID: e.ClientMsgID, Type: "message", SubType: e.SubType, Text: e.Text,
		User: e.User, BotID: e.BotID, AppID: e.AppID, TS: e.TS, ThreadTS: e.ThreadTS,
		ParentUserID: s.parentUserLocked(e.Channel, e.ThreadTS, e.TS), Blocks: e.Blocks, Team: e.Team,
		Channel: e.Channel, EventTS: e.TS, ChannelType: e.ChannelType,
		Files: s.wireFilesLocked(e.Files, e.User), Upload: len(e.Files) > 0}
	switch e.SubType {
	case "", "bot_message", "thread_broadcast", "file_share":
		s.storeLocked(e.Channel, Message{Type: "message", SubType: e.SubType, User: e.User, BotID: e.BotID,
			AppID: e.AppID, Text: e.Text, TS: e.TS, ThreadTS: e.ThreadTS, Team: e.Team,
			ClientMsgID: e.ClientMsgID, Blocks: bytes.Clone(e.Blocks)})
	}
	b, _ := json.Marshal(w)
	return b, e.TS
}

func (e AppMentionEvent) build(s *Server) (json.RawMessage, string) {
	if e.Channel == "" {
		e.Channel = DefaultChannel
	}
	if e.User == "" {
		e.User = DefaultUserID
	}
	if e.Text == "" {
		e.Text = "<@" + s.opts.BotUserID + "> hi"
	}
	if e.TS == "" {
		e.TS = s.nextTSLocked()
	}
	if e.ClientMsgID == "" && e.BotID == "" {
		e.ClientMsgID = randomUUID()
	}
	if e.Team == "" {
		e.Team = s.opts.TeamID
	}
	w := wireMsg{ClientMsgID: e.ClientMsgID, Type: "app_mention", Text: e.Text, User: e.User,
		BotID: e.BotID, TS: e.TS, ThreadTS: e.ThreadTS,
		ParentUserID: s.parentUserLocked(e.Channel, e.ThreadTS, e.TS), Blocks: e.Blocks, Team: e.Team,
		Channel: e.Channel, EventTS: e.TS, Files: s.wireFilesLocked(e.Files, e.User)}
	s.storeLocked(e.Channel, Message{Type: "message", User: e.User, BotID: e.BotID, Text: e.Text,
		TS: e.TS, ThreadTS: e.ThreadTS, Team: e.Team, ClientMsgID: e.ClientMsgID, Blocks: bytes.Clone(e.Blocks)})
	b, _ := json.Marshal(w)
	return b, e.TS
}

type eventAuthorization struct {
	EnterpriseID        *string `json:"enterprise_id"`
	TeamID              string  `json:"team_id"`
	UserID              string  `json:"user_id"`
	IsBot               bool    `json:"is_bot"`
	IsEnterpriseInstall bool    `json:"is_enterprise_install"`
}

type eventCallback struct {
	Token              string               `json:"token"`
	TeamID             string               `json:"team_id"`
	ContextTeamID      string               `json:"context_team_id"`
	APIAppID           string               `json:"api_app_id"`
	Event              json.RawMessage      `json:"event"`
	Type               string               `json:"type"`
	EventID            string               `json:"event_id"`
	EventTime          int64                `json:"event_time"`
	Authorizations     []eventAuthorization `json:"authorizations"`
	IsExtSharedChannel bool                 `json:"is_ext_shared_channel"`
	EventContext       string               `json:"event_context"`
}

// EventsAPI wraps an inner event in an events_api envelope
// ({"envelope_id","payload":{"token","team_id","api_app_id","event",
// "type":"event_callback","event_id","event_time",…},"type":"events_api",
// "accepts_response_payload":false,"retry_attempt":0,"retry_reason":""}) and
// sends it on the active connection, or queues it until a client connects.
//
// event is a MessageEvent or AppMentionEvent (defaults filled in, message
// stored), or anything else marshalled as-is (json.RawMessage, []byte, a
// map…). The returned Envelope carries the EnvelopeID, EventID and ts.
func (s *Server) EventsAPI(event any) Envelope {
	s.mu.Lock()
	var inner json.RawMessage
	var ts string
	switch e := event.(type) {
	case innerEvent:
		inner, ts = e.build(s)
	case json.RawMessage:
		inner = bytes.Clone(e)
	case []byte:
		inner = bytes.Clone(e)
	default:
		inner, _ = json.Marshal(e)
	}
	var head struct {
		Type    string `json:"type"`
		TS      string `json:"ts"`
		Channel string `json:"channel"`
	}
	_ = json.Unmarshal(inner, &head)
	if ts == "" {
		ts = head.TS
	}
	eventID := fmt.Sprintf("Ev0T%08X", s.nextIDLocked())
	cb := eventCallback{
		Token: s.opts.VerificationToken, TeamID: s.opts.TeamID, ContextTeamID: s.opts.TeamID,
		APIAppID: s.opts.AppID, Event: inner, Type: "event_callback", EventID: eventID,
		EventTime: time.Now().Unix(),
		Authorizations: []eventAuthorization{{TeamID: s.opts.TeamID, UserID: s.opts.BotUserID,
			IsBot: true}},
		EventContext: fmt.Sprintf("4-%s-%s-%s", head.Type, s.opts.TeamID, head.Channel),
	}
	s.mu.Unlock()
	payload, _ := json.Marshal(cb)
	return s.deliver(Envelope{ID: randomUUID(), Type: "events_api", Payload: payload, EventID: eventID, TS: ts})
}

// Message is EventsAPI(e).
func (s *Server) Message(e MessageEvent) Envelope { return s.EventsAPI(e) }

// AppMention is EventsAPI(e).
func (s *Server) AppMention(e AppMentionEvent) Envelope { return s.EventsAPI(e) }

type wireSlash struct {
	Token               string `json:"token"`
	TeamID              string `json:"team_id"`
	TeamDomain          string `json:"team_domain"`
	EnterpriseID        string `json:"enterprise_id,omitempty"`
	EnterpriseName      string `json:"enterprise_name,omitempty"`
	ChannelID           string `json:"channel_id"`
	ChannelName         string `json:"channel_name"`
	UserID              string `json:"user_id"`
	UserName            string `json:"user_name"`
	Command             string `json:"command"`
	Text                string `json:"text"`
	APIAppID            string `json:"api_app_id"`
	IsEnterpriseInstall bool   `json:"is_enterprise_install"`
	ResponseURL         string `json:"response_url"`
	TriggerID           string `json:"trigger_id"`
}

// SlashCommand sends a slash_commands envelope
// ({"envelope_id","payload":{…form fields…},"type":"slash_commands",
// "accepts_response_payload":true}); see the SlashCommand type for defaults.
func (s *Server) SlashCommand(cmd SlashCommand) Envelope {
	s.mu.Lock()
	n := s.nextIDLocked()
	s.mu.Unlock()
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&cmd.Command, DefaultCommand)
	def(&cmd.UserID, DefaultUserID)
	def(&cmd.UserName, DefaultUserName)
	def(&cmd.ChannelID, DefaultDMChannel)
	def(&cmd.ChannelName, "directmessage")
	def(&cmd.TeamID, s.opts.TeamID)
	def(&cmd.TeamDomain, s.opts.TeamName)
	def(&cmd.APIAppID, s.opts.AppID)
	def(&cmd.Token, s.opts.VerificationToken)
	def(&cmd.ResponseURL, fmt.Sprintf("%s/commands/%s/%d/%s", s.URL(), cmd.TeamID, n, faketest.RandomHex(12)))
	def(&cmd.TriggerID, fmt.Sprintf("%d.%d.%s", n, 1700000000+n, faketest.RandomHex(16)))
	payload, _ := json.Marshal(wireSlash{Token: cmd.Token, TeamID: cmd.TeamID, TeamDomain: cmd.TeamDomain,
		EnterpriseID: cmd.EnterpriseID, EnterpriseName: cmd.EnterpriseName, ChannelID: cmd.ChannelID,
		ChannelName: cmd.ChannelName, UserID: cmd.UserID, UserName: cmd.UserName, Command: cmd.Command,
		Text: cmd.Text, APIAppID: cmd.APIAppID, IsEnterpriseInstall: cmd.IsEnterpriseInstall,
		ResponseURL: cmd.ResponseURL, TriggerID: cmd.TriggerID})
	return s.deliver(Envelope{ID: randomUUID(), Type: "slash_commands", AcceptsResponsePayload: true,
		Payload: payload, ResponseURL: cmd.ResponseURL})
}
