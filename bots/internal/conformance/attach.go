package conformance

import (
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/attach"
)

// File is a file a person attaches to a message, as the platform's file
// server holds it.
type File struct {
	Name string
	Type string // the MIME type the platform announces
	Body []byte
}

// Attaching is a Bot whose platform lets a person attach files to a
// message (Feature Attachments).
type Attaching interface {
	// DMFiles sends a direct message from the test's user with text and
	// files attached; it returns once the fake sent it.
	DMFiles(text string, files ...File) Ref
	// Fetched is the URL paths the platform's file server was asked for
	// so far, in the order asked (the row reads the file names off them).
	Fetched() []string
}

// attachLimit is the row's attachments.maxBytes: a few lines of text.
const attachLimit = 64

// attachments: a small text file attached to a message reaches the model
// with it, quoted as data after the message; a text file over
// attachments.maxBytes is named with why it was not read; an image is
// named and never fetched. Only the text file within the limit is asked
// of the platform's file server.
func attachments(t *testing.T, d Driver) {
	b := d.Start(t, Setup{AttachmentMaxBytes: attachLimit})
	ab, ok := b.(Attaching)
	expect(t, ok, "%T takes attachments (it does not lack Attachments) but is not an Attaching", b)
	ab.DMFiles("see these",
		File{Name: "notes.txt", Type: "text/plain", Body: []byte("buy milk\n")},
		File{Name: "big.log", Type: "text/plain", Body: []byte(strings.Repeat("x", attachLimit+36))},
		File{Name: "photo.png", Type: "image/png", Body: []byte("\x89PNG\r\n\x1a\n")})
	tasks := b.Handler().WaitTasks(t, 1, Wait)
	got := tasks[0].Text
	rest := got
	for _, want := range []string{
		"see these",
		"\n\n" + attach.Intro + "\n",
		"Attached file notes.txt (9 bytes):\n```text\nbuy milk\n```",
		"Attached: big.log (text/plain, 100 bytes), not read: larger than the 64 bytes of attachments read with one message.",
		"Attached: photo.png (image/png, 8 bytes), not read: only text files are read.",
	} {
		i := strings.Index(rest, want)
		expect(t, i >= 0, "the model was given\n%s\nwant %q (in this order)", got, want)
		rest = rest[i+len(want):]
	}
	expect(t, !strings.Contains(got, strings.Repeat("x", 10)), "the file over the limit was read:\n%s", got)
	var fetched []string
	for _, p := range ab.Fetched() {
		name, err := url.PathUnescape(path.Base(p))
		if err != nil {
			name = p
		}
		fetched = append(fetched, name)
	}
	expect(t, slices.Equal(fetched, []string{"notes.txt"}), "the file server was asked for %q; want only notes.txt (never the image, nor the file over the limit)", fetched)
}
