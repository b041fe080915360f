package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// clock is a settable time for retention tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func open(t *testing.T, keep int, maxAge time.Duration) (*Store, *clock, string) {
	t.Helper()
	c := &clock{time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	dir := filepath.Join(t.TempDir(), "history")
	s, err := Open(Options{Dir: dir, Keep: keep, MaxAge: maxAge, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c, dir
}

func ids(vs []Version) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.ID+":"+v.Who)
	}
	return strings.Join(out, " ")
}

func TestRecordListRead(t *testing.T) {
	s, c, dir := open(t, 0, 0)
	v1, rec, err := s.Record("ann", "facts/user.md", []byte("# A\n"), "hand edit")
	if err != nil || !rec || v1.ID != "20261125T100000.000Z" || v1.Size != 4 || v1.Path != "facts/user.md" {
		t.Fatalf("Record = %+v, %v, %v", v1, rec, err)
	}
	// The same text again (the watcher seeing the store's own write) is not a new version.
	if v, rec, err := s.Record("ann", "facts/user.md", []byte("# A\n"), "hand edit"); rec || err != nil || v.ID != v1.ID {
		t.Errorf("same text recorded again: %+v %v %v", v, rec, err)
	}
	// Two versions in one millisecond get distinct ids.
	v2, _, _ := s.Record("ann", "facts/user.md", []byte("# A\nb\n"), "reflector (task t1)")
	c.t = c.t.Add(time.Minute)
	v3, _, _ := s.Record("ann", "facts/user.md", []byte("# A\nc\n"), "restore of "+v1.ID)
	got, err := s.List("ann", "facts/user.md")
	if err != nil || ids(got) != v3.ID+":restore of "+v1.ID+" "+v2.ID+":reflector (task t1) "+v1.ID+":hand edit" || v2.ID != v1.ID+"-0002" {
		t.Fatalf("List = %s, %v", ids(got), err)
	}
	if text, err := s.Read("ann", "facts/user.md", v2); err != nil || string(text) != "# A\nb\n" {
		t.Errorf("Read = %q, %v", text, err)
	}
	// Files are private.
	fi, err := os.Stat(filepath.Join(dir, "ann", "facts", "user.md", v1.ID+".md"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("version file: %v, %v", fi, err)
	}
	// A kept text changed on disk is refused, not restored.
	os.WriteFile(filepath.Join(dir, "ann", "facts", "user.md", v2.ID+".md"), []byte("tampered"), 0o600)
	if _, err := s.Read("ann", "facts/user.md", v2); err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Errorf("tampered Read: %v", err)
	}
	// A text whose record was never written (a crash between the two) is not listed.
	os.WriteFile(filepath.Join(dir, "ann", "facts", "user.md", "20990101T000000.000Z.md"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "ann", "facts", "user.md", "junk.json"), []byte("{"), 0o600)
	if got, _ := s.List("ann", "facts/user.md"); len(got) != 3 {
		t.Errorf("half versions listed: %s", ids(got))
	}
}

func TestListAllFiles(t *testing.T) {
	s, c, _ := open(t, 0, 0)
	s.Record("ann", "facts/a.md", []byte("a"), "x")
	c.t = c.t.Add(time.Second)
	s.Record("ann", "episodes/2026-11.md", []byte("e"), "y")
	c.t = c.t.Add(time.Second)
	s.Record("ann", "facts/b.md", []byte("b"), "z")
	s.Record("bob", "facts/a.md", []byte("other user"), "x")
	all, err := s.List("ann", "")
	if err != nil || len(all) != 3 || all[0].Path != "facts/b.md" || all[1].Path != "episodes/2026-11.md" || all[2].Path != "facts/a.md" {
		t.Errorf("List all = %+v, %v", all, err)
	}
	if none, err := s.List("carol", ""); err != nil || len(none) != 0 {
		t.Errorf("a user with no history: %v, %v", none, err)
	}
}

