package mnemo

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type toolItem struct {
	Key   string `json:"key" desc:"which one"`
	Value string `json:"value,omitempty"`
}

type toolOpts struct {
	Deep bool `json:"deep"`
}

// toolArgs has a field of every kind NewTool describes.
type toolArgs struct {
	Path    string     `json:"path" desc:"facts/<name>.md & more"`
	Items   []toolItem `json:"items" minItems:"1"`
	Tags    []string   `json:"tags,omitempty"`
	Count   int        `json:"count,omitzero"`
	Small   uint8      `json:"small,omitempty"`
	Ratio   float64    `json:"ratio,omitempty"`
	Opts    toolOpts   `json:"opts,omitempty"`
	Plain   string     `json:",omitempty"` // named as encoding/json names it
	Skipped string     `json:"-"`
	hidden  string
}

// The JSON the model is sent for toolArgs: keys in declaration order,
// <, > and & as they are, every object closed.
const toolArgsSchema = `{"type":"object","properties":{` +
	`"path":{"type":"string","description":"facts/<name>.md & more"},` +
	`"items":{"type":"array","minItems":1,"items":{"type":"object","properties":{"key":{"type":"string","description":"which one"},"value":{"type":"string"}},"required":["key"],"additionalProperties":false}},` +
	`"tags":{"type":"array","items":{"type":"string"}},` +
	`"count":{"type":"integer"},` +
	`"small":{"type":"integer"},` +
	`"ratio":{"type":"number"},` +
	`"opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"],"additionalProperties":false},` +
	`"Plain":{"type":"string"}` +
	`},"required":["path","items"],"additionalProperties":false}`

// recordingTool is a NewTool over toolArgs that records what call got.
func recordingTool(got *[]toolArgs) Tool {
	return NewTool("demo", "a demo tool", func(ctx context.Context, a toolArgs) (string, error) {
		if ctx.Value(ctxKey{}) != "passed" {
			return "", errors.New("context not passed through")
		}
		*got = append(*got, a)
		if a.Path == "fail" {
			return "", errors.New("call failed")
		}
		return "done " + a.Path, nil
	})
}

type ctxKey struct{}

var testCtx = context.WithValue(context.Background(), ctxKey{}, "passed")

func TestNewToolSchema(t *testing.T) {
	tool := recordingTool(new([]toolArgs))
	if tool.Name != "demo" || tool.Description != "a demo tool" {
		t.Errorf("name %q, description %q", tool.Name, tool.Description)
	}
	if string(tool.Parameters) != toolArgsSchema {
		t.Errorf("schema\n%s\nwant\n%s", tool.Parameters, toolArgsSchema)
	}
	empty := NewTool("none", "", func(context.Context, struct{}) (string, error) { return "", nil })
	if want := `{"type":"object","properties":{},"additionalProperties":false}`; string(empty.Parameters) != want {
		t.Errorf("empty params schema %s, want %s", empty.Parameters, want)
	}
}

func TestNewToolDecodes(t *testing.T) {
	var got []toolArgs
	tool := recordingTool(&got)
	out, err := tool.Call(testCtx, json.RawMessage(` {"path":"a","items":[{"key":"k","value":"v"}],"tags":["x"],"count":2,"small":3,"ratio":0.5,"opts":{"deep":true},"Plain":"p"} `))
	want := toolArgs{Path: "a", Items: []toolItem{{"k", "v"}}, Tags: []string{"x"}, Count: 2, Small: 3, Ratio: 0.5, Opts: toolOpts{Deep: true}, Plain: "p"}
	if err != nil || out != "done a" || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("call = %q, %v; got %+v", out, err, got)
	}
	// Optional fields may be left out; a required list may be null or empty
	// (minItems is the model's hint: call answers an empty list itself).
	for _, args := range []string{`{"path":"b","items":[]}`, `{"path":"b","items":null}`} {
		got = nil
		if out, err := tool.Call(testCtx, json.RawMessage(args)); err != nil || out != "done b" || len(got) != 1 || len(got[0].Items) != 0 {
			t.Errorf("%s: %q, %v", args, out, err)
		}
	}
	// call's own error is the tool's error, unchanged.
	if _, err := tool.Call(testCtx, json.RawMessage(`{"path":"fail","items":[]}`)); err == nil || err.Error() != "call failed" {
		t.Errorf("failing call: %v", err)
	}
	// Empty arguments are {}: fine when nothing is required.
	var calls int
	none := NewTool("none", "", func(context.Context, struct{}) (string, error) { calls++; return "ok", nil })
	for _, args := range []string{"", "  \n", "{}", "null"} {
		if out, err := none.Call(testCtx, json.RawMessage(args)); err != nil || out != "ok" {
			t.Errorf("none(%q) = %q, %v", args, out, err)
		}
	}
	if calls != 4 {
		t.Errorf("%d calls, want 4", calls)
	}
}

