package memory

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mnemo-agent/mnemo"
)

//go:embed tools/*.md
var toolDocs embed.FS

func toolDoc(name string) string {
	if d, ok := docs.Load(name); ok {
		return d.(string) // the read tools are built for every message
	}
	b, err := toolDocs.ReadFile("tools/" + name + ".md")
	if err != nil {
		panic("memory: missing embedded tool description " + name) // a build mistake, caught by every test
	}
	d := strings.TrimSpace(string(b))
	docs.Store(name, d)
	return d
}

// docs caches toolDoc by name.
var docs sync.Map

// The parameters of each tool: mnemo.NewTool generates the JSON Schema the
// model is sent from these types and decodes its arguments into them
// strictly (a field is required unless its json tag says omitempty; desc is
// the model's description of it).
type (
	listParams struct{}
	readParams struct {
		Path string `json:"path" desc:"facts/<name>.md or episodes/YYYY-MM.md"`
	}
	writeParams struct {
		Path    string `json:"path" desc:"facts/<name>.md"`
		Content string `json:"content" desc:"the whole file: # Title, > Summary: line, facts"`
	}
	patchParams struct {
		Path    string  `json:"path" desc:"facts/<name>.md or episodes/YYYY-MM.md"`
		Patches []Patch `json:"patches" minItems:"1"`
	}
	appendParams struct {
		Path    string `json:"path" desc:"episodes/YYYY-MM.md"`
		Entry   string `json:"entry" desc:"## Title, - Summary: ..., - Date: YYYY-MM-DD, details"`
		Summary string `json:"summary,omitempty" desc:"optional new file-level summary"`
	}
	searchParams struct {
		Query string `json:"query"`
		Limit int    `json:"limit,omitempty" desc:"1 to 20, default 8"`
	}
)

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

