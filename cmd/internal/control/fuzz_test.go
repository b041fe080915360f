package control

import (
	"bytes"
	"testing"
)

// FuzzParseRequest: any line either parses into a request with an op that
// survives a round trip, or is refused with an error; nothing panics.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"op":"forget","user":"alice","path":"facts/pets.md"}` + "\n",
		`{"op":"forget","user":"alice"}`,
		`{"op":""}`, `{}`, `[]`, `null`, "", "\n", `{"op":"a"} x`, `{"op":"a","op":"b"}`,
		`{"op":"\u0000\n"}`, `{"op":"a","extra":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseRequest(line)
		if err != nil {
			return
		}
		if r.Op == "" || len(line) > MaxRequest {
			t.Fatalf("accepted %q as %+v", line, r)
		}
		enc := encodeLine(r)
		if bytes.Count(enc, []byte("\n")) != 1 {
			t.Fatalf("encoding %+v gives more than one line: %q", r, enc)
		}
		back, err := ParseRequest(enc)
		if err != nil || back != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, back, err)
		}
	})
}

// FuzzParseResponse: an accepted response is either ok or carries an error.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"message":"deleted alice/facts/pets.md"}` + "\n",
		`{"ok":false,"error":"no such user"}`, `{"ok":false}`, `{"ok":true,"error":"x"}`, `{}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseResponse(line)
		if err != nil {
			return
		}
		if !r.OK && r.Error == "" || len(line) > MaxResponse {
			t.Fatalf("accepted %q as %+v", line, r)
		}
		back, err := ParseResponse(encodeLine(r))
		if err != nil || back != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, back, err)
		}
	})
}

// FuzzParseEvent: an accepted event has a type and survives a round trip
// as one line; nothing panics.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"ABC","text":"hi"}` + "\n",
		`{"type":"reply","text":"x","failed":true,"streamed":true,"cut":true}`,
		`{"type":"answer","changed":true,"missing":true,"error":"no"}`, `{"type":""}`, `{}`, "", `{"type":"a"} {}`,
		`{"type":"a","zzz":1}`, `{"type":"text","text":"\u2028\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEvent(line)
		if err != nil {
			return
		}
		if e.Type == "" || len(line) > MaxEvent {
			t.Fatalf("accepted %q as %+v", line, e)
		}
		enc, err := encodeEvent(e)
		if err != nil {
			t.Fatalf("encoding %+v: %v", e, err)
		}
		if bytes.Count(enc, []byte("\n")) != 1 {
			t.Fatalf("encoding %+v gives more than one line: %q", e, enc)
		}
		back, err := ParseEvent(enc)
		if err != nil || back != e {
			t.Fatalf("round trip of %+v: %+v, %v", e, back, err)
		}
	})
}
