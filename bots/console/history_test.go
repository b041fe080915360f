package console

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHistoryFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "chat", "alice.history")
	h, err := openHistory(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "one", "", "two\nlines", strings.Repeat("x", maxHistoryEntry+1), "bad\x1b[31m", "two"} {
		if err := h.record(m); err != nil {
			t.Fatal(err)
		}
	}
	h.Add("ignored: the session records whole messages")
	if h.Len() != 2 || h.At(0) != "two" || h.At(1) != "one" {
		t.Errorf("entries %q", h.entries)
	}
	h.close()
	if fi, err := os.Stat(filepath.Dir(file)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("history folder: %v %v", fi.Mode(), err)
	}
	// A file readable by others (made by hand) becomes private; lines the
	// editor cannot show are skipped.
	os.WriteFile(file, []byte("one\n\x07bell\n\xffbad utf-8\ntwo\n"), 0o644)
	h, err = openHistory(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want 0600", fi.Mode().Perm())
	}
	if h.Len() != 2 || h.At(0) != "two" {
		t.Errorf("entries %q", h.entries)
	}
}

// The editor recalls the last maxHistory messages; the file is cut back
// to them when it holds more than twice as many.
func TestHistoryIsBounded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "h")
	var b strings.Builder
	for i := range 2*maxHistory + 1 {
		fmt.Fprintf(&b, "m%d\n", i)
	}
	os.WriteFile(file, []byte(b.String()), 0o600)
	h, err := openHistory(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != maxHistory || h.At(0) != fmt.Sprint("m", 2*maxHistory) || h.At(maxHistory-1) != fmt.Sprint("m", maxHistory+1) {
		t.Errorf("len %d, newest %q, oldest %q", h.Len(), h.At(0), h.At(maxHistory-1))
	}
	h.record("new")
	h.close()
	data, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != maxHistory+1 || lines[0] != fmt.Sprint("m", maxHistory+1) || lines[maxHistory] != "new" {
		t.Errorf("file has %d lines: first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if h.Len() != maxHistory || h.At(0) != "new" {
		t.Errorf("in memory: len %d newest %q", h.Len(), h.At(0))
	}
	// Below twice the bound the file is left as it is.
	os.WriteFile(file, []byte(b.String()[:strings.Index(b.String(), fmt.Sprintf("m%d\n", maxHistory+5))]), 0o600)
	before, _ := os.ReadFile(file)
	h, _ = openHistory(nil, file)
	h.close()
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("a file within twice the bound was rewritten")
	}
}

// When the file cannot be kept, the chat says so and goes on with this
// session's history only.
func TestHistoryErrors(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("as root, permission errors are shown by a file in place of the folder")
	}
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o600)
	for name, path := range map[string]string{
		"folder is a file":  filepath.Join(notDir, "alice.history"),
		"history is a dir":  dir,
		"unwritable folder": filepath.Join(notDir, "x", "alice.history"),
	} {
		h, err := openHistory(nil, path)
		if err == nil || !strings.Contains(err.Error(), "chat history") {
			t.Errorf("%s: err = %v", name, err)
		}
		if h.record("kept for the session") != nil || h.Len() != 1 {
			t.Errorf("%s: the session's history does not work", name)
		}
		h.close()
	}
	// The rewrite of an over-long file fails: reported, entries kept.
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o700)
	os.WriteFile(filepath.Join(full, "h"), []byte(strings.Repeat("m\nn\n", maxHistory+1)), 0o600)
	os.Chmod(full, 0o500)
	defer os.Chmod(full, 0o700)
	if h, err := openHistory(nil, filepath.Join(full, "h")); os.Geteuid() != 0 && (err == nil || h.Len() != maxHistory) {
		t.Errorf("rewrite in a read-only folder: err %v, len %d", err, h.Len())
	}
	// A link in the history's place is not followed: its target is neither
	// appended to nor made 0600.
	target := filepath.Join(dir, "victim")
	os.WriteFile(target, []byte("keep me\n"), 0o644)
	link := filepath.Join(dir, "link.history")
	os.Symlink(target, link)
	if h, err := openHistory(nil, link); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("history through a link: err %v", err)
	} else {
		h.record("secret")
		h.close()
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target was chmodded: %v", fi.Mode())
	}
	// A write that fails stops keeping the file, once.
	h, err := openHistory(nil, filepath.Join(dir, "w"))
	if err != nil {
		t.Fatal(err)
	}
	h.f.Close()
	if err := h.record("a"); err == nil || !strings.Contains(err.Error(), "chat history") {
		t.Errorf("write error = %v", err)
	}
	if err := h.record("b"); err != nil || h.Len() != 2 {
		t.Errorf("after a write error: %v, len %d", err, h.Len())
	}
}

// The chat tells the person when history cannot be kept.
func TestChatSaysHistoryIsNotKept(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	got, out, err := keyChat(t, Config{History: filepath.Join(dir, "file", "alice.history")}, "hi\r")
	if err != nil || len(got) != 1 || !strings.Contains(out, "mnemo: chat history:") || !strings.Contains(out, "recalls only this chat") {
		t.Errorf("sent %q, err %v; screen %q", got, err, out)
	}
}

// In a folder opened by the caller, the history is opened through it: a
// link that leads out of the folder is refused, its target untouched.
func TestHistoryInARoot(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	h, err := openHistory(root, filepath.Join(dir, "ann.history"))
	if err != nil {
		t.Fatal(err)
	}
	h.record("hello")
	h.close()
	if b, _ := os.ReadFile(filepath.Join(dir, "ann.history")); string(b) != "hello\n" {
		t.Errorf("history file %q", b)
	}
	// A link in its place that leads out of the folder.
	outside := t.TempDir()
	target := filepath.Join(outside, "bob.history")
	os.WriteFile(target, []byte("keep me\n"), 0o644)
	os.Symlink(target, filepath.Join(dir, "bob.history"))
	if _, err := openHistory(root, filepath.Join(dir, "bob.history")); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("history through a link: err %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