func listTool(s Space) mnemo.Tool {
	return mnemo.NewTool("memory_list", toolDoc("memory_list"), func(context.Context, listParams) (string, error) {
		files, err := s.List()
		if err != nil {
			return "", err
		}
		return listResult(files, listBudget), nil
	})
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
		if strings.HasPrefix(strings.TrimPrefix(f.Path, ChannelDir), factsDir+"/") {
			facts++ // the speaker's or the channel's
		}
	}
	// No later omitted entry is longer than the first one could be (its
	// counts only shrink): while an entry fits with that much to spare,
	// the exact one need not be made.
	maxOmitted := len(omittedEntry(len(files), facts, budget))
	var b bytes.Buffer
	b.WriteByte('[')
	for i, f := range files {
		entry, _ := json.Marshal(f) // strings and an int: cannot fail
		room := budget - b.Len() - len("]")
		if i > 0 {
			room-- // the comma
		}
		// Keep space to say what is left out. An entry that fits with room
		// for the longest such note fits, so the exact note is made only
		// when it might not.
		if rest := len(files) - i - 1; rest > 0 && len(entry)+len(",")+maxOmitted > room {
			room -= len(",") + len(omittedEntry(rest, max(facts-i-1, 0), budget))
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

func readTool(s Space) mnemo.Tool {
	return mnemo.NewTool("memory_read", toolDoc("memory_read"), func(_ context.Context, a readParams) (string, error) {
		text, err := s.Read(a.Path)
		if err != nil {
			return "", relabel(forModel(err), a.Path)
		}
		if text == "" {
			return "(the file is empty)", nil
		}
		return text, nil
	})
}

func writeTool(s Space) mnemo.Tool {
	return mnemo.NewTool("memory_write", toolDoc("memory_write"), func(_ context.Context, a writeParams) (string, error) {
		if err := s.Write(a.Path, a.Content); err != nil {
			return "", relabel(forModel(err, hint{ErrNotRead, "; memory_read it, then write the whole updated file (or use memory_patch)"},
				hint{ErrTooLarge, "; keep facts short or split them into several files"}), a.Path)
		}
		return okResult, nil
	})
}

func patchTool(s Space) mnemo.Tool {
	return mnemo.NewTool("memory_patch", toolDoc("memory_patch"), func(_ context.Context, a patchParams) (string, error) {
		n, err := s.Patch(a.Path, a.Patches)
		err = relabel(forModel(err, hint{ErrNotRead, ": memory_read it, then patch what you read"}), a.Path)
		if errors.Is(err, ErrPatch) || errors.Is(err, ErrConflict) {
			return jsonResult(patchResult{Success: false, AppliedCount: 0, Error: err.Error()})
		}
		if err != nil {
			return "", err
		}
		return jsonResult(patchResult{Success: true, AppliedCount: n})
	})
}

func appendTool(s Space) mnemo.Tool {
	return mnemo.NewTool("memory_append", toolDoc("memory_append"), func(_ context.Context, a appendParams) (string, error) {
		if err := s.Append(a.Path, a.Entry, a.Summary); err != nil {
			return "", relabel(forModel(err, hint{ErrFileFull, "; ask an admin to split or trim it"},
				hint{ErrTooLarge, "; keep entries to the essentials"}), a.Path)
		}
		return okResult, nil
	})
}

func searchTool(s Space) mnemo.Tool {
	return mnemo.NewTool("memory_search", toolDoc("memory_search"), func(_ context.Context, a searchParams) (string, error) {
		if strings.TrimSpace(a.Query) == "" {
			return "", errors.New("memory_search: query is empty; give the words to look for")
		}
		found, err := s.Search(a.Query, a.Limit)
		if err != nil {
			return "", err
		}
		return found.Render(found.budget), nil
	})
}

// modelError is a store error worded for the model: Error is what the
// model reads, Unwrap the store's error (so errors.Is still finds
// ErrConflict, mnemo.ErrStorage, ...).
type modelError struct {
	text string
	err  error
}

func (e modelError) Error() string { return e.text }
func (e modelError) Unwrap() error { return e.err }

// hint is a tool's advice to the model for an error that is kind.
type hint struct {
	kind error
	text string
}

// forModel words a store error for the model: the store says what went
// wrong, this adds what the model should do about it — the advice common
// to the tools, else the first of the tool's hints whose kind the error
// is. Other errors pass as they are; nil stays nil.
func forModel(err error, hints ...hint) error {
	var c *ConflictError
	var k *KindError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &k) && k.Want == KindFact:
		return modelError{text: fmt.Sprintf("%v: memory_write writes facts/<name>.md files; add to %s with memory_append", ErrBadPath, k.Path), err: err}
	case errors.As(err, &k):
		return modelError{text: fmt.Sprintf("%v: memory_append adds to episodes/YYYY-MM.md files; change %s with memory_write or memory_patch", ErrBadPath, k.Path), err: err}
	case errors.As(err, &c):
		text := fmt.Sprintf("%s %v (it %s, probably by a person, after you read it); memory_read it again and redo your change on what is there now",
			c.Path, ErrConflict, c.How)
		if c.Also != nil {
			text += "; also: " + c.Also.Error()
		}
		return modelError{text: text, err: err}
	case errors.Is(err, ErrNotFound):
		return modelError{text: err.Error() + "; memory_list shows the files that exist", err: err}
	}
	for _, h := range hints {
		if errors.Is(err, h.kind) {
			return modelError{text: err.Error() + h.text, err: err}
		}
	}
	return err
}

// relabel names a channel's file as the model named it: the channel's
// memory words its errors with its own paths (facts/x.md), the model
// knows the file as channel/facts/x.md.
func relabel(err error, p string) error {
	rel, ok := strings.CutPrefix(p, ChannelDir)
	if err == nil || !ok || rel == "" || strings.Contains(err.Error(), p) {
		return err // not a channel's path, or worded with it already
	}
	return modelError{text: strings.ReplaceAll(err.Error(), rel, p), err: err}
}

// ReadTools are the Thinker's tools: memory_list, memory_read and
// memory_search.
func ReadTools(s Space) []mnemo.Tool {
	return []mnemo.Tool{listTool(s), readTool(s), searchTool(s)}
}

// AllTools are the reflector's tools: list, read, write, patch, append
// and search (to find the entry or fact line to patch rather than write
// a duplicate).
func AllTools(s Space) []mnemo.Tool {
	return []mnemo.Tool{listTool(s), readTool(s), writeTool(s), patchTool(s), appendTool(s), searchTool(s)}
}
