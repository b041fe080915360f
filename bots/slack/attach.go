package slack

import (
	"cmp"
	"context"
	"net/http"
	"net/url"

	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

var _ pipeline.Attacher[*incoming] = platform{}

// filesHost is where Slack serves url_private: the bot token goes there
// and to the configured API's host (a test's fake), nowhere else.
const filesHost = "files.slack.com"

// slackFile is what the adapter reads of a file in a message event's
// "files" array.
type slackFile struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	Mimetype   string `json:"mimetype"`
	Size       int64  `json:"size"`
	Mode       string `json:"mode"` // hosted, snippet, external, tombstone …
	URLPrivate string `json:"url_private"`
}

// attachFiles is what the model is told of an event's files: a deleted
// one (tombstone) is left out, an external one (a link to another
// service) named, never fetched.
func attachFiles(files []slackFile) []attach.File {
	var out []attach.File
	for _, f := range files {
		if f.Mode == "tombstone" {
			continue
		}
		a := attach.File{Name: cmp.Or(f.Name, f.Title), Type: f.Mimetype, Size: f.Size}
		if f.Mode != "external" {
			a.URL = f.URLPrivate
		}
		out = append(out, a)
	}
	return out
}

// newAttachReader reads files with the bot token as a Bearer credential
// (url_private needs it, and the files:read scope), from Slack's file
// host only.
func (b *Bot) newAttachReader() *attach.Reader {
	return &attach.Reader{
		Client: b.http, MaxBytes: int64(b.cfg.AttachmentMaxBytes), Source: "Slack", Log: b.log,
		Hint: "the bot needs the files:read scope (add it under OAuth & Permissions and reinstall the app)",
		Allowed: func(u *url.URL) bool {
			return u.Scheme == "https" && u.Host == filesHost || u.Host == b.apiURL.Host && u.Scheme == b.apiURL.Scheme
		},
		Authorize: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+b.cfg.BotToken) },
	}
}

// Attach reads m's files for the model (pipeline.Attacher), when it is
// answered: the journal keeps their names and addresses.
func (p platform) Attach(ctx context.Context, m *incoming) string {
	return p.b.attach.Render(ctx, m.files)
}
