package reflector

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJournalLineRoundTrip(t *testing.T) {
	tr := Turn{TaskID: "t1", User: "slack-T1-U2", Conversation: "C1/1700000000.1", Platform: "slack", Speaker: "Ada",
		UserText: "line one\nline two \"quoted\"", ReplyText: "ok", Time: time.Date(2026, 3, 5, 14, 2, 0, 0, time.UTC),
		Context: []ContextMessage{{Author: "bob", Text: "hi"}, {Author: "Ada", Text: "yo", FromSpeaker: true}}, Failed: true}
	line, err := encodeLine(entry{turn: tr, attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	e, err := parseLine(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	if e.attempts != 2 || e.turn.UserText != tr.UserText || !e.turn.Time.Equal(tr.Time) || len(e.turn.Context) != 2 ||
		!e.turn.Context[1].FromSpeaker || !e.turn.Failed || e.turn.Speaker != "Ada" || e.turn.Conversation != tr.Conversation {
		t.Fatalf("round trip: %+v", e)
	}
}

func TestParseLineRefuses(t *testing.T) {
	for _, line := range []string{
		``, `{`, `[]`, `null`, `"x"`, `{"user":""}`, `{"user":"../x"}`, `{"user":"alice","attempts":-1}`,
		`{"user":"alice","attempts":"1"}`, `{"user":"alice"} {"user":"alice"}`, `{"user":"alice","time":"yesterday"}`,
		`{"user":"alice","context":{}}`,
	} {
		if _, err := parseLine([]byte(line)); err == nil {
			t.Errorf("parseLine(%q) accepted", line)
		}
	}
	if e, err := parseLine([]byte(`{"user":"alice","future":"field"}`)); err != nil || e.turn.User != "alice" {
		t.Errorf("unknown fields should be ignored: %v", err)
	}
}

// FuzzJournal: the line parser never panics, and whatever it accepts
// encodes to exactly one line that parses back to the same encoding.
func FuzzJournal(f *testing.F) {
	seed := func(tr Turn, attempts int) {
		b, err := encodeLine(entry{turn: tr, attempts: attempts})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSuffix(b, []byte("\n")))
		f.Add(b[:len(b)/2]) // torn
	}
	seed(turn("alice", "t1", "I'm Ada"), 0)
	seed(Turn{User: "discord-1", UserText: "```\n\u202e\U000E0041", Time: time.Unix(0, 0).UTC(),
		Context: []ContextMessage{{Author: "bob\n", Text: "x"}}, Failed: true}, 2)
	for _, s := range []string{``, `{}`, `{"user":"a"}`, `{"user":"a","attempts":1e9}`, `{"user":"a","time":"0000-01-01T00:00:00Z"}`,
		`{"user":"a","userText":"\ud800"}`, "{\"user\":\"a\",\"userText\":\"\xff\"}", `{"user":"a","context":[null]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseLine(data)
		if err != nil {
			return
		}
		if validUser(e.turn.User) != nil || e.attempts < 0 {
			t.Fatalf("accepted an invalid entry: %+v", e)
		}
		line, err := encodeLine(e)
		if err != nil {
			return // a time JSON cannot encode (year past 9999 after a zone shift)
		}
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("encoding is not one line: %q", line)
		}
		e2, err := parseLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", line, err)
		}
		line2, err := encodeLine(e2)
		if err != nil || !bytes.Equal(line, line2) {
			t.Fatalf("not stable:\n%q\n%q (%v)", line, line2, err)
		}
		if strings.ContainsRune(string(line[:len(line)-1]), '\n') {
			t.Fatal("raw newline inside the line")
		}
	})
}

func TestJournalFileErrors(t *testing.T) {
	dir := t.TempDir()
	j := newJournal(dir, nil)
	// A journal name that resolves to something other than a file.
	if err := os.Symlink(os.DevNull, filepath.Join(dir, "alice.jsonl")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := j.append(entry{turn: turn("alice", "t1", "x")}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("append to a device = %v", err)
	}
	// Removing a journal that is a non-empty folder fails.
	must(t, os.MkdirAll(filepath.Join(dir, "bob.jsonl", "x"), 0o700))
	if err := j.rewrite("bob", nil, nil); err == nil || !strings.Contains(err.Error(), "remove journal") {
		t.Errorf("rewrite = %v", err)
	}
	// A folder that is gone.
	gone := newJournal(filepath.Join(dir, "gone"), nil)
	if err := gone.rewrite("alice", nil, nil); err == nil || !strings.Contains(err.Error(), "for fsync") {
		t.Errorf("rewrite in a missing folder = %v", err)
	}
	if err := gone.rewrite("alice", []entry{{turn: turn("alice", "t1", "x")}}, nil); err == nil || !strings.Contains(err.Error(), "rewrite journal") {
		t.Errorf("rewrite in a missing folder = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the folder appeared")
	}
}
