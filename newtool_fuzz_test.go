package mnemo

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzNewToolArgs: whatever arguments a model sends, a NewTool either
// calls its function once with exactly what lenient encoding/json would
// have decoded, all required keys being present at every depth, or
// returns the bad-arguments error with the schema, without calling it —
// never a panic.
func FuzzNewToolArgs(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"path":"a","items":[{"key":"k","value":"v"}],"opts":{"deep":true}}`,
		`{"path":"a","items":[{"value":"v"}]}`, `{"path":"a","items":[null]}`, `{"path":"a","items":null}`,
		`{"path":"a","items":[],"opts":null}`, `{"Path":"a","items":[]}`, `{"path":"a","items":[],"x":1}`,
		`{"path":"a","items":[]} {}`, `{"path":"a","items":[],"small":256}`, `{"path":"a","path":1,"items":[]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		var got []toolArgs
		tool := recordingTool(&got)
		out, err := tool.Call(testCtx, json.RawMessage(args))
		if err != nil {
			msg := err.Error()
			if len(got) != 0 || out != "" || !strings.HasPrefix(msg, "demo: bad arguments (") ||
				!strings.HasSuffix(msg, "); expected JSON matching "+toolArgsSchema) {
				t.Fatalf("%q: %q, %v; call got %+v", args, out, msg, got)
			}
			return
		}
		if len(got) != 1 || (out != "done "+got[0].Path && got[0].Path != "fail") {
			t.Fatalf("%q accepted: %q; call got %+v", args, out, got)
		}
		if !json.Valid([]byte(args)) || !bytes.HasPrefix(bytes.TrimSpace([]byte(args)), []byte("{")) {
			t.Fatalf("%q accepted but is not one JSON object", args)
		}
		var lenient toolArgs
		if err := json.Unmarshal([]byte(args), &lenient); err != nil || !reflect.DeepEqual(lenient, got[0]) {
			t.Fatalf("%q: call got %+v, encoding/json decodes %+v (%v)", args, got[0], lenient, err)
		}
		var top map[string]json.RawMessage
		json.Unmarshal([]byte(args), &top)
		var items []map[string]json.RawMessage
		json.Unmarshal(top["items"], &items)
		_, hasPath := top["path"]
		_, hasItems := top["items"]
		ok := hasPath && hasItems
		for _, it := range items {
			_, hasKey := it["key"]
			ok = ok && hasKey
		}
		if o, present := top["opts"]; present {
			var opts map[string]json.RawMessage
			json.Unmarshal(o, &opts)
			_, hasDeep := opts["deep"]
			ok = ok && hasDeep
		}
		if !ok {
			t.Fatalf("%q accepted without a required key", args)
		}
	})
}
