package console

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/memory/durable"
	"golang.org/x/term"
)

// History bounds: the editor recalls the last maxHistory messages; the
// file is cut back to them once it holds twice as many. A longer message
// than maxHistoryEntry bytes (a pasted log) is not kept.
const (
	maxHistory      = 1000
	maxHistoryEntry = 4096
)

// history is the line editor's history for one memory user, kept in a
// file so the up arrow recalls messages of earlier chats: one message a
// line, oldest first, mode 0600 in a 0700 folder (what a person types may
// be private). Only one-line messages are kept.
type history struct {
	entries []string // oldest first
	f       *os.File // appended to; nil when not kept in a file
	path    string
}

var _ term.History = (*history)(nil)

// openHistory loads the history file at path ("" → this session only).
// With root set, the file is path's base name in root (its folder,
// opened by the caller); else path's folder is made (0700) and opened.
// Either way the file is opened through an os.Root: a link there that
// leads out of the folder is refused, never written through.
// On an error the returned history still works, for this session only.
func openHistory(root *os.Root, path string) (*history, error) {
	h := &history{path: path}
	if path == "" {
		return h, nil
	}
	if root == nil {
		dir := filepath.Dir(path)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return h, fmt.Errorf("chat history: %w", err)
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			return h, fmt.Errorf("chat history: %w", err)
		}
		defer r.Close() // the file opened from it stays open
		root = r
	}
	name := filepath.Base(path)
	if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return h, fmt.Errorf("chat history: %s is a symbolic link; mnemo does not follow links in its state folder: remove it", path)
	}
	data, err := root.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return h, fmt.Errorf("chat history: %w", err)
	}
	var all []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if historyEntry(l) {
			all = append(all, l)
		}
	}
	h.entries = all[max(0, len(all)-maxHistory):]
	if len(all) > 2*maxHistory {
		if err := rewrite(root, name, h.entries); err != nil {
			return h, fmt.Errorf("chat history: %w", err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return h, fmt.Errorf("chat history: %w", err)
	}
	// A file made by hand (or by an older version) may be readable by others.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return h, fmt.Errorf("chat history: %w", err)
	}
	h.f = f
	return h, nil
}

// historyEntry reports whether s can be an entry: one line the editor
// can show, not too long.
func historyEntry(s string) bool {
	if s == "" || len(s) > maxHistoryEntry || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 })
}

// rewrite replaces the file name in root with entries, atomically: a
// private (0600) temp file beside it, fsynced and renamed over it (the
// rename replaces a link at name; it never writes where one points).
func rewrite(root *os.Root, name string, entries []string) error {
	return durable.WriteFile(durable.RootDir{Root: root}, name, []byte(strings.Join(entries, "\n")+"\n"), durable.WriteOptions{})
}

// Add is the editor's: it would add every line, also each line of a
// message typed over several; the session records whole messages.
func (h *history) Add(string) {}

// Len is the number of entries.
func (h *history) Len() int { return len(h.entries) }

// At is the entry i places back from the newest (0).
func (h *history) At(i int) string { return h.entries[len(h.entries)-1-i] }

// record adds a message sent; a repeat of the last one is not added.
// A write error stops keeping the file (the entry stays for this
// session) and is returned once.
func (h *history) record(msg string) error {
	if !historyEntry(msg) || len(h.entries) > 0 && h.entries[len(h.entries)-1] == msg {
		return nil
	}
	h.entries = append(h.entries, msg)
	if len(h.entries) > maxHistory {
		h.entries = h.entries[1:]
	}
	if h.f == nil {
		return nil
	}
	if _, err := h.f.WriteString(msg + "\n"); err != nil {
		h.f.Close()
		h.f = nil
		return fmt.Errorf("chat history: %w", err)
	}
	return nil
}

// forget drops every entry and stops writing the file: the user's memory
// was forgotten, and the file with it (by the caller); nothing typed
// before may come back.
func (h *history) forget() {
	h.entries = nil
	h.close()
	h.f = nil
}

func (h *history) close() {
	if h.f != nil {
		h.f.Close()
	}
}
