package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// TestHistoryThroughTheBinary: the reflector's write and a person's edit
// while chat runs are kept as versions; restore brings one back; forget
// removes the history unless --keep-history.
func TestHistoryThroughTheBinary(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Zhang San and I write Go.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	reflected := w.file(t, "zhangsan/facts/user.md")
	h := cli(t, w.env, "memory", "history", "zhangsan", "facts/user.md")
	h.want(t, 0, "reflector", "")
	if n := strings.Count(strings.TrimSpace(h.stdout), "\n"); n != 1 || !strings.Contains(h.stdout, "created, ") {
		t.Fatalf("history after one reflection:\n%s", h.stdout)
	}
	first := strings.Fields(strings.Split(h.stdout, "\n")[1])[0]

	// A hand edit while chat runs: once it has answered a message, its
	// watcher is up.
	in, feed := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan cliResult, 1)
	go func() {
		var errOut bytes.Buffer
		err := run(stopOn(context.Background()), []string{"chat", "--user", "zhangsan"}, func(k string) string { return w.env[k] }, in, outW, &errOut)
		outW.Close()
		done <- cliResult{exitCode(err, &errOut), "", errOut.String()}
	}()
	replies := bufio.NewReader(outR)
	go io.WriteString(feed, "What's my name?\n")
	if line, err := replies.ReadString('\n'); err != nil || line != "Your name is Zhang San.\n" {
		t.Fatalf("first reply %q, %v", line, err)
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	if err := watcher.Add(filepath.Join(w.dir, "data", "state", "history", "zhangsan", "facts", "user.md")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.dir, "data", "memory", "zhangsan", "facts", "user.md")
	if err := os.WriteFile(file, []byte(reflected+"- Editor: vim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for ev := range watcher.Events { // the version's record is written last
		if strings.HasSuffix(ev.Name, ".json") && ev.Has(fsnotify.Create) {
			break
		}
	}
	// A restore while chat runs: no lock needed, the running chat sees it.
	cli(t, w.env, "memory", "restore", "zhangsan", "facts/user.md", "--at", first).want(t, 0, "restored facts/user.md of zhangsan to version "+first, "")
	if got := w.file(t, "zhangsan/facts/user.md"); got != reflected {
		t.Errorf("restored text %q", got)
	}
	go io.Copy(io.Discard, replies)
	feed.Close()
	if r := <-done; r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	h = cli(t, w.env, "memory", "history", "zhangsan", "facts/user.md")
	if lines := strings.Split(strings.TrimSpace(h.stdout), "\n"); len(lines) != 4 || !strings.Contains(lines[1], "restore of "+first) ||
		!strings.Contains(lines[2], "hand edit") || !strings.Contains(lines[2], "+1 −0 lines") {
		t.Fatalf("history after a hand edit and a restore:\n%s", h.stdout)
	}
	cli(t, w.env, "memory", "forget", "zhangsan", "facts/user.md", "--yes", "--keep-history").want(t, 0, "deleted", "")
	cli(t, w.env, "memory", "history", "zhangsan").want(t, 0, "restore of "+first, "")
	chatLines := filepath.Join(w.dir, "data", "state", "chat", "zhangsan.history")
	os.MkdirAll(filepath.Dir(chatLines), 0o700)
	os.WriteFile(chatLines, []byte("my secret line\n"), 0o600)
	cli(t, w.env, "memory", "forget", "zhangsan", "--yes").want(t, 0, "deleted", "")
	if _, err := os.Stat(chatLines); !os.IsNotExist(err) {
		t.Error("the terminal chat's line history survived a forget")
	}
	cli(t, w.env, "memory", "history", "zhangsan").want(t, 0, "no history of zhangsan", "")
}

// TestMemoryEditWhileChatRunsIsOneRow: `memory edit` while a chat runs
// is one change and one history row, the admin's. Before the fix the
// running chat's watcher kept the same text again as a "hand edit" (or
// first, with the admin's "earlier text" and edit after it).
func TestMemoryEditWhileChatRunsIsOneRow(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Zhang San and I write Go.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	reflected := w.file(t, "zhangsan/facts/user.md")
	in, feed := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan cliResult, 1)
	go func() {
		var errOut bytes.Buffer
		err := run(stopOn(context.Background()), []string{"chat", "--user", "zhangsan"}, func(k string) string { return w.env[k] }, in, outW, &errOut)
		outW.Close()
		done <- cliResult{exitCode(err, &errOut), "", errOut.String()}
	}()
	replies := bufio.NewReader(outR)
	go io.WriteString(feed, "What's my name?\n")
	if line, err := replies.ReadString('\n'); err != nil || line != "Your name is Zhang San.\n" {
		t.Fatalf("first reply %q, %v", line, err)
	}
	go io.Copy(io.Discard, replies)

	editor := filepath.Join(w.dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf -- '- Editor: helix\\n' >> \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"EDITOR": editor, "TMPDIR": w.dir, "USER": "root-admin"}
	for k, v := range w.env {
		env[k] = v
	}
	// The admin's version is kept before the file changes: a watcher
	// that looks at the history as soon as the file changes finds it there.
	hist := filepath.Join(w.dir, "data", "state", "history", "zhangsan", "facts", "user.md")
	files, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	if err := files.Add(filepath.Join(w.dir, "data", "memory", "zhangsan", "facts")); err != nil {
		t.Fatal(err)
	}
	edited := make(chan cliResult, 1)
	go func() { edited <- cli(t, env, "memory", "edit", "zhangsan", "facts/user.md") }()
	for ev := range files.Events {
		if filepath.Base(ev.Name) == "user.md" && ev.Has(fsnotify.Create) {
			break
		}
	}
	if kept, _ := filepath.Glob(filepath.Join(hist, "*.json")); len(kept) != 2 {
		t.Errorf("when the edited file is in place the history holds %d versions, want 2 (the reflector's and the admin's)", len(kept))
	}
	(<-edited).want(t, 0, "", "saved facts/user.md of zhangsan")

	// A person's edit after it: once the chat has kept that one, its
	// watcher has handled the admin's edit before it.
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	if err := watcher.Add(hist); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.dir, "data", "memory", "zhangsan", "facts", "user.md")
	if err := os.WriteFile(file, []byte(reflected+"- Editor: helix\n- Shell: fish\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for ev := range watcher.Events {
		if strings.HasSuffix(ev.Name, ".json") && ev.Has(fsnotify.Create) {
			break
		}
	}
	feed.Close()
	if r := <-done; r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	h := cli(t, w.env, "memory", "history", "zhangsan", "facts/user.md")
	lines := strings.Split(strings.TrimSpace(h.stdout), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "hand edit") || !strings.Contains(lines[2], "root-admin (memory edit)") ||
		!strings.Contains(lines[3], "reflector") || strings.Count(h.stdout, "hand edit") != 1 {
		t.Fatalf("history after an admin's edit and a person's, chat running:\n%s", h.stdout)
	}
}
