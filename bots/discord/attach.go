package discord

import (
	"context"
	"net/url"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

var _ pipeline.Attacher[*incoming] = platform{}

// attachFiles is what the model is told of a message's attachments.
func attachFiles(as []*discordgo.MessageAttachment) []attach.File {
	var out []attach.File
	for _, a := range as {
		if a != nil {
			out = append(out, attach.File{Name: a.Filename, Type: a.ContentType, Size: int64(a.Size), URL: a.URL})
		}
	}
	return out
}

// newAttachReader reads attachments from Discord's CDN (and the
// configured API's host, a test's fake): they need no credential.
func (b *Bot) newAttachReader() *attach.Reader {
	return &attach.Reader{
		Client: b.http, MaxBytes: int64(b.cfg.AttachmentMaxBytes), Log: b.log,
		Allowed: func(u *url.URL) bool {
			cdn := u.Host == "cdn.discordapp.com" || u.Host == "media.discordapp.net"
			return u.Scheme == "https" && cdn || u.Host == b.apiURL.Host && u.Scheme == b.apiURL.Scheme
		},
	}
}

// Attach reads in's attachments for the model (pipeline.Attacher), when
// it is answered: the journal keeps them (their names and urls) with the
// message.
func (p platform) Attach(ctx context.Context, in *incoming) string {
	return p.b.attach.Render(ctx, attachFiles(in.msg.Attachments))
}
