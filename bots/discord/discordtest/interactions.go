package discordtest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"
)

// interactionState is what the server remembers of an interaction.
type interactionState struct {
	i         discordgo.Interaction
	createdAt time.Time
	writtenAt time.Time // INTERACTION_CREATE first written; zero until then
	acked     bool

	// messages created or targeted through the interaction: the original
	// response ("@original") and followups, by id. Those not ephemeral also
	// live in their channel's history.
	original  string
	messages  map[string]discordgo.Message
	followups map[string]bool
}

func unknownInteraction() result {
	return apiError(http.StatusNotFound, 10062, "Unknown interaction")
}

func unknownWebhook() result { return apiError(http.StatusNotFound, 10015, "Unknown Webhook") }

// windowStart is when the 3 s callback window began.
func (st *interactionState) windowStart() time.Time {
	if st.writtenAt.IsZero() {
		return st.createdAt
	}
	return st.writtenAt
}

func decodeInteractionResponse(body []byte) (discordgo.InteractionResponse, error) {
	var aux struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data *struct {
			discordgo.InteractionResponseData
			Components []json.RawMessage `json:"components"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &aux); err != nil {
		return discordgo.InteractionResponse{}, err
	}
	resp := discordgo.InteractionResponse{Type: aux.Type}
	if aux.Data != nil {
		data := aux.Data.InteractionResponseData
		comps, err := decodeComponents(aux.Data.Components)
		if err != nil {
			return resp, err
		}
		data.Components = comps
		resp.Data = &data
	}
	return resp, nil
}

// responseAllowed says which callback types fit which interaction types.
func responseAllowed(it discordgo.InteractionType, rt discordgo.InteractionResponseType) bool {
	switch rt {
	case discordgo.InteractionResponsePong:
		return it == discordgo.InteractionPing
	case discordgo.InteractionResponseChannelMessageWithSource,
		discordgo.InteractionResponseDeferredChannelMessageWithSource:
		return it == discordgo.InteractionApplicationCommand || it == discordgo.InteractionMessageComponent ||
			it == discordgo.InteractionModalSubmit
	case discordgo.InteractionResponseDeferredMessageUpdate, discordgo.InteractionResponseUpdateMessage:
		return it == discordgo.InteractionMessageComponent || it == discordgo.InteractionModalSubmit
	case discordgo.InteractionApplicationCommandAutocompleteResult:
		return it == discordgo.InteractionApplicationCommandAutocomplete
	case discordgo.InteractionResponseModal:
		return it == discordgo.InteractionApplicationCommand || it == discordgo.InteractionMessageComponent
	}
	return false
}

func (s *Server) interactionCallback(req *request) result {
	id, token := req.segs[1], req.segs[2]
	st := s.interactions[id]
	if st == nil || st.i.Token != token {
		return unknownInteraction()
	}
	if st.acked {
		return apiError(http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
	}
	now := s.now()
	latency := now.Sub(st.windowStart())
	if latency > s.opts.InteractionWindow {
		return unknownInteraction() // Discord's 3 s window is over
	}
	resp, err := decodeInteractionResponse(req.body)
	if err != nil {
		return badJSON()
	}
	if !responseAllowed(st.i.Type, resp.Type) {
		return formError("type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid for this interaction")
	}
	data := resp.Data
	if data == nil {
		data = &discordgo.InteractionResponseData{}
	}
	if resp.Type == discordgo.InteractionResponseChannelMessageWithSource || resp.Type == discordgo.InteractionResponseUpdateMessage {
		if res, valid := checkContent("data.", data.Content, len(data.Embeds), len(data.Components) > 0 ||
			resp.Type == discordgo.InteractionResponseUpdateMessage); !valid {
			return res
		}
	}
	st.acked = true
	switch resp.Type {
	case discordgo.InteractionResponseChannelMessageWithSource:
		m := s.interactionMessageLocked(st, data.Content, data.Embeds, data.Components, data.Flags, data.AllowedMentions)
		st.original = m.ID
	case discordgo.InteractionResponseDeferredChannelMessageWithSource:
		m := s.interactionMessageLocked(st, "", nil, nil, discordgo.MessageFlagsLoading|data.Flags&discordgo.MessageFlagsEphemeral, nil)
		st.original = m.ID
	case discordgo.InteractionResponseUpdateMessage, discordgo.InteractionResponseDeferredMessageUpdate:
		if st.i.Message != nil {
			m := *st.i.Message
			st.messages[m.ID] = m
			st.original = m.ID
			if resp.Type == discordgo.InteractionResponseUpdateMessage {
				content, embeds, comps := data.Content, data.Embeds, data.Components
				s.editMessageLocked(st, m.ID, discordgo.WebhookEdit{Content: &content, Embeds: &embeds, Components: &comps})
			}
		}
	}
	s.responses = append(s.responses, InteractionResponse{Seq: s.nextSeqLocked(), InteractionID: id, Token: token,
		Response: resp, Latency: latency})
	return noContent()
}

// interactionMessageLocked creates a message sent through the interaction
// (its response or a followup); one that is not ephemeral goes to the
// channel's history and is dispatched as MESSAGE_CREATE, as on Discord.
func (s *Server) interactionMessageLocked(st *interactionState, content string, embeds []*discordgo.MessageEmbed,
	comps []discordgo.MessageComponent, flags discordgo.MessageFlags, am *discordgo.MessageAllowedMentions) discordgo.Message {
	i := st.i
	user := i.User
	if i.Member != nil {
		user = i.Member.User
	}
	mid, at := s.newMessageIDLocked()
	m := discordgo.Message{ID: mid, ChannelID: i.ChannelID, GuildID: i.GuildID, Content: content,
		Timestamp: at, Author: ptr(s.botUser()), Embeds: embeds, Components: comps, Flags: flags,
		WebhookID: i.AppID, MentionRoles: []string{}, Attachments: []*discordgo.MessageAttachment{},
		Mentions:            s.mentionsLocked(content, am, nil),
		InteractionMetadata: &discordgo.MessageInteractionMetadata{ID: i.ID, Type: i.Type, User: user},
	}
	if i.Type == discordgo.InteractionApplicationCommand && st.original == "" {
		m.Type = discordgo.MessageTypeChatInputCommand
	}
	st.messages[m.ID] = m
	if flags&discordgo.MessageFlagsEphemeral == 0 && i.ChannelID != "" {
		if _, known := s.channels[i.ChannelID]; !known {
			ch := discordgo.Channel{ID: i.ChannelID, GuildID: i.GuildID, Type: discordgo.ChannelTypeGuildText}
			if i.GuildID == "" {
				ch.Type = discordgo.ChannelTypeDM
				ch.Recipients = []*discordgo.User{user}
			}
			s.channels[i.ChannelID] = ch
		}
		s.storeMessageLocked(m)
		s.dispatchMessageLocked("MESSAGE_CREATE", m)
	}
	return m
}

// editMessageLocked applies a webhook edit to one of st's messages, in its
// channel's history too (dispatching MESSAGE_UPDATE) when it is there.
func (s *Server) editMessageLocked(st *interactionState, id string, e discordgo.WebhookEdit) discordgo.Message {
	m := st.messages[id]
	if e.Content != nil {
		m.Content = *e.Content
		m.Mentions = s.mentionsLocked(m.Content, e.AllowedMentions, nil)
	}
	if e.Embeds != nil {
		m.Embeds = *e.Embeds
	}
	if e.Components != nil {
		m.Components = *e.Components
	}
	if m.Flags&discordgo.MessageFlagsLoading != 0 {
		m.Flags &^= discordgo.MessageFlagsLoading // the deferred response gets its content
	} else {
		t := s.now().Truncate(1e6)
		m.EditedTimestamp = &t
	}
	st.messages[id] = m
	if i, found := s.findMessageLocked(m.ChannelID, m.ID); found {
		s.history[m.ChannelID][i] = m
		s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	}
	return m
}

// webhookLocked finds the interaction behind an interaction webhook.
func (s *Server) webhookLocked(req *request) (*interactionState, result, bool) {
	app, token := req.segs[1], req.segs[2]
	st := s.tokens[token]
	if st == nil || st.i.AppID != app {
		return nil, unknownWebhook(), false
	}
	now := s.now()
	if now.Sub(st.createdAt) > s.opts.InteractionTokenTTL {
		return nil, apiError(http.StatusUnauthorized, 50027, "Invalid Webhook Token"), false
	}
	if !st.acked && now.Sub(st.windowStart()) > s.opts.InteractionWindow {
		// Never answered in time: Discord invalidates the token.
		return nil, unknownWebhook(), false
	}
	return st, result{}, true
}

// messageFor resolves "@original" or a followup id.
func (st *interactionState) messageFor(mid string) (string, bool) {
	if mid == "@original" {
		return st.original, st.original != ""
	}
	return mid, st.followups[mid]
}

func (s *Server) webhookMessage(req *request) result {
	st, res, valid := s.webhookLocked(req)
	if !valid {
		return res
	}
	id, found := st.messageFor(req.segs[4])
	if !found {
		return unknownMessage()
	}
	return ok(messageJSON(st.messages[id]))
}

func decodeWebhookEdit(body []byte) (discordgo.WebhookEdit, error) {
	var aux struct {
		discordgo.WebhookEdit
		Components *[]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(body, &aux); err != nil {
		return discordgo.WebhookEdit{}, err
	}
	e := aux.WebhookEdit
	if aux.Components != nil {
		comps, err := decodeComponents(*aux.Components)
		if err != nil {
			return e, err
		}
		e.Components = &comps
	}
	return e, nil
}

func (s *Server) webhookEdit(req *request) result {
	st, res, valid := s.webhookLocked(req)
	if !valid {
		return res
	}
	e, err := decodeWebhookEdit(req.body)
	if err != nil {
		return badJSON()
	}
	mid := req.segs[4]
	id, found := st.messageFor(mid)
	if !found {
		return unknownMessage()
	}
	if e.Content != nil {
		embeds := 0
		if e.Embeds != nil {
			embeds = len(*e.Embeds)
		}
		if res, valid := checkContent("", *e.Content, embeds, true); !valid {
			return res
		}
	}
	m := s.editMessageLocked(st, id, e)
	s.edits = append(s.edits, WebhookEdit{Seq: s.nextSeqLocked(), ApplicationID: st.i.AppID, Token: st.i.Token,
		MessageID: mid, Edit: e, Method: http.MethodPatch, Message: m})
	return ok(messageJSON(m))
}

func decodeWebhookParams(body []byte) (discordgo.WebhookParams, error) {
	var aux struct {
		discordgo.WebhookParams
		Components []json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(body, &aux); err != nil {
		return discordgo.WebhookParams{}, err
	}
	comps, err := decodeComponents(aux.Components)
	aux.WebhookParams.Components = comps
	return aux.WebhookParams, err
}

// webhookExecute creates a followup message. Discord always answers with the
// message for interaction followups (wait is implied).
func (s *Server) webhookExecute(req *request) result {
	st, res, valid := s.webhookLocked(req)
	if !valid {
		return res
	}
	p, err := decodeWebhookParams(req.body)
	if err != nil {
		return badJSON()
	}
	if res, valid := checkContent("", p.Content, len(p.Embeds), len(p.Components) > 0); !valid {
		return res
	}
	m := s.interactionMessageLocked(st, p.Content, p.Embeds, p.Components, p.Flags, p.AllowedMentions)
	st.followups[m.ID] = true
	edit := discordgo.WebhookEdit{Content: &p.Content, AllowedMentions: p.AllowedMentions}
	if p.Components != nil {
		edit.Components = &p.Components
	}
	if p.Embeds != nil {
		edit.Embeds = &p.Embeds
	}
	s.edits = append(s.edits, WebhookEdit{Seq: s.nextSeqLocked(), ApplicationID: st.i.AppID, Token: st.i.Token,
		MessageID: m.ID, Edit: edit, Method: http.MethodPost, Message: m})
	return ok(messageJSON(m))
}
