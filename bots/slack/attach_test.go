package slack

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// TestAttachments: files in a DM (a file_share message, as Slack sends
// it) and in a mention are given to the model with the message: a text
// file read with the bot token, an image and a file over the cap named
// and never fetched, a binary one refused, a long one cut at the cap.
func TestAttachments(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.AttachmentMaxBytes = 200 }})
	notes := hs.srv.AddFile(slacktest.File{Name: "notes.txt", Body: []byte("buy milk\n")})
	photo := hs.srv.AddFile(slacktest.File{Name: "photo.png", Mimetype: "image/png", Filetype: "png", Body: []byte("\x89PNG\r\n\x1a\n"), Size: 120 << 10})
	big := hs.srv.AddFile(slacktest.File{Name: "big.log", Body: []byte(strings.Repeat("x", 300))})
	bin := hs.srv.AddFile(slacktest.File{Name: "data.txt", Body: []byte("ab\x00cd")})
	long := hs.srv.AddFile(slacktest.File{Name: "long.md", Body: []byte(strings.Repeat("y", 300)), Size: 50, Chunked: true})

	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", Text: "see these", Files: []slacktest.File{notes, photo, big, bin}})
	task := hs.h.WaitTasks(t, 1, wait)[0]
	bottest.InOrder(t, task.Text, "see these", attach.Intro,
		"Attached file notes.txt (9 bytes):\n```text\nbuy milk\n```",
		"Attached: photo.png (image/png, 120 KB), not read: only text files are read.",
		"Attached: big.log (text/plain, 300 bytes), not read: larger than the 200 bytes",
		"Attached: data.txt (text/plain, 5 bytes), not read: could not read data.txt: it holds NUL bytes")
	fetched := map[string]bool{}
	for _, f := range hs.srv.FileFetches() {
		if f.Authorization != "Bearer "+hs.srv.Options().BotToken {
			t.Errorf("fetched without the bot token: %+v", f)
		}
		fetched[f.Path[strings.LastIndex(f.Path, "/")+1:]] = true
	}
	if !fetched["notes.txt"] || !fetched["data.txt"] || fetched["photo.png"] || fetched["big.log"] {
		t.Errorf("fetched %v", fetched)
	}

	// A mention in a channel, with a file longer than it says.
	hs.srv.AppMention(slacktest.AppMentionEvent{Text: "<@" + hs.srv.Options().BotUserID + "> and this", Files: []slacktest.File{long}})
	task = hs.h.WaitTasks(t, 2, wait)[1]
	bottest.InOrder(t, task.Text, "and this", "Attached file long.md (more than 200 bytes):\n```text\n"+strings.Repeat("y", 200)+"\n```",
		"long.md is cut here: only its first 200 bytes")
	if strings.Contains(task.Text, strings.Repeat("y", 201)) {
		t.Error("read past the cap")
	}
}

// TestAttachmentLoginPage: without files:read Slack answers url_private
// with a login page; it is refused, never given to the model as the file.
func TestAttachmentLoginPage(t *testing.T) {
	hs := start(t, setup{config: func(c *Config) { c.AttachmentMaxBytes = attach.DefaultMaxBytes }})
	hs.srv.RefuseFiles(true)
	notes := hs.srv.AddFile(slacktest.File{Name: "notes.txt", Body: []byte("buy milk")})
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", Text: "read it", Files: []slacktest.File{notes}})
	task := hs.h.WaitTasks(t, 1, wait)[0]
	bottest.InOrder(t, task.Text, "could not read notes.txt: Slack returned a login page; the bot needs the files:read scope")
	if strings.Contains(task.Text, "Sign in") || strings.Contains(task.Text, "buy milk") {
		t.Fatalf("task %q", task.Text)
	}
	waitFor(t, "the warning", func() bool { return strings.Contains(hs.logs.String(), "attachment not read") })
}

// TestAttachmentRedirect: a redirect to another host is not followed (the
// token would go with it, and what answers is not the file).
func TestAttachmentRedirect(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("elsewhere"))
	}))
	defer other.Close()
	hs := start(t, setup{config: func(c *Config) { c.AttachmentMaxBytes = attach.DefaultMaxBytes }})
	f := hs.srv.AddFile(slacktest.File{Name: "notes.txt", Body: []byte("buy milk"), RedirectTo: other.URL + "/notes.txt"})
	elsewhere := hs.srv.AddFile(slacktest.File{Name: "x.txt", Body: []byte("x"), URLPrivate: other.URL + "/x.txt"})
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", Text: "read it", Files: []slacktest.File{f, elsewhere}})
	task := hs.h.WaitTasks(t, 1, wait)[0]
	bottest.InOrder(t, task.Text, "could not read notes.txt: it redirected to another host, which is not followed",
		"could not read x.txt: its address is not one the platform serves files from")
	if hits.Load() != 0 || strings.Contains(task.Text, "elsewhere") {
		t.Fatalf("the other host was asked %d times: %q", hits.Load(), task.Text)
	}
}

// TestAttachmentsJournaled: the journal keeps a message's files (names
// and addresses), so an answer after a restart reads them again; a
// deleted file is left out, an external one never fetched.
func TestAttachmentsJournaled(t *testing.T) {
	files := attachFiles([]slackFile{
		{Name: "a.txt", Mimetype: "text/plain", Size: 3, Mode: "hosted", URLPrivate: "https://files.slack.com/files-pri/T1-F1/a.txt"},
		{Mode: "tombstone"},
		{Name: "doc", Title: "Plan", Mode: "external", URLPrivate: "https://docs.example.com/x"},
		{Title: "Snippet", Mimetype: "text/plain", Mode: "snippet", URLPrivate: "https://files.slack.com/files-pri/T1-F2/-.txt"},
	})
	if len(files) != 3 || files[0].URL == "" || files[1].URL != "" || files[1].Name != "doc" || files[2].Name != "Snippet" {
		t.Fatalf("files %+v", files)
	}
	m := &incoming{workspace: "T1", team: "T1", author: "U1", channel: "D1", ts: "1.000001", files: files}
	m.Conversation, m.DM, m.Text = "slack:T1:D1:", true, "hi"
	data, _ := json.Marshal(m.wire())
	var w wireIncoming
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	back := w.Incoming(intake.Entry{ID: "msg:T1/D1/1.000001"}, slog.New(slog.DiscardHandler))
	if len(back.files) != 3 || back.files[0] != files[0] {
		t.Fatalf("back %+v", back.files)
	}
}
