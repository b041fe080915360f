package discordtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// Attachments' files are served at their url to anyone, as the CDN does.
func TestAttachmentFiles(t *testing.T) {
	t.Parallel()
	srv := seeded(t, discordtest.Options{})
	get := func(u string) (*http.Response, string) {
		t.Helper()
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	notes := srv.Attachment(channelID, discordtest.File{Name: "notes.md", Body: []byte("# hi")})
	if notes.ID == "" || notes.Filename != "notes.md" || notes.Size != 4 || notes.ContentType != "text/plain; charset=utf-8" ||
		!strings.HasPrefix(notes.URL, srv.URL()+"attachments/"+channelID+"/") || !strings.Contains(notes.URL, "?ex=") || notes.ProxyURL != notes.URL {
		t.Fatalf("attachment %+v", notes)
	}
	resp, body := get(notes.URL)
	if resp.StatusCode != 200 || body != "# hi" || resp.ContentLength != 4 {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	img := srv.Attachment(channelID, discordtest.File{Name: "p.png", ContentType: "image/png", Body: []byte{1}, Size: 9000})
	if img.Width == 0 || img.Size != 9000 {
		t.Fatalf("image %+v", img)
	}
	away := srv.Attachment(channelID, discordtest.File{Name: "a.txt", Body: []byte("x"), RedirectTo: "http://127.0.0.1:1/a.txt"})
	if resp, _ = get(away.URL); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://127.0.0.1:1/a.txt" {
		t.Fatalf("redirect %d", resp.StatusCode)
	}
	long := srv.Attachment(channelID, discordtest.File{Name: "l.log", Body: []byte("long"), Chunked: true})
	if resp, body = get(long.URL); body != "long" || resp.ContentLength != -1 {
		t.Fatalf("chunked %q %d", body, resp.ContentLength)
	}
	if resp, _ = get(srv.URL() + "attachments/1/2/none.txt"); resp.StatusCode != 404 {
		t.Fatalf("unknown %d", resp.StatusCode)
	}
	if f := srv.FileFetches(); len(f) != 4 || f[0].Status != 200 || f[1].Status != http.StatusFound || f[3].Status != 404 {
		t.Fatalf("fetches %+v", f)
	}
}
