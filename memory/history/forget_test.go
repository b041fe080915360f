package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// texts reads every kept version of ann's file p, newest first.
func texts(t *testing.T, s *Store, p string) []string {
	t.Helper()
	vs, err := s.List("ann", p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs {
		if v.Deleted {
			continue
		}
		b, err := s.Read("ann", p, v)
		if err != nil {
			t.Fatalf("version %s: %v", v.ID, err)
		}
		out = append(out, string(b))
	}
	return out
}

const (
	v1 = "# U\n\n> Summary: home\n\n- Name: Ann\n- Lives in: Lyon <!-- src: slack · dm · 2026-01-02 -->\n"
	v2 = "# U\n\n> Summary: home\n\n- Name: Ann\n- Lives in: Berlin\n\n## Earlier\n\n- Lives in: Lyon (until 2026-11-20) <!-- src: slack · dm · 2026-01-02 -->\n"
	v3 = "# U\n\n> Summary: home\n\n- Name: Ann\n"
)

// A forget in the order the memory store makes it: Forgetting before the
// change, the replaced text and the new one recorded, then Forgot.
func TestForgettingScrubsEveryVersion(t *testing.T) {
	s, c, dir := open(t, 0, 0)
	for _, v := range []string{v1, v2} {
		if _, _, err := s.Record("ann", "facts/user.md", []byte(v), "reflector"); err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(time.Minute)
	}
	s.Record("ann", "facts/other.md", []byte("# O\n\n- Lives in: Berlin\n"), "reflector")
	forgot := []string{"- Lives in: Berlin", "- Lives in: Lyon (until 2026-11-20)"}
	if err := s.Forgetting("ann", "facts/user.md", forgot); err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(dir, "ann", "facts", "user.md", notePending)
	if _, err := os.Stat(note); err != nil {
		t.Fatalf("no note while forgetting: %v", err)
	}
	// What the change replaces, recorded while the forget is under way
	// (a text the history did not have), is kept without the lines.
	if _, _, err := s.Record("ann", "facts/user.md", []byte(v2+"- Pets: none\n"), "earlier text"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Record("ann", "facts/user.md", []byte(v3), "reflector"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forgot("ann", "facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Errorf("the note stayed: %v", err)
	}
	got := texts(t, s, "facts/user.md")
	want := []string{v3, "# U\n\n> Summary: home\n\n- Name: Ann\n\n## Earlier\n\n- Pets: none\n", "# U\n\n> Summary: home\n\n- Name: Ann\n\n## Earlier\n\n", "# U\n\n> Summary: home\n\n- Name: Ann\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("versions after the forget:\n%q\nwant:\n%q", got, want)
	}
	// Another file keeps its own lines.
	if o := texts(t, s, "facts/other.md"); len(o) != 1 || !strings.Contains(o[0], "Berlin") {
		t.Errorf("another file's versions: %q", o)
	}
	// Nothing on disk names them, in any file of the history.
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.Contains(p, "other.md") {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "Lyon") || strings.Contains(string(b), "Berlin") {
				t.Errorf("%s still names them:\n%s", p, b)
			}
		}
		return nil
	})
}

