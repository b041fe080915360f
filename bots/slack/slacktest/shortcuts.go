package slacktest

import (
	"encoding/json"
	"fmt"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// MessageAction is a message shortcut a person chose on a message (Slack's
// "message_action" interactive payload). Zero fields get defaults: UserID
// DefaultUserID (of TeamID), ChannelID DefaultDMChannel, TeamID and
// TeamDomain from Options, CallbackID "remember_this", ResponseURL an
// address on this server (POSTs to it are recorded in Responses, as Slack
// shows them: ephemeral by default), TriggerID a fresh one (valid 3 s at
// Slack, for a modal), MessageTS a fresh ts.
type MessageAction struct {
	CallbackID  string
	UserID      string
	UserTeamID  string // the person's own team ("" = TeamID; another for Slack Connect)
	ChannelID   string
	ChannelName string
	TeamID      string
	TeamDomain  string
	ResponseURL string
	TriggerID   string
	// The message chosen: its ts, text, author (a user id; "" with
	// BotID/Username for a bot's) and thread.
	MessageTS, MessageText, MessageUser, ThreadTS string
	BotID, Username                               string
}

// MessageAction sends an "interactive" envelope whose payload is a
// message_action as Slack sends it:
//
//	{"type":"message_action","callback_id":…,"trigger_id":…,"response_url":…,
//	 "message_ts":…,"message":{"type":"message","user":…,"text":…,"ts":…},
//	 "channel":{"id","name"},"user":{"id","username","team_id"},"team":{"id","domain"}}
func (s *Server) MessageAction(a MessageAction) Envelope {
	s.mu.Lock()
	n := s.nextIDLocked()
	ts := s.nextTSLocked()
	s.mu.Unlock()
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&a.CallbackID, "remember_this")
	def(&a.UserID, DefaultUserID)
	def(&a.ChannelID, DefaultDMChannel)
	def(&a.ChannelName, "directmessage")
	def(&a.TeamID, s.opts.TeamID)
	def(&a.UserTeamID, a.TeamID)
	def(&a.TeamDomain, s.opts.TeamName)
	def(&a.MessageTS, ts)
	def(&a.ResponseURL, fmt.Sprintf("%s/actions/%s/%d/%s", s.URL(), a.TeamID, n, faketest.RandomHex(12)))
	def(&a.TriggerID, fmt.Sprintf("%d.%d.%s", n, 1700000000+n, faketest.RandomHex(16)))
	msg := map[string]any{"type": "message", "text": a.MessageText, "ts": a.MessageTS}
	if a.MessageUser != "" {
		msg["user"], msg["team"] = a.MessageUser, a.TeamID
	}
	if a.BotID != "" {
		msg["bot_id"], msg["username"], msg["subtype"] = a.BotID, a.Username, "bot_message"
	}
	if a.ThreadTS != "" {
		msg["thread_ts"] = a.ThreadTS
	}
	payload, _ := json.Marshal(map[string]any{
		"type": "message_action", "token": s.opts.VerificationToken, "action_ts": ts,
		"team":                  map[string]any{"id": a.TeamID, "domain": a.TeamDomain},
		"user":                  map[string]any{"id": a.UserID, "username": DefaultUserName, "name": DefaultUserName, "team_id": a.UserTeamID},
		"channel":               map[string]any{"id": a.ChannelID, "name": a.ChannelName},
		"is_enterprise_install": false, "enterprise": nil,
		"callback_id": a.CallbackID, "trigger_id": a.TriggerID, "response_url": a.ResponseURL,
		"message_ts": a.MessageTS, "message": msg, "api_app_id": s.opts.AppID,
	})
	return s.deliver(Envelope{ID: randomUUID(), Type: "interactive", Payload: payload, ResponseURL: a.ResponseURL})
}
