package attach

import (
	"bytes"
	"errors"
	"net/http"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// textExts are the extensions of files read as text: prose, logs, data
// and common code; textNames whole names read as text.
const (
	textExts = `txt text md markdown rst adoc org log csv tsv json jsonl ndjson yaml yml toml ini cfg conf
		properties env xml sql graphql gql proto diff patch
		go py rb rs js mjs cjs ts tsx jsx java kt kts scala groovy c h cc cpp cxx hpp hh cs fs swift m mm php pl pm lua r
		dart ex exs erl hrl hs clj cljs elm ml mli nim zig v sh bash zsh fish ps1 bat cmd awk sed tf hcl nix
		css scss sass less vue svelte astro tex bib mk cmake gradle dockerfile gitignore editorconfig`
	textNames = "dockerfile makefile readme license gemfile procfile justfile vagrantfile"
)

// IsText reports whether a file is one to read: by its extension or
// name, or a text type the platform gives (a Slack snippet has no
// extension); never an HTML page, an image or other binary type.
func IsText(name, mimeType string) bool {
	lower := strings.ToLower(strings.TrimSpace(name))
	if ext := strings.TrimPrefix(path.Ext(lower), "."); ext != "" && slices.Contains(strings.Fields(textExts), ext) ||
		slices.Contains(strings.Fields(textNames), lower) {
		return true
	}
	t, _, _ := strings.Cut(strings.ToLower(mimeType), ";")
	t = strings.TrimSpace(t)
	return strings.HasPrefix(t, "text/") && t != "text/html"
}

// Errors of CheckText.
var (
	ErrNotUTF8 = errors.New("it is not UTF-8 text")
	ErrNUL     = errors.New("it holds NUL bytes: it is binary, not text")
	ErrBinary  = errors.New("its bytes are not text")
)

// CheckText reports why b is not text: not valid UTF-8, a NUL byte, or
// content net/http.DetectContentType does not take for text. nil: text.
func CheckText(b []byte) error {
	switch {
	case bytes.IndexByte(b, 0) >= 0:
		return ErrNUL
	case !utf8.Valid(b):
		return ErrNotUTF8
	case !strings.HasPrefix(Sniff(b), "text/"):
		return ErrBinary
	}
	return nil
}

// Sniff is the media type net/http.DetectContentType gives b, without
// its parameters ("text/plain", "text/html", "image/png" …).
func Sniff(b []byte) string {
	t, _, _ := strings.Cut(http.DetectContentType(b), ";")
	return t
}