// A crash after Forgetting (the change made or not) leaves the note: the
// next look at the file's history finishes the forget, and a record whose
// text was scrubbed but not its checksum is mended.
func TestForgettingACrashLeftIsFinished(t *testing.T) {
	s, c, dir := open(t, 0, 0)
	s.Record("ann", "facts/user.md", []byte(v1), "reflector")
	c.t = c.t.Add(time.Minute)
	s.Record("ann", "facts/user.md", []byte(v2), "reflector")
	vs, _ := s.List("ann", "facts/user.md")
	d := filepath.Join(dir, "ann", "facts", "user.md")
	// The crash: the note written, one version's text rewritten, its
	// record not.
	if err := os.WriteFile(filepath.Join(d, notePending), []byte(`{"lines":["- Lives in: Lyon"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, vs[1].ID+".md"), []byte("# U\n\n> Summary: home\n\n- Name: Ann\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(Options{Dir: dir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got := texts(t, s2, "facts/user.md")
	if len(got) != 2 || strings.Contains(strings.Join(got, ""), "Lyon") || !strings.Contains(got[0], "Berlin") {
		t.Errorf("versions after the restart:\n%q", got)
	}
	if _, err := os.Stat(filepath.Join(d, notePending)); !os.IsNotExist(err) {
		t.Errorf("the note stayed: %v", err)
	}
}

// A version whose record already has the scrubbed checksum but whose
// text still has the line (written in another order by hand, or by an
// older mnemo) gets its text scrubbed too: the record alone is no proof.
func TestForgettingMendsTextBehindItsRecord(t *testing.T) {
	s, _, dir := open(t, 0, 0)
	v, _, _ := s.Record("ann", "facts/user.md", []byte(v1), "reflector")
	d := filepath.Join(dir, "ann", "facts", "user.md")
	scrubbed := "# U\n\n> Summary: home\n\n- Name: Ann\n"
	sum := sha256.Sum256([]byte(scrubbed))
	v.SHA256, v.Size = hex.EncodeToString(sum[:]), int64(len(scrubbed))
	meta, _ := json.Marshal(v)
	os.WriteFile(filepath.Join(d, v.ID+".json"), meta, 0o600)
	if err := s.Forgetting("ann", "facts/user.md", []string{"- Lives in: Lyon"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Forgot("ann", "facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if got := texts(t, s, "facts/user.md"); len(got) != 1 || got[0] != scrubbed {
		t.Errorf("versions: %q", got)
	}
}

func TestForgettingErrors(t *testing.T) {
	s, _, dir := open(t, 0, 0)
	if err := s.Forgetting("../x", "facts/user.md", []string{"a"}); err == nil {
		t.Error("a bad owner was taken")
	}
	if err := s.Forgot("ann", "notes.txt"); err == nil {
		t.Error("a bad path was taken")
	}
	// Nothing to finish: no error.
	if err := s.Forgot("ann", "facts/user.md"); err != nil {
		t.Errorf("Forgot without Forgetting: %v", err)
	}
	// A note that is not JSON names itself and the way out.
	d := filepath.Join(dir, "ann", "facts", "user.md")
	os.MkdirAll(d, 0o700)
	os.WriteFile(filepath.Join(d, notePending), []byte("{"), 0o600)
	_, err := s.List("ann", "facts/user.md")
	if err == nil || !strings.Contains(err.Error(), notePending) || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("List with a torn note: %v", err)
	}
	if err := s.Forgetting("ann", "facts/user.md", []string{"a"}); err == nil {
		t.Error("Forgetting over a torn note")
	}
}

// A deleted file's record has no text to scrub; a version whose text is
// missing names the file; a note without lines forgets nothing.
func TestForgettingOddVersions(t *testing.T) {
	s, c, dir := open(t, 0, 0)
	s.Record("ann", "facts/user.md", []byte(v1), "reflector")
	c.t = c.t.Add(time.Minute)
	if err := s.RecordDelete("ann", "facts/user.md", nil, "forget"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forgetting("ann", "facts/user.md", []string{"- Lives in: Lyon"}); err != nil {
		t.Fatal(err)
	}
	// A deletion recorded while forgetting is a record, not a text.
	c.t = c.t.Add(time.Minute)
	if err := s.RecordDelete("ann", "facts/user.md", nil, "hand edit (deleted)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forgot("ann", "facts/user.md"); err != nil {
		t.Fatal(err)
	}
	if got := texts(t, s, "facts/user.md"); len(got) != 1 || strings.Contains(got[0], "Lyon") {
		t.Errorf("versions: %q", got)
	}
	d := filepath.Join(dir, "ann", "facts", "user.md")
	os.WriteFile(filepath.Join(d, notePending), []byte(`{}`), 0o600)
	if got := texts(t, s, "facts/user.md"); len(got) != 1 {
		t.Errorf("a note without lines: %q", got)
	}
	vs, _ := s.List("ann", "facts/user.md")
	for _, v := range vs {
		os.Remove(filepath.Join(d, v.ID+".md"))
	}
	if err := s.Forgetting("ann", "facts/user.md", []string{"- Name: Ann"}); err == nil || !strings.Contains(err.Error(), "history:") {
		t.Errorf("a version without its text: %v", err)
	}
}
