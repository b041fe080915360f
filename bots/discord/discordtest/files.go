package discordtest

import (
	"bytes"
	"cmp"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"
	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// File is the file behind a message attachment, served by the fake at the
// attachment's url (URL()+"/attachments/CHANNEL/ID/NAME") as Discord's CDN
// serves it: to anyone, no credential; a query (Discord signs its
// attachment URLs with ex, is and hm) is ignored.
type File struct {
	Name        string
	ContentType string // "" → text/plain; charset=utf-8
	Body        []byte
	// Size is what the attachment announces; 0 → len(Body).
	Size int
	// RedirectTo, when set, makes the url answer 302 to it instead.
	RedirectTo string
	// Chunked sends the body without a Content-Length.
	Chunked bool
}

// FileFetch is a GET of an attachment's url.
type FileFetch struct {
	Seq    int
	Path   string
	Status int
}

// Attachment stores f as a file of channel and returns the attachment a
// MESSAGE_CREATE carries for it (id, filename, size, url, proxy_url,
// content_type; width and height for an image).
func (s *Server) Attachment(channel string, f File) *discordgo.MessageAttachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newIDLocked()
	f.ContentType = cmp.Or(f.ContentType, "text/plain; charset=utf-8")
	if f.Size == 0 {
		f.Size = len(f.Body)
	}
	f.Body = bytes.Clone(f.Body)
	path := "/attachments/" + channel + "/" + id + "/" + url.PathEscape(f.Name)
	if s.files == nil {
		s.files = map[string]File{}
	}
	s.files[path] = f
	a := &discordgo.MessageAttachment{ID: id, Filename: f.Name, Size: f.Size, ContentType: f.ContentType,
		URL: s.URL() + strings.TrimPrefix(path, "/") + "?ex=6700000&is=6600000&hm=" + id}
	a.ProxyURL = a.URL
	if strings.HasPrefix(f.ContentType, "image/") {
		a.Width, a.Height = 640, 480
	}
	return a
}

// FileFetches returns the GETs of attachment urls, in order.
func (s *Server) FileFetches() []FileFetch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FileFetch(nil), s.fetches...)
}

// serveFile answers an attachment's url.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, known := s.files[r.URL.Path]
	status := http.StatusOK
	switch {
	case !known:
		status = http.StatusNotFound
	case f.RedirectTo != "":
		status = http.StatusFound
	}
	s.fetches = append(s.fetches, FileFetch{Seq: s.nextSeqLocked(), Path: r.URL.Path, Status: status})
	s.changes.NotifyLocked()
	s.mu.Unlock()
	switch status {
	case http.StatusNotFound:
		http.NotFound(w, r)
	case http.StatusFound:
		http.Redirect(w, r, f.RedirectTo, http.StatusFound)
	default:
		faketest.ServeBody(w, f.ContentType, f.Body, f.Chunked)
	}
}
