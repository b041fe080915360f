package discordtest

import "github.com/bwmarrin/discordgo"

// MessageCommand dispatches INTERACTION_CREATE for the message
// context-menu command name (type 3, MESSAGE) used on target, as Discord
// sends it: data {name, type: 3, target_id, resolved: {messages:
// {target_id: message}}}, the message as the server holds it when it has
// one with that id in that channel (MessageCreate stored it), else target
// as given (with its channel and guild filled in). i gives who used it and
// where (InteractionCreate fills in the rest).
func (s *Server) MessageCommand(name string, i discordgo.Interaction, target discordgo.Message) discordgo.Interaction {
	s.mu.Lock()
	if target.ChannelID == "" {
		target.ChannelID = i.ChannelID
	}
	if target.GuildID == "" {
		target.GuildID = i.GuildID
	}
	if n, ok := s.findMessageLocked(target.ChannelID, target.ID); ok {
		target = s.history[target.ChannelID][n]
	}
	target.Author = s.userLocked(target.Author)
	m := cloneMessage(target)
	s.mu.Unlock()
	i.Type = discordgo.InteractionApplicationCommand
	i.Data = discordgo.ApplicationCommandInteractionData{Name: name, CommandType: discordgo.MessageApplicationCommand,
		TargetID: m.ID, Resolved: &discordgo.ApplicationCommandInteractionDataResolved{
			Messages: map[string]*discordgo.Message{m.ID: &m}}}
	return s.InteractionCreate(i)
}
