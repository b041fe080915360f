package slacktest

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// File is a file a person attached to a message, served by the fake at its
// url_private (under URL()+"/files-pri/") as Slack serves files: only with
// "Authorization: Bearer <BotToken>"; without it, or while RefuseFiles is
// on (a token without the files:read scope), the address redirects to a
// login page (HTML, 200) — on the same host here, on the workspace's host
// on Slack.
type File struct {
	ID       string // "F…"; AddFile makes one
	Name     string
	Title    string // "" → Name
	Mimetype string // "" → text/plain
	Filetype string // "" → "text"
	Mode     string // "" → "hosted"; "snippet", "external", "tombstone"
	Body     []byte
	// Size is what the event announces; 0 → len(Body).
	Size int
	// URLPrivate is set by AddFile (a test may replace it).
	URLPrivate string
	// RedirectTo, when set, makes url_private answer 302 to it (another
	// host, say) instead of the file.
	RedirectTo string
	// Chunked sends the body without a Content-Length.
	Chunked bool
}

// FileFetch is a GET of a file's url_private.
type FileFetch struct {
	Seq           int
	Path          string
	Authorization string
	Status        int
}

type wireFile struct {
	ID                 string `json:"id"`
	Created            int64  `json:"created"`
	Timestamp          int64  `json:"timestamp"`
	Name               string `json:"name"`
	Title              string `json:"title"`
	Mimetype           string `json:"mimetype"`
	Filetype           string `json:"filetype"`
	PrettyType         string `json:"pretty_type"`
	User               string `json:"user"`
	UserTeam           string `json:"user_team"`
	Editable           bool   `json:"editable"`
	Size               int    `json:"size"`
	Mode               string `json:"mode"`
	IsExternal         bool   `json:"is_external"`
	ExternalType       string `json:"external_type"`
	IsPublic           bool   `json:"is_public"`
	PublicURLShared    bool   `json:"public_url_shared"`
	DisplayAsBot       bool   `json:"display_as_bot"`
	Username           string `json:"username"`
	URLPrivate         string `json:"url_private,omitempty"`
	URLPrivateDownload string `json:"url_private_download,omitempty"`
	Permalink          string `json:"permalink"`
	PermalinkPublic    string `json:"permalink_public"`
	FileAccess         string `json:"file_access"`
	HasRichPreview     bool   `json:"has_rich_preview"`
}

// AddFile stores f (defaults filled in, an id and url_private given) and
// returns it, to attach to a MessageEvent or AppMentionEvent.
func (s *Server) AddFile(f File) File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.ID == "" {
		f.ID = fmt.Sprintf("F0%08d", s.nextIDLocked())
	}
	f.Title = cmp.Or(f.Title, f.Name)
	f.Mimetype = cmp.Or(f.Mimetype, "text/plain")
	f.Filetype = cmp.Or(f.Filetype, "text")
	f.Mode = cmp.Or(f.Mode, "hosted")
	if f.Size == 0 {
		f.Size = len(f.Body)
	}
	if f.URLPrivate == "" {
		f.URLPrivate = s.URL() + "/files-pri/" + s.opts.TeamID + "-" + f.ID + "/" + url.PathEscape(f.Name)
	}
	f.Body = bytes.Clone(f.Body)
	if s.files == nil {
		s.files = map[string]File{}
	}
	s.files[f.ID] = f
	return f
}

// RefuseFiles makes every url_private redirect to the login page, as
// Slack does for a token without the files:read scope.
func (s *Server) RefuseFiles(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseFiles = refuse
}

// FileFetches returns the GETs of files' addresses, in order.
func (s *Server) FileFetches() []FileFetch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FileFetch(nil), s.fetches...)
}

// wireFilesLocked is files as an event carries them, from user.
func (s *Server) wireFilesLocked(files []File, user string) []wireFile {
	var out []wireFile
	for _, f := range files {
		w := wireFile{ID: f.ID, Created: 1700000000, Timestamp: 1700000000, Name: f.Name, Title: cmp.Or(f.Title, f.Name),
			Mimetype: f.Mimetype, Filetype: f.Filetype, PrettyType: f.Filetype, User: user, UserTeam: s.opts.TeamID,
			Editable: f.Mode == "snippet", Size: cmp.Or(f.Size, len(f.Body)), Mode: f.Mode, IsExternal: f.Mode == "external",
			URLPrivate: f.URLPrivate, Permalink: "https://" + s.opts.TeamName + ".slack.com/files/" + user + "/" + f.ID + "/" + f.Name,
			FileAccess: "visible"}
		if f.URLPrivate != "" {
			w.URLPrivateDownload = strings.Replace(f.URLPrivate, "/files-pri/"+s.opts.TeamID+"-"+f.ID+"/",
				"/files-pri/"+s.opts.TeamID+"-"+f.ID+"/download/", 1)
		}
		if f.Mode == "tombstone" {
			w.Name, w.Title, w.URLPrivate, w.URLPrivateDownload = "", "", "", ""
		}
		out = append(out, w)
	}
	return out
}

// serveFile answers url_private (/files-pri/TEAM-ID/name) and the login
// page (/signin).
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/signin" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Slack</title></head><body><form>Sign in to "+s.opts.TeamName+"</form></body></html>")
		return
	}
	s.mu.Lock()
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/"+s.opts.TeamID+"-")
	id, _, _ := strings.Cut(rest, "/")
	f, known := s.files[id]
	authorized := r.Header.Get("Authorization") == "Bearer "+s.opts.BotToken && !s.refuseFiles
	status := http.StatusOK
	switch {
	case !known || f.Mode == "tombstone":
		status = http.StatusNotFound
	case !authorized:
		status = http.StatusFound
	case f.RedirectTo != "":
		status = http.StatusFound
	}
	s.fetches = append(s.fetches, FileFetch{Seq: s.nextSeqLocked(), Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Status: status})
	s.changes.NotifyLocked()
	s.mu.Unlock()
	switch {
	case status == http.StatusNotFound:
		http.NotFound(w, r)
	case !authorized:
		http.Redirect(w, r, "/signin?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
	case f.RedirectTo != "":
		http.Redirect(w, r, f.RedirectTo, http.StatusFound)
	default:
		faketest.ServeBody(w, f.Mimetype, f.Body, f.Chunked)
	}
}
