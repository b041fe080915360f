package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// forgetBrain is a model whose reflector remembers where the person
// lives, moves them, and forgets it when asked — with a blank patch, as
// the reflector's prompt says — and whose Thinker only says "Noted.".
func forgetBrain(r openaitest.Request) (openaitest.Reply, bool) {
	msgs := r.Chat.Messages
	if !strings.Contains(r.System(), "memory reflector") {
		return openaitest.Text("Noted."), true
	}
	if msgs[len(msgs)-1].Role == "tool" {
		return openaitest.Text("saved"), true
	}
	patch := func(old, new string) openaitest.Reply {
		return openaitest.ToolCalls(openaitest.Call("memory_patch", toolJSON(map[string]any{"path": "facts/user.md",
			"patches": []map[string]string{{"oldText": old, "newText": new}}})))
	}
	tr := r.LastUser()
	switch {
	case strings.Contains(tr, "I live in Lyon"):
		return openaitest.ToolCalls(openaitest.Call("memory_write", toolJSON(map[string]string{"path": "facts/user.md",
			"content": "# User Facts\n\n> Summary: name, home\n\n- Name: Zhang San\n- Lives in: Lyon\n"}))), true
	case strings.Contains(tr, "I moved to Berlin"):
		return patch("- Lives in: Lyon", "- Lives in: Berlin"), true
	case strings.Contains(tr, "forget where I live"):
		return patch("- Lives in: Berlin\n", ""), true
	}
	return openaitest.Text("nothing to remember"), true
}

// Issue 35 item 2 through the binary: a fact that changed keeps its past
// in the file and in the history; a person's "forget that" deletes the
// fact, its past, and every version of them the history kept — what
// `mnemo memory history`, `restore` and `why` can reach.
func TestForgetThatThroughTheBinary(t *testing.T) {
	w := newChatWorld(t)
	w.srv.Handle(forgetBrain)
	for _, said := range []string{"I'm Zhang San and I live in Lyon.", "I moved to Berlin.", "Please forget where I live."} {
		w.chat(t, said+"\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	}
	// Before the forget the file kept Lyon under Earlier (the versions
	// below show it); after it, only the name is left.
	got := w.file(t, "zhangsan/facts/user.md")
	if strings.Contains(got, "Lives in") || strings.Contains(got, "Lyon") || strings.Contains(got, "Berlin") || !strings.Contains(got, "- Name: Zhang San") {
		t.Fatalf("facts/user.md after the forget:\n%s", got)
	}
	h := cli(t, w.env, "memory", "history", "zhangsan", "facts/user.md")
	h.want(t, 0, "reflector", "")
	rows := strings.Split(strings.TrimSpace(h.stdout), "\n")[1:]
	if len(rows) != 3 {
		t.Fatalf("history: want the write, the move and the forget:\n%s", h.stdout)
	}
	hist := filepath.Join(w.dir, "data", "state", "history", "zhangsan")
	n := 0
	filepath.Walk(hist, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		n++
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "Lyon") || strings.Contains(string(b), "Berlin") {
			t.Errorf("the history still holds the forgotten fact in %s:\n%s", p, b)
		}
		return nil
	})
	if n != 6 {
		t.Errorf("%d files in the history, want 3 versions (text and record each)", n)
	}
	// The oldest version restores whole, without the fact.
	first := strings.Fields(rows[len(rows)-1])[0]
	cli(t, w.env, "memory", "restore", "zhangsan", "facts/user.md", "--at", first).want(t, 0, "restored facts/user.md of zhangsan", "")
	if got := w.file(t, "zhangsan/facts/user.md"); !strings.Contains(got, "- Name: Zhang San") || strings.Contains(got, "Lyon") {
		t.Errorf("restored:\n%s", got)
	}
	cli(t, w.env, "memory", "why", "zhangsan", "Lyon").want(t, 0, "Nothing I remember matches", "")
	cli(t, w.env, "memory", "check").want(t, 0, "", "")
}
