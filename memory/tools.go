package memory

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mnemo-agent/mnemo/agent"
)

//go:embed tools/*.md
var toolDocs embed.FS

func toolDoc(name string) string {
	b, err := toolDocs.ReadFile("tools/" + name + ".md")
	if err != nil {
		panic("memory: missing embedded tool description " + name) // a build mistake, caught by every test
	}
	return strings.TrimSpace(string(b))
}

// Parameters of each tool, with their JSON Schema beside them.
type (
	listParams struct{}
	readParams struct {
		Path string `json:"path"`
	}
	writeParams struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	patchParams struct {
		Path    string  `json:"path"`
		Patches []Patch `json:"patches"`
	}
	appendParams struct {
		Path    string `json:"path"`
		Entry   string `json:"entry"`
		Summary string `json:"summary"`
	}
)

const pathSchema = `{"type":"string","description":"facts/<name>.md or episodes/YYYY-MM.md"}`

var (
	listSchema   = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	readSchema   = json.RawMessage(`{"type":"object","properties":{"path":` + pathSchema + `},"required":["path"],"additionalProperties":false}`)
	writeSchema  = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"facts/<name>.md"},"content":{"type":"string","description":"the whole file: # Title, > Summary: line, facts"}},"required":["path","content"],"additionalProperties":false}`)
	patchSchema  = json.RawMessage(`{"type":"object","properties":{"path":` + pathSchema + `,"patches":{"type":"array","minItems":1,"items":{"type":"object","properties":{"oldText":{"type":"string","description":"exact text to replace; must occur once"},"newText":{"type":"string"}},"required":["oldText","newText"],"additionalProperties":false}}},"required":["path","patches"],"additionalProperties":false}`)
	appendSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"episodes/YYYY-MM.md"},"entry":{"type":"string","description":"## Title, - Summary: ..., - Date: YYYY-MM-DD, details"},"summary":{"type":"string","description":"optional new file-level summary"}},"required":["path","entry"],"additionalProperties":false}`)
)

// decodeArgs decodes a model's JSON arguments strictly: unknown fields,
// wrong types, trailing data and missing required fields are errors that
// tell the model the expected shape.
func decodeArgs(tool string, raw json.RawMessage, v any, schema json.RawMessage, required ...string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	fail := func(err error) error {
		return fmt.Errorf("%s: bad arguments (%v); expected JSON matching %s", tool, err, schema)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fail(errors.New("extra data after the JSON object"))
	}
	var present map[string]json.RawMessage
	_ = json.Unmarshal(raw, &present) // already decoded once: it is an object
	for _, k := range required {
		if _, ok := present[k]; !ok {
			return fail(fmt.Errorf("missing %q", k))
		}
	}
	return nil
}

func jsonResult(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

type patchResult struct {
	Success      bool   `json:"success"`
	AppliedCount int    `json:"appliedCount"`
	Error        string `json:"error,omitempty"`
}

var okResult = `{"success":true}`

func listTool(s *Session) agent.Tool {
	return agent.Tool{Name: "memory_list", Description: toolDoc("memory_list"), Parameters: listSchema,
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			if err := decodeArgs("memory_list", raw, &listParams{}, listSchema); err != nil {
				return "", err
			}
			files, err := s.u.List()
			if err != nil {
				return "", err
			}
			return listResult(files, listBudget), nil
		}}
}

// listBudget bounds the bytes of a memory_list result (about 200 files).
const listBudget = 16 << 10

// listOmitted is the last element of a memory_list result that had to
// leave files out: path "" and size 0, so it reads as one more
// {path, summary, size}, with the count in omitted too.
type listOmitted struct {
	Path    string `json:"path"`
	Summary string `json:"summary"`
	Size    int64  `json:"size"`
	Omitted int    `json:"omitted"`
}

