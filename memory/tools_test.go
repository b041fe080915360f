package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
)

func toolMap(ts []mnemo.Tool) map[string]mnemo.Tool {
	m := map[string]mnemo.Tool{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

func call(t *testing.T, tools map[string]mnemo.Tool, name, args string) (string, error) {
	t.Helper()
	tool, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool.Call(context.Background(), json.RawMessage(args))
}

func TestToolSets(t *testing.T) {
	s := newStore(t)
	sess := mustUser(t, s, "alice").NewSession()
	var names []string
	for _, tl := range ReadTools(sess) {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "memory_list,memory_read,memory_search" {
		t.Fatalf("ReadTools = %v", names)
	}
	names = nil
	for _, tl := range AllTools(sess) {
		names = append(names, tl.Name)
		if tl.Description == "" || !json.Valid(tl.Parameters) {
			t.Errorf("%s: empty description or invalid schema", tl.Name)
		}
		var schema struct {
			Type                 string         `json:"type"`
			Properties           map[string]any `json:"properties"`
			AdditionalProperties bool           `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.Parameters, &schema); err != nil || schema.Type != "object" || schema.AdditionalProperties {
			t.Errorf("%s: schema %s", tl.Name, tl.Parameters)
		}
	}
	if strings.Join(names, ",") != "memory_list,memory_read,memory_write,memory_patch,memory_append,memory_search" {
		t.Fatalf("AllTools = %v", names)
	}
	if sess.User().Name() != "alice" {
		t.Fatal("session user")
	}
}

// The schemas must describe exactly the fields the tools accept: a call
// carrying every property the schema names is not rejected as bad
// arguments, one without a required property is, naming it, and one with a
// property the schema does not name is too.
func TestToolSchemasMatchParams(t *testing.T) {
	s := newStore(t)
	for _, tl := range AllTools(mustUser(t, s, "alice").NewSession()) {
		var schema map[string]any
		if err := json.Unmarshal(tl.Parameters, &schema); err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		full := sampleArgs(schema).(map[string]any)
		if _, err := tl.Call(context.Background(), mustJSON(t, full)); err != nil && strings.Contains(err.Error(), "bad arguments") {
			t.Errorf("%s: every schema property given, still %v", tl.Name, err)
		}
		required, _ := schema["required"].([]any)
		for _, r := range required {
			without := maps.Clone(full)
			delete(without, r.(string))
			if _, err := tl.Call(context.Background(), mustJSON(t, without)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("missing %q", r)) {
				t.Errorf("%s without required %q: %v", tl.Name, r, err)
			}
		}
		full["notInSchema"] = "x"
		if _, err := tl.Call(context.Background(), mustJSON(t, full)); err == nil || !strings.Contains(err.Error(), `unknown field "notInSchema"`) {
			t.Errorf("%s with a field the schema does not name: %v", tl.Name, err)
		}
	}
}

// sampleArgs is a value of every property a JSON Schema names.
func sampleArgs(schema map[string]any) any {
	switch schema["type"] {
	case "object":
		obj := map[string]any{}
		for name, p := range schema["properties"].(map[string]any) {
			obj[name] = sampleArgs(p.(map[string]any))
		}
		return obj
	case "array":
		return []any{sampleArgs(schema["items"].(map[string]any))}
	case "integer":
		return 1
	}
	return "x"
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolsEndToEnd(t *testing.T) {
	s := newStore(t)
	tools := toolMap(AllTools(mustUser(t, s, "alice").NewSession()))
	steps := []struct{ tool, args, want string }{
		{"memory_list", `{}`, `[]`},
		{"memory_list", ``, `[]`},
		{"memory_write", `{"path":"facts/user.md","content":"# User\n\n> Summary: name\n\n- Name: Ada\n"}`, `{"success":true}`},
		{"memory_read", `{"path":"facts/user.md"}`, "# User\n\n> Summary: name\n\n- Name: Ada\n"},
		{"memory_patch", `{"path":"facts/user.md","patches":[{"oldText":"Ada","newText":"Ada Lovelace"}]}`, `{"success":true,"appliedCount":1}`},
		{"memory_patch", `{"path":"facts/user.md","patches":[{"oldText":"Nope","newText":"x"}]}`, `{"success":false,"appliedCount":0,"error":"facts/user.md: patch does not apply: patch 1 of 1: oldText not found; nothing was applied"}`},
		{"memory_append", `{"path":"episodes/2026-02.md","entry":"## Fix\n- Summary: fixed it\n- Date: 2026-02-03\n"}`, `{"success":true}`},
		{"memory_append", `{"path":"episodes/2026-02.md","entry":"## Fix 2\n- Summary: again\n- Date: 2026-02-04\n","summary":"two fixes"}`, `{"success":true}`},
		{"memory_list", `{}`, `[{"path":"facts/user.md","summary":"name","size":SIZE(facts/user.md)},{"path":"episodes/2026-02.md","summary":"two fixes","size":SIZE(episodes/2026-02.md)}]`},
	}
	for _, st := range steps {
		for _, p := range []string{"facts/user.md", "episodes/2026-02.md"} {
			if fi, err := os.Stat(filepath.Join(s.Dir(), "alice", p)); err == nil {
				st.want = strings.ReplaceAll(st.want, "SIZE("+p+")", fmt.Sprint(fi.Size()))
			}
		}
		got, err := call(t, tools, st.tool, st.args)
		if err != nil || got != st.want {
			t.Fatalf("%s(%s) = %q, %v\nwant %q", st.tool, st.args, got, err, st.want)
		}
	}
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/empty.md"), "")
	if got, err := call(t, tools, "memory_read", `{"path":"facts/empty.md"}`); err != nil || got != "(the file is empty)" {
		t.Fatalf("empty read = %q, %v", got, err)
	}
	// A human edit between read and patch is reported in the result JSON.
	call(t, tools, "memory_read", `{"path":"facts/user.md"}`)
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/user.md"), "# User\n\n> Summary: name\n\n- Name: Grace\n")
	got, err := call(t, tools, "memory_patch", `{"path":"facts/user.md","patches":[{"oldText":"Ada Lovelace","newText":"x"}]}`)
	if err != nil || !strings.HasPrefix(got, `{"success":false,"appliedCount":0,"error":"facts/user.md changed on disk`) {
		t.Fatalf("conflict patch = %q, %v", got, err)
	}
}

func TestToolBadArguments(t *testing.T) {
	s := newStore(t)
	tools := toolMap(AllTools(mustUser(t, s, "alice").NewSession()))
	cases := []struct{ tool, args, want string }{
		{"memory_list", `{"x":1}`, `unknown field "x"`},
		{"memory_read", `{}`, `missing "path"`},
		{"memory_read", `null`, `missing "path"`},
		{"memory_read", `{"path":1}`, `cannot unmarshal number`},
		{"memory_read", `{"path":"facts/user.md"`, `unexpected EOF`},
		{"memory_read", `{"path":"facts/user.md"} {}`, `extra data`},
		{"memory_read", `[]`, `cannot unmarshal array`},
		{"memory_read", `{"paht":"facts/user.md"}`, `unknown field "paht"`},
		{"memory_read", `{"path":"../bob/facts/user.md"}`, `bad memory path`},
		{"memory_read", `{"path":"facts/none.md"}`, `no such memory file`},
		{"memory_write", `{"path":"facts/x.md"}`, `missing "content"`},
		{"memory_write", `{"path":"facts/x.md","content":"no title"}`, `# Title`},
		{"memory_patch", `{"path":"facts/x.md","patches":"x"}`, `cannot unmarshal string`},
		{"memory_patch", `{"path":"facts/x.md","patches":[{"old":"a"}]}`, `unknown field "old"`},
		{"memory_patch", `{"path":"facts/x.md","patches":[{"oldText":"a","newText":"b"}]}`, `no such memory file`},
		{"memory_patch", `{"path":"facts/x.md"}`, `missing "patches"`},
		{"memory_patch", `{"path":"facts/x.md","patches":[{"oldText":"a","newText":"b"},{"oldText":"a"}]}`, `missing "patches[1].newText"`},
		{"memory_patch", `{"path":"facts/x.md","patches":[{"newText":"b"}]}`, `missing "patches[0].oldText"`},
		{"memory_append", `{"path":"episodes/2026-02.md"}`, `missing "entry"`},
		{"memory_append", `{"path":"episodes/2026-02.md","entry":"x"}`, `## Title`},
	}
	for _, c := range cases {
		got, err := call(t, tools, c.tool, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) || got != "" {
			t.Errorf("%s(%s) = %q, %v; want error with %q", c.tool, c.args, got, err, c.want)
		}
		if err != nil && strings.Contains(c.want, "unmarshal") && !strings.Contains(err.Error(), "expected JSON matching") {
			t.Errorf("%s: error does not show the expected shape: %v", c.tool, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "alice")); !os.IsNotExist(err) {
		t.Fatal("bad calls created the user folder")
	}
}

func TestListToolError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	makeLayout(t, dir, []string{"alice -> bob", "bob/"})
	s := newStore(t, func(o *Options) { o.Dir = dir })
	tools := toolMap(ReadTools(mustUser(t, s, "alice").NewSession()))
	if _, err := call(t, tools, "memory_list", `{}`); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("list of a symlinked user = %v", err)
	}
}

func TestPreload(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	sess := u.NewSession()
	facts, eps, err := sess.Preload(1000)
	if err != nil || facts != "none yet" || eps != "none yet" {
		t.Fatalf("empty preload = %q %q %v", facts, eps, err)
	}
	dir := filepath.Join(s.Dir(), "alice")
	writeFile(t, filepath.Join(dir, "facts/user.md"), userFact)
	writeFile(t, filepath.Join(dir, "facts/work.md"), "# Work\n\n> Summary: job\n\n- Go dev\n")
	writeFile(t, filepath.Join(dir, "episodes/2026-01.md"), "# 2026-01 Episodes\n\n> Summary: jan\n")
	writeFile(t, filepath.Join(dir, "episodes/2026-02.md"), "# 2026-02 Episodes\n\n> Summary: feb\n")
	eventually(t, "files listed", func() bool { l, _ := u.List(); return len(l) == 4 })
	facts, eps, err = sess.Preload(1000)
	if err != nil {
		t.Fatal(err)
	}
	wantFacts := "### facts/user.md\n" + userFact + "\n\n### facts/work.md\n# Work\n\n> Summary: job\n\n- Go dev\n"
	if facts != wantFacts {
		t.Errorf("facts = %q", facts)
	}
	if eps != "- episodes/2026-02.md (35B): feb\n- episodes/2026-01.md (35B): jan" {
		t.Errorf("episodes = %q", eps)
	}
	// Pre-loaded facts count as read: the session may patch without reading.
	if _, err := sess.Patch("facts/user.md", []Patch{{OldText: "Zhang San", NewText: "Li Si"}}); err != nil {
		t.Fatalf("patch after preload = %v", err)
	}
	// Past the budget: the facts' index instead of their text.
	facts, _, _ = mustUser(t, s, "alice").NewSession().Preload(50)
	if !strings.Contains(facts, "more than the 50 bytes pre-loaded") || !strings.Contains(facts, "- facts/work.md (") || strings.Contains(facts, "Go dev") {
		t.Errorf("over-budget facts = %q", facts)
	}
	// A user whose folder is broken.
	makeLayout(t, s.Dir(), []string{"eve"})
	if _, _, err := mustUser(t, s, "eve").NewSession().Preload(10); err == nil {
		t.Fatal("preload of a broken folder succeeded")
	}
}
