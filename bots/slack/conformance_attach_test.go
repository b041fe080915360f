package slack

import (
	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// DMFiles sends a file_share DM from the test's user with files uploaded
// to slacktest (their url_private on the fake).
func (b *slackBot) DMFiles(text string, files ...conformance.File) conformance.Ref {
	var fs []slacktest.File
	for _, f := range files {
		fs = append(fs, b.hs.srv.AddFile(slacktest.File{Name: f.Name, Mimetype: f.Type, Body: f.Body}))
	}
	return b.send("D1", b.hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: slacktest.DefaultUserID, Text: text, Files: fs}))
}

// Fetched is the paths asked of slacktest's url_private handler.
func (b *slackBot) Fetched() []string {
	var paths []string
	for _, f := range b.hs.srv.FileFetches() {
		paths = append(paths, f.Path)
	}
	return paths
}

var _ conformance.Attaching = (*slackBot)(nil)