// listResult renders files (List's order: facts first, then episodes,
// newest first) as the JSON array [{path, summary, size}, ...] within
// budget bytes. Files past the budget are never dropped silently: a last
// element (listOmitted) says how many were left out.
func listResult(files []FileInfo, budget int) string {
	facts := 0
	for _, f := range files {
		if strings.HasPrefix(f.Path, factsDir+"/") {
			facts++
		}
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, f := range files {
		entry, _ := json.Marshal(f) // strings and an int: cannot fail
		room := budget - b.Len() - len("]")
		if i > 0 {
			room-- // the comma
		}
		if rest := len(files) - i - 1; rest > 0 {
			room -= len(",") + len(omittedEntry(rest, max(facts-i-1, 0), budget)) // keep space to say what is left out
		}
		if i > 0 {
			b.WriteByte(',')
		}
		if len(entry) > room {
			b.Write(omittedEntry(len(files)-i, max(facts-i, 0), budget))
			break
		}
		b.Write(entry)
	}
	b.WriteByte(']')
	return b.String()
}

// omittedEntry is the JSON of the listOmitted for n files left out, facts
// of them fact files.
func omittedEntry(n, facts, budget int) []byte {
	var what []string
	if facts > 0 {
		what = append(what, plural(facts, "fact file"))
	}
	if eps := n - facts; eps > 0 {
		what = append(what, plural(eps, "older episode file")+" (episodes/YYYY-MM.md)")
	}
	e, _ := json.Marshal(listOmitted{Omitted: n, Summary: fmt.Sprintf(
		"(%s not listed: the list is limited to %d bytes. Left out: %s. memory_read reads any file by its path.)",
		plural(n, "more file"), budget, strings.Join(what, " and "))})
	return e
}

// plural is "1 fact file" or "2 fact files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func readTool(s *Session) agent.Tool {
	return agent.Tool{Name: "memory_read", Description: toolDoc("memory_read"), Parameters: readSchema,
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			var a readParams
			if err := decodeArgs("memory_read", raw, &a, readSchema, "path"); err != nil {
				return "", err
			}
			text, err := s.Read(a.Path)
			if err != nil {
				return "", err
			}
			if text == "" {
				return "(the file is empty)", nil
			}
			return text, nil
		}}
}

func writeTool(s *Session) agent.Tool {
	return agent.Tool{Name: "memory_write", Description: toolDoc("memory_write"), Parameters: writeSchema,
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			var a writeParams
			if err := decodeArgs("memory_write", raw, &a, writeSchema, "path", "content"); err != nil {
				return "", err
			}
			if err := s.Write(a.Path, a.Content); err != nil {
				return "", err
			}
			return okResult, nil
		}}
}

func patchTool(s *Session) agent.Tool {
	return agent.Tool{Name: "memory_patch", Description: toolDoc("memory_patch"), Parameters: patchSchema,
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			var a patchParams
			if err := decodeArgs("memory_patch", raw, &a, patchSchema, "path", "patches"); err != nil {
				return "", err
			}
			n, err := s.Patch(a.Path, a.Patches)
			if errors.Is(err, ErrPatch) || errors.Is(err, ErrConflict) {
				return jsonResult(patchResult{Success: false, AppliedCount: 0, Error: err.Error()})
			}
			if err != nil {
				return "", err
			}
			return jsonResult(patchResult{Success: true, AppliedCount: n})
		}}
}

func appendTool(s *Session) agent.Tool {
	return agent.Tool{Name: "memory_append", Description: toolDoc("memory_append"), Parameters: appendSchema,
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			var a appendParams
			if err := decodeArgs("memory_append", raw, &a, appendSchema, "path", "entry"); err != nil {
				return "", err
			}
			if err := s.Append(a.Path, a.Entry, a.Summary); err != nil {
				return "", err
			}
			return okResult, nil
		}}
}

// ReadTools are the Thinker's tools: memory_list and memory_read.
func ReadTools(s *Session) []agent.Tool {
	return []agent.Tool{listTool(s), readTool(s)}
}

// AllTools are the reflector's tools: list, read, write, patch, append.
func AllTools(s *Session) []agent.Tool {
	return []agent.Tool{listTool(s), readTool(s), writeTool(s), patchTool(s), appendTool(s)}
}
