package discordtest

import (
	"encoding/json"
	"net/http"

	"github.com/bwmarrin/discordgo"
)

// RefuseDMs makes user refuse DMs from the bot, as a person does who turned
// off "Allow direct messages from server members" or blocked it: opening
// the DM channel works, posting in it answers 403 50007 "Cannot send
// messages to this user", as on Discord.
func (s *Server) RefuseDMs(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noDMs == nil {
		s.noDMs = map[string]bool{}
	}
	s.noDMs[user] = true
}

// DMChannel is the id of the DM channel the bot opened with user
// (POST users/@me/channels), and whether there is one.
func (s *Server) DMChannel(user string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.dmOfLocked(user)
	return id, id != ""
}

func (s *Server) dmOfLocked(user string) string {
	for id, ch := range s.channels {
		if ch.Type == discordgo.ChannelTypeDM && len(ch.Recipients) == 1 && ch.Recipients[0] != nil && ch.Recipients[0].ID == user {
			return id
		}
	}
	return ""
}

// createDM is POST users/@me/channels {"recipient_id"}: the DM channel
// with that user, made once and then the same one, as Discord answers.
// An unknown user answers 400 50033 "Invalid Recipient(s)".
func (s *Server) createDM(req *request) result {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.Unmarshal(req.body, &body); err != nil {
		return badJSON()
	}
	u, known := s.users[body.RecipientID]
	if !known {
		return apiError(http.StatusBadRequest, 50033, "Invalid Recipient(s)")
	}
	if id := s.dmOfLocked(u.ID); id != "" {
		return ok(s.channels[id])
	}
	ch := discordgo.Channel{ID: s.newIDLocked(), Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{&u}}
	s.channels[ch.ID] = ch
	s.history[ch.ID] = nil
	return ok(ch)
}

// dmRefusedLocked answers a post in ch when ch is the DM of a user who
// refuses DMs (RefuseDMs).
func (s *Server) dmRefusedLocked(ch discordgo.Channel) (result, bool) {
	if ch.Type != discordgo.ChannelTypeDM {
		return result{}, false
	}
	for _, u := range ch.Recipients {
		if u != nil && s.noDMs[u.ID] {
			return apiError(http.StatusForbidden, 50007, "Cannot send messages to this user"), true
		}
	}
	return result{}, false
}
