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
	s := newStore(t)
	u := mustUser(t, s, "alice")
	path := filepath.Join(s.Dir(), "alice/facts/user.md")
	writeFile(t, path, userFact)
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
	if forModel(nil, "") != nil {
		t.Error("forModel(nil) is not nil")
	}
}

func errFrom[T any](_ T, err error) error { return err }
