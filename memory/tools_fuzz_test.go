package memory

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzToolArgs: whatever arguments a model sends, every tool answers with
// a result or an error — never a panic — and nothing is ever written
// outside the user's folder.
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"path":"facts/user.md"}`, `{"path":"../x"}`, `null`, `[]`, `{"path":1}`,
		`{"path":"facts/a.md","content":"# A\n> Summary: a\n"}`,
		`{"path":"facts/a.md","patches":[{"oldText":"A","newText":"B"}]}`,
		`{"path":"episodes/2026-02.md","entry":"## T\n- Summary: s\n- Date: 2026-02-01\n","summary":"x"}`,
	} {
		for i := range 5 {
			f.Add(uint8(i), s)
		}
	}
	top := f.TempDir()
	s, err := Open(Options{Dir: filepath.Join(top, "memory"), EditWait: 1})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	u, _ := s.User("alice")
	writeFile(f, filepath.Join(top, "memory/bob/facts/user.md"), userFact)
	writeFile(f, filepath.Join(top, "memory/alice/facts/a.md"), "# A\n\n> Summary: a\n\n- A\n")
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		tools := AllTools(u.NewSession())
		tool := tools[int(which)%len(tools)]
		out, err := tool.Call(context.Background(), json.RawMessage(args))
		if err == nil && out == "" {
			t.Fatalf("%s(%q): empty result without an error", tool.Name, args)
		}
		if readFile(t, filepath.Join(top, "memory/bob/facts/user.md")) != userFact {
			t.Fatalf("%s(%q) changed another user's file", tool.Name, args)
		}
		entries, _ := os.ReadDir(top)
		for _, e := range entries {
			if e.Name() != "memory" && !strings.HasPrefix(e.Name(), "fuzz") {
				t.Fatalf("%s(%q) created %s outside the memory root", tool.Name, args, e.Name())
			}
		}
	})
}
