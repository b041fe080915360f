package intake

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzOpen: whatever the file holds, Open does not fail or panic, and the
// file it rewrites opens to the same pending messages.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"op":"add","id":"m1","keys":["event:E1"],"user":"alice","at":"2026-03-05T14:00:00Z","data":{"text":"hi"}}` + "\n" +
		`{"op":"add","id":"m2","data":[1, 2]}` + "\n" + `{"op":"post","id":"m1","text":"hello\nthere"}` + "\n" +
		`{"op":"done","id":"m2","keys":["x"],"at":"2026-03-05T14:00:01Z"}` + "\n" + `{"op":"add","id":"m3","da`))
	f.Add([]byte("not json\n\n{}\n"))
	f.Add([]byte(`{"op":"add","id":"a","keys":["a","a",""],"data":null}` + "\n" + `{"op":"add","id":"b","keys":["a"],"data":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		read := func() []Entry {
			j, err := Open(Options{Dir: dir, Name: "f"})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			p := j.Pending()
			for i := range p {
				p[i].Data = nil // re-encoding compacts it
			}
			return p
		}
		first, second := read(), read()
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("pending changed across a rewrite:\n%+v\n%+v", first, second)
		}
	})
}
