package slacktest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slack-go/slack/slackevents"
)

// get fetches u with the given Authorization, following no redirect.
func get(t *testing.T, u, auth string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Files are served at url_private to the bot token only, else a login
// page; events carry them as Slack does.
func TestFiles(t *testing.T) {
	srv := New(t, Options{})
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	bearer := "Bearer " + srv.Options().BotToken
	notes := srv.AddFile(File{Name: "notes.txt", Body: []byte("buy milk")})
	if notes.ID == "" || notes.Mimetype != "text/plain" || notes.Mode != "hosted" || notes.Size != 8 ||
		!strings.HasPrefix(notes.URLPrivate, srv.URL()+"/files-pri/T0TEAM-") {
		t.Fatalf("file %+v", notes)
	}
	resp, body := get(t, notes.URLPrivate, bearer)
	if resp.StatusCode != 200 || body != "buy milk" || resp.Header.Get("Content-Length") != "8" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = get(t, notes.URLPrivate, "Bearer xoxb-wrong")
	login := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(login, "/signin?redir=") {
		t.Fatalf("no token: %d %q", resp.StatusCode, login)
	}
	resp, body = get(t, srv.URL()+login, "")
	if resp.StatusCode != 200 || !strings.Contains(body, "<html>") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("login page: %d %q", resp.StatusCode, body)
	}
	srv.RefuseFiles(true)
	if resp, _ = get(t, notes.URLPrivate, bearer); resp.StatusCode != http.StatusFound {
		t.Fatalf("refused files: %d", resp.StatusCode)
	}
	srv.RefuseFiles(false)

	away := srv.AddFile(File{Name: "a.md", Body: []byte("x"), RedirectTo: other.URL + "/a.md"})
	if resp, _ = get(t, away.URLPrivate, bearer); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != other.URL+"/a.md" {
		t.Fatalf("redirect: %d %v", resp.StatusCode, resp.Header)
	}
	chunked := srv.AddFile(File{Name: "c.log", Body: []byte("long"), Size: 2, Chunked: true})
	if resp, body = get(t, chunked.URLPrivate, bearer); body != "long" || resp.ContentLength != -1 || chunked.Size != 2 {
		t.Fatalf("chunked: %q %d", body, resp.ContentLength)
	}
	gone := srv.AddFile(File{Name: "gone.txt", Mode: "tombstone"})
	if resp, _ = get(t, gone.URLPrivate, bearer); resp.StatusCode != 404 {
		t.Fatalf("tombstone: %d", resp.StatusCode)
	}
	if resp, _ = get(t, srv.URL()+"/files-pri/T0TEAM-F0NONE/x.txt", bearer); resp.StatusCode != 404 {
		t.Fatalf("unknown: %d", resp.StatusCode)
	}
	fetches := srv.FileFetches()
	if len(fetches) != 7 || fetches[0].Status != 200 || fetches[0].Authorization != bearer || fetches[1].Status != http.StatusFound {
		t.Fatalf("fetches %+v", fetches)
	}

	// A DM with files is a file_share message with a files array; a
	// mention carries the array too.
	img := srv.AddFile(File{Name: "p.png", Mimetype: "image/png", Filetype: "png", Body: []byte{1}})
	for _, env := range []Envelope{
		srv.Message(MessageEvent{Text: "see", Files: []File{notes, img, gone}}),
		srv.AppMention(AppMentionEvent{Files: []File{notes, img, gone}}),
	} {
		var cb struct {
			Event struct {
				Type    string `json:"type"`
				SubType string `json:"subtype"`
				Upload  bool   `json:"upload"`
				Files   []slackevents.File
			} `json:"event"`
		}
		if err := json.Unmarshal(env.Payload, &cb); err != nil {
			t.Fatal(err)
		}
		e := cb.Event
		if len(e.Files) != 3 || e.Files[0].URLPrivate != notes.URLPrivate || e.Files[0].Size != 8 || e.Files[1].Mimetype != "image/png" ||
			e.Files[2].URLPrivate != "" || e.Files[2].Mode != "tombstone" || e.Files[0].User != DefaultUserID ||
			!strings.Contains(e.Files[0].URLPrivateDownload, "/download/") {
			t.Errorf("%s files %+v", e.Type, e.Files)
		}
		if (e.Type == "message") != (e.SubType == "file_share") {
			t.Errorf("%s subtype %q", e.Type, e.SubType)
		}
	}
}
