package memory

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolErrorWording: the store's errors say what went wrong; the tools
// add what the model should do next, in the very words the model has
// always been given. The store's own texts carry no tool names.
func TestToolErrorWording(t *testing.T) {
	s, u, path := aliceWithUserFact(t)
	tools := toolMap(AllTools(u.NewSession()))
	steps := []struct{ tool, args, want string }{
		{"memory_read", `{"path":"facts/none.md"}`, "facts/none.md: no such memory file; memory_list shows the files that exist"},
		{"memory_patch", `{"path":"facts/none.md","patches":[{"oldText":"a","newText":"b"}]}`, "facts/none.md: no such memory file; memory_list shows the files that exist"},
		{"memory_write", `{"path":"facts/user.md","content":"# User\n\n> Summary: s\n\n- x\n"}`, "facts/user.md: not read first: it already exists; memory_read it, then write the whole updated file (or use memory_patch)"},
		{"memory_patch", `{"path":"facts/user.md","patches":[{"oldText":"Zhang San","newText":"Ada"}]}`, "facts/user.md: not read first: memory_read it, then patch what you read"},
	}
	for _, st := range steps {
		if _, err := call(t, tools, st.tool, st.args); err == nil || err.Error() != st.want {
			t.Errorf("%s(%s) error:\n%v\nwant\n%s", st.tool, st.args, err, st.want)
		}
	}

	// A person's edit after the read: a write is refused, a patch reports it.
	must(t, errFrom(call(t, tools, "memory_read", `{"path":"facts/user.md"}`)))
	writeFile(t, path, strings.Replace(userFact, "Zhang San", "Zhang Wei", 1))
	_, err := call(t, tools, "memory_write", `{"path":"facts/user.md","content":"# User\n\n> Summary: s\n\n- x\n"}`)
	const edited = "facts/user.md changed on disk since it was read (it was edited, probably by a person, after you read it); memory_read it again and redo your change on what is there now"
	if err == nil || err.Error() != edited || !errors.Is(err, ErrConflict) {
		t.Errorf("write after an edit: %v", err)
	}
	got, err := call(t, tools, "memory_patch", `{"path":"facts/user.md","patches":[{"oldText":"Zhang San","newText":"Ada"}]}`)
	want := `{"success":false,"appliedCount":0,"error":"` + edited + `; also: facts/user.md: patch does not apply: patch 1 of 1: oldText not found; nothing was applied"}`
	if err != nil || got != want {
		t.Errorf("patch after an edit = %s, %v\nwant %s", got, err, want)
	}

	// The store's errors, as a person (the CLI) reads them.
	sess := u.NewSession()
	if err := sess.Write("facts/user.md", userFact); !errors.Is(err, ErrNotRead) || err.Error() != "facts/user.md: not read first: it already exists" {
		t.Errorf("store's not-read error: %v", err)
	}
	if _, err := u.Read("facts/none.md"); !errors.Is(err, ErrNotFound) || err.Error() != "facts/none.md: no such memory file" {
		t.Errorf("store's not-found error: %v", err)
	}
	must(t, errFrom(sess.Read("facts/user.md")))
	must(t, errFrom(0, u.Remove("facts/user.md")))
	_, err = sess.Patch("facts/user.md", []Patch{{OldText: "x", NewText: "y"}})
	var c *ConflictError
	if !errors.As(err, &c) || c.How != "was deleted" || err.Error() != "facts/user.md changed on disk since it was read (it was deleted after it was read)" {
		t.Errorf("store's conflict error: %v", err)
	}
	// The wrong kind of file, and the size limits.
	small := toolMap(AllTools(mustUser(t, newStore(t, func(o *Options) { o.WriteCap = 64 }), "bob").NewSession()))
	entry := "## T\n- Summary: s\n- Date: 2026-03-01\n"
	long := strings.Repeat("x", 80)
	for _, st := range []struct{ tool, args, want string }{
		{"memory_write", `{"path":"episodes/2026-03.md","content":"x"}`, "bad memory path: memory_write writes facts/<name>.md files; add to episodes/2026-03.md with memory_append"},
		{"memory_append", `{"path":"facts/user.md","entry":"x"}`, "bad memory path: memory_append adds to episodes/YYYY-MM.md files; change facts/user.md with memory_write or memory_patch"},
		{"memory_write", `{"path":"facts/big.md","content":"` + long + `"}`, "facts/big.md: too large: 80 bytes, the limit is 64; keep facts short or split them into several files"},
		{"memory_append", `{"path":"episodes/2026-03.md","entry":"` + long + `"}`, "episodes/2026-03.md: too large: the entry is 80 bytes, the limit is 64; keep entries to the essentials"},
	} {
		if _, err := call(t, small, st.tool, st.args); err == nil || err.Error() != st.want {
			t.Errorf("%s(%s) error:\n%v\nwant\n%s", st.tool, st.args, err, st.want)
		}
	}
	full := filepath.Join(s.Dir(), "alice/episodes/2026-03.md")
	writeFile(t, full, "# 2026-03 Episodes\n\n> Summary: s\n\n"+strings.Repeat("y", maxEpisodeFile))
	_, err = call(t, tools, "memory_append", `{"path":"episodes/2026-03.md","entry":"`+strings.ReplaceAll(entry, "\n", `\n`)+`"}`)
	if want := "episodes/2026-03.md: too large: the file would pass 1048576 bytes; ask an admin to split or trim it"; err == nil || err.Error() != want || !errors.Is(err, ErrTooLarge) {
		t.Errorf("append to a full file: %v\nwant %s", err, want)
	}
	if err := sess.Append("episodes/2026-03.md", entry, ""); !errors.Is(err, ErrFileFull) || strings.Contains(err.Error(), "admin") {
		t.Errorf("store's file-full error: %v", err)
	}
	if err := sess.Write("episodes/2026-03.md", "x"); !errors.Is(err, ErrBadPath) || strings.Contains(err.Error(), "memory_") {
		t.Errorf("store's wrong-kind error: %v", err)
	}
	if err := sess.Append("facts/user.md", entry, ""); !errors.Is(err, ErrBadPath) || strings.Contains(err.Error(), "memory_") {
		t.Errorf("store's wrong-kind error: %v", err)
	}
	if forModel(nil) != nil {
		t.Error("forModel(nil) is not nil")
	}
}

func errFrom[T any](_ T, err error) error { return err }