func TestRetention(t *testing.T) {
	s, c, _ := open(t, 3, 48*time.Hour)
	for i := range 5 {
		s.Record("ann", "facts/a.md", []byte{byte('a' + i)}, "x")
		c.t = c.t.Add(time.Hour)
	}
	got, _ := s.List("ann", "facts/a.md")
	if len(got) != 3 || got[0].Size != 1 {
		t.Fatalf("keep 3: %s", ids(got))
	}
	if text, _ := s.Read("ann", "facts/a.md", got[2]); string(text) != "c" {
		t.Errorf("the oldest kept is %q, want c", text)
	}
	// Two days later one more version: the older ones are past maxAge; the
	// newest is kept whatever its age.
	c.t = c.t.Add(72 * time.Hour)
	s.Record("ann", "facts/a.md", []byte("z"), "x")
	got, _ = s.List("ann", "facts/a.md")
	if len(got) != 1 {
		t.Errorf("maxAge: %s", ids(got))
	}
}

func TestDelete(t *testing.T) {
	s, c, _ := open(t, 0, 0)
	if err := s.RecordDelete("ann", "facts/a.md", []byte("last words"), "forget"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.List("ann", "facts/a.md")
	if len(got) != 2 || !got[0].Deleted || got[0].Who != "forget" || got[1].Who != "before delete" {
		t.Fatalf("after delete: %+v", got)
	}
	if _, err := s.Read("ann", "facts/a.md", got[0]); err == nil || !strings.Contains(err.Error(), "records its deletion") {
		t.Errorf("Read of a deletion: %v", err)
	}
	// A second delete is not a new version; a delete with no text is recorded alone.
	c.t = c.t.Add(time.Second)
	s.RecordDelete("ann", "facts/a.md", nil, "forget")
	s.RecordDelete("ann", "facts/b.md", nil, "forget")
	if got, _ := s.List("ann", "facts/a.md"); len(got) != 2 {
		t.Errorf("second delete recorded: %+v", got)
	}
	if got, _ := s.List("ann", "facts/b.md"); len(got) != 1 || !got[0].Deleted {
		t.Errorf("delete alone: %+v", got)
	}
}

func TestFind(t *testing.T) {
	s, c, _ := open(t, 0, 0)
	if _, err := s.Find("ann", "facts/a.md", "x"); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "has no history") {
		t.Errorf("Find with no history: %v", err)
	}
	v1, _, _ := s.Record("ann", "facts/a.md", []byte("1"), "x") // 10:00
	c.t = c.t.Add(2 * time.Hour)
	v2, _, _ := s.Record("ann", "facts/a.md", []byte("2"), "x") // 12:00
	for _, tc := range []struct{ at, want string }{
		{v1.ID, v1.ID},
		{"2026-11-25 11:00", v1.ID},
		{"2026-11-25 12:00", v2.ID},
		{"2026-11-25T12:00:00+01:00", v1.ID}, // 11:00 UTC
		{"2026-11-25", v2.ID},                // the end of that day
		{"2026-11-25T13:00", v2.ID},
		{"2026-11-25 10:00:00", v1.ID},
	} {
		if v, err := s.Find("ann", "facts/a.md", tc.at); err != nil || v.ID != tc.want {
			t.Errorf("Find(%q) = %s, %v; want %s", tc.at, v.ID, err, tc.want)
		}
	}
	// A version at midnight belongs to the next day, not to "2026-11-25".
	c.t = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	s.Record("ann", "facts/a.md", []byte("3"), "x")
	if v, err := s.Find("ann", "facts/a.md", "2026-11-25"); err != nil || v.ID != v2.ID {
		t.Errorf("Find(2026-11-25) with a version at the next midnight = %s, %v; want %s", v.ID, err, v2.ID)
	}
	if _, err := s.Find("ann", "facts/a.md", "2026-11-24"); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "the oldest kept is "+v1.ID) {
		t.Errorf("Find before the oldest: %v", err)
	}
	if _, err := s.Find("ann", "facts/a.md", "yesterday"); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "give a version id") {
		t.Errorf("Find of nonsense: %v", err)
	}
}

