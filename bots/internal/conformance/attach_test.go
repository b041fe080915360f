package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"sync"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// refFiles is the reference chat's file server (on loopback): files by
// name, and every request for one noted.
type refFiles struct {
	srv    *httptest.Server
	reader *attach.Reader

	mu      sync.Mutex
	files   map[string]File
	fetched []string
}

func newRefFiles(t *testing.T, maxBytes int) *refFiles {
	f := &refFiles{files: map[string]File{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	host := f.srv.Listener.Addr().String()
	f.reader = &attach.Reader{Client: f.srv.Client(), MaxBytes: int64(maxBytes), Source: "the reference chat",
		Allowed: func(u *url.URL) bool { return u.Host == host }}
	return f
}

func (f *refFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := path.Base(r.URL.Path)
	f.mu.Lock()
	file, ok := f.files[name]
	f.fetched = append(f.fetched, name)
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", file.Type)
	_, _ = w.Write(file.Body)
}

// add stores file and returns it as a message of the chat carries it.
func (f *refFiles) add(file File) attach.File {
	f.mu.Lock()
	f.files[file.Name] = file
	f.mu.Unlock()
	return attach.File{Name: file.Name, Type: file.Type, Size: int64(len(file.Body)), URL: f.srv.URL + "/files/" + url.PathEscape(file.Name)}
}

// The reference chat's messages may carry files: read as every platform
// reads them (attach.Reader).
var _ pipeline.Attacher[*refMsg] = (*refChat)(nil)

func (c *refChat) Attach(ctx context.Context, m *refMsg) string {
	return c.files.reader.Render(ctx, m.files)
}

func (b *refBot) DMFiles(text string, files ...File) Ref {
	var as []attach.File
	for _, f := range files {
		as = append(as, b.chat.files.add(f))
	}
	return b.send(text, true, as...)
}

func (b *refBot) Fetched() []string {
	b.chat.files.mu.Lock()
	defer b.chat.files.mu.Unlock()
	return append([]string(nil), b.chat.files.fetched...)
}

var _ Attaching = (*refBot)(nil)
