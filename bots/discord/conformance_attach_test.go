package discord

import (
	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
)

// DMFiles sends alice's DM with files attached (stored on discordtest's
// attachment host).
func (b *discordBot) DMFiles(text string, files ...conformance.File) conformance.Ref {
	var as []*discordgo.MessageAttachment
	for _, f := range files {
		as = append(as, b.hs.srv.Attachment(dmID, discordtest.File{Name: f.Name, ContentType: f.Type, Body: f.Body}))
	}
	return b.keep(b.hs.srv.MessageCreate(discordgo.Message{ChannelID: dmID, Author: &alice, Content: text, Attachments: as}))
}

// Fetched is the paths asked of discordtest's file handler.
func (b *discordBot) Fetched() []string {
	var paths []string
	for _, f := range b.hs.srv.FileFetches() {
		paths = append(paths, f.Path)
	}
	return paths
}

var _ conformance.Attaching = (*discordBot)(nil)