func TestRemove(t *testing.T) {
	s, _, dir := open(t, 0, 0)
	s.Record("ann", "facts/a.md", []byte("a"), "x")
	s.Record("ann", "facts/b.md", []byte("b"), "x")
	if err := s.Remove("ann", "facts/a.md"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List("ann", ""); len(got) != 1 || got[0].Path != "facts/b.md" {
		t.Errorf("after Remove: %+v", got)
	}
	if err := s.RemoveUser("ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ann")); !os.IsNotExist(err) {
		t.Errorf("user history left: %v", err)
	}
}

// A channel's memory has a history of its own, apart from every person's:
// removing a person's leaves it, removing it leaves theirs.
func TestChannelHistory(t *testing.T) {
	s, _, dir := open(t, 0, 0)
	const ch = "#slack-T1-C1"
	s.Record(ch, "facts/decisions.md", []byte("we ship Friday"), "reflector")
	s.Record("ann", "facts/a.md", []byte("a"), "x")
	if got, err := s.List(ch, ""); err != nil || len(got) != 1 || got[0].Path != "facts/decisions.md" {
		t.Fatalf("List(%s) = %+v, %v", ch, got, err)
	}
	if err := s.RemoveUser("ann"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(ch, ""); len(got) != 1 {
		t.Errorf("the channel's history after ann's removal: %+v", got)
	}
	s.Record("ann", "facts/a.md", []byte("a"), "x")
	if err := s.RemoveUser(ch); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ch)); !os.IsNotExist(err) {
		t.Errorf("the channel's history left: %v", err)
	}
	if got, _ := s.List("ann", ""); len(got) != 1 {
		t.Errorf("ann's history after the channel's removal: %+v", got)
	}
	if _, _, err := s.Record("#", "facts/a.md", nil, "x"); err == nil {
		t.Error("a bare # was accepted as a channel")
	}
}

