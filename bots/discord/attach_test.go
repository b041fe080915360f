package discord

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// TestAttachments: a MESSAGE_CREATE's attachments are given to the model
// with the message: a text file read from its url, an image and a file
// over the cap named and never fetched, a binary one refused, one longer
// than it says cut at the cap, a redirect to another host not followed.
func TestAttachments(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("elsewhere"))
	}))
	defer other.Close()
	hs := start(t, setup{config: func(c *Config) { c.AttachmentMaxBytes = 200 }})
	at := func(f discordtest.File) *discordgo.MessageAttachment { return hs.srv.Attachment(dmID, f) }
	notes := at(discordtest.File{Name: "notes.md", Body: []byte("# Plan\n\nship it\n")})
	photo := at(discordtest.File{Name: "photo.png", ContentType: "image/png", Body: []byte("\x89PNG\r\n\x1a\n"), Size: 120 << 10})
	big := at(discordtest.File{Name: "big.log", Body: []byte(strings.Repeat("x", 300))})
	bin := at(discordtest.File{Name: "data.txt", Body: []byte("ab\x00cd")})
	away := at(discordtest.File{Name: "away.txt", Body: []byte("x"), RedirectTo: other.URL + "/away.txt"})

	hs.srv.MessageCreate(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "see these",
		Attachments: []*discordgo.MessageAttachment{notes, photo, big, bin, away}})
	task := hs.h.WaitTasks(t, 1, wait)[0]
	bottest.InOrder(t, task.Text, "see these", attach.Intro,
		"Attached file notes.md (16 bytes):\n```text\n# Plan\n\nship it\n```",
		"Attached: photo.png (image/png, 120 KB), not read: only text files are read.",
		"Attached: big.log (text/plain, 300 bytes), not read: larger than the 200 bytes",
		"could not read data.txt: it holds NUL bytes",
		"could not read away.txt: it redirected to another host, which is not followed")
	if hits.Load() != 0 || strings.Contains(task.Text, "elsewhere") {
		t.Fatalf("the other host was asked %d times", hits.Load())
	}
	fetched := map[string]bool{}
	for _, f := range hs.srv.FileFetches() {
		fetched[f.Path[strings.LastIndex(f.Path, "/")+1:]] = true
	}
	if !fetched["notes.md"] || !fetched["data.txt"] || fetched["photo.png"] || fetched["big.log"] {
		t.Errorf("fetched %v", fetched)
	}

	// A mention in a channel, with a file longer than it says.
	long := hs.srv.Attachment(channelID, discordtest.File{Name: "long.go", Body: []byte(strings.Repeat("y", 300)), Size: 50, Chunked: true})
	bot := hs.srv.Options().BotID
	hs.srv.MessageCreate(discordgo.Message{ChannelID: channelID, GuildID: guildID, Author: &bob, Content: "<@" + bot + "> and this",
		Mentions: []*discordgo.User{{ID: bot, Bot: true}}, Attachments: []*discordgo.MessageAttachment{long}})
	task = hs.h.WaitTasks(t, 2, wait)[1]
	bottest.InOrder(t, task.Text, "and this", "Attached file long.go (more than 200 bytes):\n```text\n"+strings.Repeat("y", 200)+"\n```",
		"long.go is cut here")
}

// TestAttachmentsJournaled: the journal keeps a message's attachments, so
// an answer after a restart reads them again.
func TestAttachmentsJournaled(t *testing.T) {
	m := &discordgo.Message{ID: "1", ChannelID: "2", Author: &alice, Attachments: []*discordgo.MessageAttachment{
		{ID: "3", Filename: "a.txt", Size: 3, ContentType: "text/plain", URL: "https://cdn.discordapp.com/attachments/2/3/a.txt"}, nil}}
	files := attachFiles(slim(m, true).Attachments)
	if len(files) != 1 || files[0] != (attach.File{Name: "a.txt", Type: "text/plain", Size: 3, URL: "https://cdn.discordapp.com/attachments/2/3/a.txt"}) {
		t.Fatalf("files %+v", files)
	}
}

// TestAttachmentsReplayed: a message with a file, journaled before a crash,
// is answered after the restart with the file read then (the journal keeps
// its address, not its text).
func TestAttachmentsReplayed(t *testing.T) {
	dir := t.TempDir()
	hs := start(t, setup{
		config: func(c *Config) { c.IntakeDir, c.AttachmentMaxBytes = dir, attach.DefaultMaxBytes },
		before: func(srv *discordtest.Server) {
			f := srv.Attachment(dmID, discordtest.File{Name: "notes.txt", Body: []byte("buy milk")})
			m := srv.AddMessage(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "read this",
				Attachments: []*discordgo.MessageAttachment{f}})
			j, err := intake.Open(intake.Options{Dir: dir, Name: "discord"})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			in := &incoming{msg: &m, Message: pipeline.Message{DM: true, User: "discord-" + aliceID, Text: m.Content, Conversation: "discord:dm:" + dmID}}
			data, _ := json.Marshal(in.wire())
			if strings.Contains(string(data), "buy milk") || !strings.Contains(string(data), "notes.txt") {
				t.Fatalf("journaled %s", data)
			}
			if err := j.Add(intake.Entry{ID: "msg:" + m.ID, User: in.User, Data: data})[0]; err != nil {
				t.Fatal(err)
			}
		},
	})
	task := hs.h.WaitTasks(t, 1, wait)[0]
	bottest.InOrder(t, task.Text, "read this", "Attached file notes.txt (8 bytes):\n```text\nbuy milk\n```")
}
