package memory

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestToolSchemasGolden pins the JSON Schema each tool sends the model:
// the same properties, types, descriptions, required lists, minItems and
// additionalProperties as testdata/tool_schemas.golden.json. It compares
// decoded JSON, so key order does not matter; any other change to what the
// model is told fails here.
func TestToolSchemasGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/tool_schemas.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden map[string]any
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatalf("golden file: %v", err)
	}
	tools := AllTools(nil) // building a tool does not touch the session
	if len(tools) != len(golden) {
		t.Errorf("%d tools, %d golden schemas", len(tools), len(golden))
	}
	for _, tl := range tools {
		var got any
		if err := json.Unmarshal(tl.Parameters, &got); err != nil {
			t.Errorf("%s: schema is not JSON: %v", tl.Name, err)
			continue
		}
		if want, ok := golden[tl.Name]; !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: schema\n%s\ndiffers from testdata/tool_schemas.golden.json:\n%v", tl.Name, tl.Parameters, want)
		}
	}
}