func TestBadNames(t *testing.T) {
	s, _, _ := open(t, 0, 0)
	for _, call := range []func() error{
		func() error { _, _, err := s.Record("../x", "facts/a.md", nil, "x"); return err },
		func() error { _, _, err := s.Record("ann", "../../etc/passwd", nil, "x"); return err },
		func() error { _, err := s.List("ann", "facts/../../x.md"); return err },
		func() error { _, err := s.List("..", ""); return err },
		func() error { _, err := s.Read("ann", "x", Version{}); return err },
		func() error { return s.Remove("ann", "x") },
		func() error { return s.RemoveUser("/") },
		func() error { return s.RecordDelete("ann", "x", nil, "x") },
	} {
		if err := call(); err == nil {
			t.Error("a bad user or path was accepted")
		}
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(Options{Dir: filepath.Join(file, "history")}); err == nil {
		t.Error("Open under a file succeeded")
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		a, b   string
		exists bool
		want   string
	}{
		{"", "x\ny\n", false, "created, 2 lines"},
		{"a\nb\n", "a\nb\n", true, "unchanged"},
		{"a\nb\n", "a\nc\nd\n", true, "+2 −1 lines"},
		{"a\na\n", "a\n", true, "+0 −1 lines"},
		{"a\n", "", true, "+0 −1 lines"},
	} {
		if got := Summary([]byte(tc.a), []byte(tc.b), tc.exists); got != tc.want {
			t.Errorf("Summary(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// The defaults: 50 versions, 90 days.
func TestRetentionDefaults(t *testing.T) {
	s, c, _ := open(t, 0, 0)
	t0 := c.t
	s.Record("ann", "facts/a.md", []byte("old"), "x")
	c.t = t0.Add(DefaultMaxAge - time.Hour)
	s.Record("ann", "facts/a.md", []byte("newer"), "x")
	if got, _ := s.List("ann", "facts/a.md"); len(got) != 2 {
		t.Fatalf("a version younger than 90 days was dropped: %s", ids(got))
	}
	c.t = t0.Add(DefaultMaxAge + time.Hour)
	s.Record("ann", "facts/a.md", []byte("newest"), "x")
	if got, _ := s.List("ann", "facts/a.md"); len(got) != 2 || got[1].Size != 5 {
		t.Errorf("after 90 days: %s", ids(got))
	}
	// Many versions in one millisecond: the newest stay, newest first.
	for i := range DefaultKeep + 5 {
		s.Record("ann", "facts/b.md", []byte{byte(i)}, "x")
	}
	got, _ := s.List("ann", "facts/b.md")
	if len(got) != DefaultKeep {
		t.Errorf("kept %d versions, want %d", len(got), DefaultKeep)
	}
	for i, v := range got {
		if text, _ := s.Read("ann", "facts/b.md", v); len(text) != 1 || int(text[0]) != DefaultKeep+4-i {
			t.Fatalf("version %d (%s) holds %v, want %d", i, v.ID, text, DefaultKeep+4-i)
		}
	}
	// The same text as the newest is not recorded again, however many came before.
	if _, rec, _ := s.Record("ann", "facts/b.md", []byte{byte(DefaultKeep + 4)}, "x"); rec {
		t.Error("the newest text was recorded again")
	}
}

// A temp file a crash left in the middle of a write is not a version, and
// is removed when the file's next version is recorded (Open reads
// nothing, so a start costs the same at any size); the versions stay.
func TestRecordRemovesTemps(t *testing.T) {
	s, c, dir := open(t, 0, 0)
	v, _, err := s.Record("ann", "facts/user.md", []byte("# A\n"), "hand edit")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	stale := filepath.Join(dir, "ann", "facts", "user.md", "."+v.ID+".md"+durable.TempMarker+"X")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if vs, err := s.List("ann", "facts/user.md"); err != nil || len(vs) != 1 {
		t.Errorf("List = %v, %v; want the one version", vs, err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("Open or List touched the folder: %v", err)
	}
	if _, _, err := s.Record("ann", "facts/user.md", []byte("# B\n"), "hand edit"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("the temp file is still there after the next record")
	}
	if vs, err := s.List("ann", "facts/user.md"); err != nil || len(vs) != 2 {
		t.Errorf("List = %v, %v; want both versions", vs, err)
	}
}

// A Store given its folder opened (Options.Root) works in it and closes it.
func TestOpenWithRoot(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Dir: dir, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Record("ann", "facts/user.md", []byte("# A\n"), "hand edit"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.List("ann", "facts/user.md"); err != nil || len(got) != 1 {
		t.Errorf("List = %v, %v", got, err)
	}
	s.Close()
	if _, err := root.Stat("ann"); err == nil {
		t.Error("the root is still open after Close")
	}
}

// A version read before a forget is not kept after it: RecordSince with a
// mark taken before the removal of the user, or of the file, records
// nothing; other users and files, and marks taken after, record as
// Record does.
func TestRecordSinceAForget(t *testing.T) {
	s, _, _ := open(t, 0, 0)
	for _, u := range []string{"alice", "bob"} {
		if _, _, err := s.Record(u, "facts/a.md", []byte("a\n"), "x"); err != nil {
			t.Fatal(err)
		}
	}
	mark := s.Mark()
	if err := s.RemoveUser("alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("bob", "facts/a.md"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, path string
		want       bool
	}{
		{"alice", "facts/a.md", false}, // her history was removed after the mark
		{"alice", "facts/b.md", false},
		{"bob", "facts/a.md", false}, // that file's was
		{"bob", "facts/b.md", true},  // another file of his
		{"carol", "facts/a.md", true},
	} {
		_, recorded, err := s.RecordSince(mark, tc.user, tc.path, []byte("as found\n"), "as found at start")
		if err != nil || recorded != tc.want {
			t.Errorf("RecordSince %s %s = %v, %v; want %v", tc.user, tc.path, recorded, err, tc.want)
		}
		if vs, _ := s.List(tc.user, tc.path); (len(vs) > 0) != tc.want {
			t.Errorf("%s %s: %d versions kept; want kept %v", tc.user, tc.path, len(vs), tc.want)
		}
	}
	if _, recorded, err := s.RecordSince(s.Mark(), "alice", "facts/a.md", []byte("new\n"), "reflector"); err != nil || !recorded {
		t.Errorf("RecordSince with a mark after the forget = %v, %v", recorded, err)
	}
}