func TestNewToolBadArguments(t *testing.T) {
	cases := []struct{ args, want string }{
		{``, `missing "path"`},
		{`null`, `missing "path"`},
		{`{"items":[]}`, `missing "path"`},
		{`{"path":"a"}`, `missing "items"`},
		{`{"path":"a","items":[{"key":"k"},{"value":"v"}]}`, `missing "items[1].key"`},
		{`{"path":"a","items":[null]}`, `missing "items[0].key"`},
		{`{"path":"a","items":[],"opts":{}}`, `missing "opts.deep"`},
		{`{"path":"a","items":[],"Path":"b"}`, ``}, // encoding/json folds case; accepted as today
		{`{"PATH":"a","items":[]}`, `missing "path"`},
		{`{"path":"a","items":[],"x":1}`, `unknown field "x"`},
		{`{"path":"a","items":[{"key":"k","extra":1}]}`, `unknown field "extra"`},
		{`{"path":"a","items":[],"Skipped":"s"}`, `unknown field "Skipped"`},
		{`{"path":"a","items":[],"hidden":"s"}`, `unknown field "hidden"`},
		{`{"path":1,"items":[]}`, `cannot unmarshal number`},
		{`{"path":"a","items":"x"}`, `cannot unmarshal string`},
		{`{"path":"a","items":[],"small":300}`, `cannot unmarshal number 300`},
		{`[]`, `cannot unmarshal array`},
		{`{"path":"a"`, `unexpected EOF`},
		{`{"path":"a","items":[]} {}`, `extra data after the JSON object`},
		{`{"path":"a","items":[]} x`, `extra data after the JSON object`},
	}
	for _, c := range cases {
		var got []toolArgs
		out, err := recordingTool(&got).Call(testCtx, json.RawMessage(c.args))
		if c.want == "" {
			if err != nil || len(got) != 1 {
				t.Errorf("%s: %q, %v", c.args, out, err)
			}
			continue
		}
		if err == nil || out != "" || len(got) != 0 {
			t.Errorf("%s: %q, %v; call got %+v", c.args, out, err, got)
			continue
		}
		// The wording decodeArgs always had: the tool, the problem, the shape.
		if msg := err.Error(); !strings.HasPrefix(msg, "demo: bad arguments (") || !strings.Contains(msg, c.want) ||
			!strings.HasSuffix(msg, "); expected JSON matching "+toolArgsSchema) {
			t.Errorf("%s: error %q; want the problem %q and the schema", c.args, msg, c.want)
		}
	}
}

type (
	embedded  struct{ toolOpts }
	withMap   struct{ M map[string]string }
	withBytes struct{ B []byte }
	withPtr   struct{ P *string }
	deepBad   struct {
		Items []struct{ F func() } `json:"items"`
	}
	minItemsNaN struct {
		S []string `minItems:"one"`
	}
	minItemsNeg struct {
		S []string `minItems:"-1"`
	}
	minItemsNoSlice struct {
		S string `minItems:"1"`
	}
)

// A params type NewTool cannot describe is a programming mistake: it
// panics when the tool is built, naming the tool, the type and the field.
func TestNewToolPanics(t *testing.T) {
	cases := []struct {
		build func()
		want  string
	}{
		{func() { NewTool("t", "", func(context.Context, string) (string, error) { return "", nil }) }, "parameters string must be a struct"},
		{func() { NewTool("t", "", func(context.Context, embedded) (string, error) { return "", nil }) }, "embedded field toolOpts: not supported"},
		{func() { NewTool("t", "", func(context.Context, withMap) (string, error) { return "", nil }) }, "map[string]string: kind map is not supported"},
		{func() { NewTool("t", "", func(context.Context, withBytes) (string, error) { return "", nil }) }, "[]uint8: a []byte is base64 text"},
		{func() { NewTool("t", "", func(context.Context, withPtr) (string, error) { return "", nil }) }, "kind ptr is not supported"},
		{func() { NewTool("t", "", func(context.Context, deepBad) (string, error) { return "", nil }) }, "field Items: field F: func(): kind func is not supported"},
		{func() { NewTool("t", "", func(context.Context, minItemsNaN) (string, error) { return "", nil }) }, `field S: minItems:"one" must be a count`},
		{func() { NewTool("t", "", func(context.Context, minItemsNeg) (string, error) { return "", nil }) }, `minItems:"-1" must be a count`},
		{func() { NewTool("t", "", func(context.Context, minItemsNoSlice) (string, error) { return "", nil }) }, `minItems:"1" must be a count of 0 or more on a slice`},
	}
	for _, c := range cases {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "mnemo.NewTool t: parameters ") || !strings.Contains(msg, c.want) {
					t.Errorf("panic %q, want %q", msg, c.want)
				}
			}()
			c.build()
		}()
	}
}
