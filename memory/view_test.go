package memory

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The memory every view test starts from: alice's files, private and
// shared, and a channel's. Every private text holds viewMark, so a test
// can tell when any of it got out.
const (
	viewMark    = "PRIVATE-7f3a"
	viewChannel = "#slack-T1-C1"

	pubFact    = "# Public\n\n> Summary: what alice shares\n> Visibility: shared\n\n- likes Go\n"
	secretFact = "# Secret\n\n> Summary: PRIVATE-7f3a summary\n\n- PRIVATE-7f3a fact\n"
	// facts/both.md is private, facts/both.shared.md its shared file.
	bothPrivate = "# Both\n\n> Summary: PRIVATE-7f3a both\n\n- PRIVATE-7f3a both\n"
	bothShared  = "# Both\n\n> Summary: both, shared\n> Visibility: shared\n\n- shared both\n"
	// facts/gone.shared.md: a shared file alice made private again.
	goneShared = "# Gone\n\n> Summary: PRIVATE-7f3a gone\n> Visibility: private\n\n- PRIVATE-7f3a gone\n"
	secretEp   = "# 2026-03 Episodes\n\n> Summary: PRIVATE-7f3a month\n\n## Talk\n- Summary: PRIVATE-7f3a talk\n- Date: 2026-03-02\n"
	sharedEp   = "# 2026-02 Episodes\n\n> Summary: a shared month\n> Visibility: shared\n\n## Standup\n- Summary: standup\n- Date: 2026-02-02\n"
	// episodes/2026-01.md: a plain name whose file is shared.
	plainSharedEp = "# 2026-01 Episodes\n\n> Summary: january\n> Visibility: shared\n\n## Kickoff\n- Summary: kickoff\n- Date: 2026-01-05\n"
	chanFact      = "# Decisions\n\n> Summary: team decisions\n\n- ship on Fridays\n"
	chanEp        = "# 2026-03 Episodes\n\n> Summary: channel month\n\n## Retro\n- Summary: retro\n- Date: 2026-03-04\n"
)

// viewStore writes the fixture into a new store (private: with alice's
// private files) and returns it, alice and the channel's memory.
func viewStore(t *testing.T, private bool, mod ...func(*Options)) (*Store, *User, *User) {
	t.Helper()
	s := newStore(t, mod...)
	files := map[string]string{
		"alice/facts/public.md":              pubFact,
		"alice/facts/both.shared.md":         bothShared,
		"alice/episodes/2026-02.shared.md":   sharedEp,
		"alice/episodes/2026-01.md":          plainSharedEp,
		viewChannel + "/facts/decisions.md":  chanFact,
		viewChannel + "/episodes/2026-03.md": chanEp,
	}
	if private {
		files["alice/facts/secret.md"] = secretFact
		files["alice/facts/both.md"] = bothPrivate
		files["alice/facts/gone.shared.md"] = goneShared
		files["alice/episodes/2026-03.md"] = secretEp
	}
	for name, text := range files {
		writeFile(t, filepath.Join(s.Dir(), name), text)
	}
	if private {
		// A symlink to the private file, and a private file with a hard
		// link (both names are refused: it may be a file from elsewhere).
		dir := filepath.Join(s.Dir(), "alice/facts")
		if err := os.Symlink("secret.md", filepath.Join(dir, "link.md")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "linked.md"), secretFact)
		if err := os.Link(filepath.Join(dir, "linked.md"), filepath.Join(dir, "hard.md")); err != nil {
			t.Fatal(err)
		}
	}
	return s, mustUser(t, s, "alice"), mustUser(t, s, viewChannel)
}

func viewPaths(t *testing.T, v *View) []string {
	t.Helper()
	return listedPaths(t, v)
}

// listedPaths is the paths l lists (a User, a View).
func listedPaths(t *testing.T, l interface{ List() ([]FileInfo, error) }) []string {
	t.Helper()
	files, err := l.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// A shared view lists only the speaker's shared files, with the
// channel's under channel/: the speaker's facts, the channel's, then the
// speaker's episodes and the channel's, newest first. A private view
// lists every file; a view without a channel has no channel/.
func TestViewList(t *testing.T) {
	_, alice, ch := viewStore(t, true)
	for _, c := range []struct {
		name string
		v    *View
		want []string
	}{
		{"shared, channel", NewView(alice, true, ch), []string{
			"facts/both.shared.md", "facts/public.md", "channel/facts/decisions.md",
			"episodes/2026-02.shared.md", "episodes/2026-01.md", "channel/episodes/2026-03.md"}},
		{"shared, no channel", NewView(alice, true, nil), []string{
			"facts/both.shared.md", "facts/public.md", "episodes/2026-02.shared.md", "episodes/2026-01.md"}},
		{"private, channel", NewView(alice, false, ch), []string{
			"facts/both.md", "facts/both.shared.md", "facts/gone.shared.md", "facts/public.md", "facts/secret.md",
			"channel/facts/decisions.md",
			"episodes/2026-03.md", "episodes/2026-02.shared.md", "episodes/2026-01.md", "channel/episodes/2026-03.md"}},
		{"private, no channel", NewView(alice, false, nil), []string{
			"facts/both.md", "facts/both.shared.md", "facts/gone.shared.md", "facts/public.md", "facts/secret.md",
			"episodes/2026-03.md", "episodes/2026-02.shared.md", "episodes/2026-01.md"}},
	} {
		if got := viewPaths(t, c.v); !slices.Equal(got, c.want) {
			t.Errorf("%s: List = %q\nwant %q", c.name, got, c.want)
		}
	}
	// The channel's own paths in the index too, and nothing private.
	idx, err := NewView(alice, true, ch).Index(0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(idx, "- channel/facts/decisions.md (") || !strings.Contains(idx, "- facts/public.md (") || strings.Contains(idx, viewMark) {
		t.Errorf("shared index:\n%s", idx)
	}
	// The view's entries are copies: the channel's own list keeps its paths.
	if got := listPaths(t, ch); !strings.HasPrefix(got, "facts/decisions.md=") {
		t.Errorf("the channel's list after a view's: %q", got)
	}
}

// The order holds when one side has no episodes or no facts: the
// speaker's facts come before the channel's whatever is missing.
func TestViewListOneSided(t *testing.T) {
	s := newStore(t)
	alice, ch := mustUser(t, s, "alice"), mustUser(t, s, viewChannel)
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/public.md"), pubFact)
	writeFile(t, filepath.Join(s.Dir(), viewChannel, "episodes/2026-03.md"), chanEp)
	v := NewView(alice, true, ch)
	if got, want := viewPaths(t, v), []string{"facts/public.md", "channel/episodes/2026-03.md"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	writeFile(t, filepath.Join(s.Dir(), viewChannel, "facts/decisions.md"), chanFact)
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-02.md"), sharedEp)
	os.Remove(filepath.Join(s.Dir(), "alice/facts/public.md"))
	eventually(t, "the edits are seen", func() bool {
		return slices.Equal(viewPaths(t, v), []string{"channel/facts/decisions.md", "episodes/2026-02.md", "channel/episodes/2026-03.md"})
	})
	// A channel's memory that cannot be listed fails the view's list, once
	// the watcher has reported the folder gone (a watched, unchanged index
	// does not open the folder).
	os.RemoveAll(filepath.Join(s.Dir(), viewChannel))
	writeFile(t, filepath.Join(s.Dir(), viewChannel), "not a folder")
	eventually(t, "List with the channel's folder a file fails", func() bool {
		_, err := v.List()
		return err != nil
	})
	if _, err := v.Index(0); err == nil {
		t.Error("Index with the channel's folder a file: no error")
	}
}

// viewTool runs one memory tool of a view, as the model would: the
// Thinker's (ReadTools) for memory_list and memory_read, else the
// reflector's (AllTools).
func viewTool(t *testing.T, v *View, name string, args any) (string, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	tools := AllTools(v)
	if name == "memory_list" || name == "memory_read" {
		tools = ReadTools(v)
	}
	for _, tool := range tools {
		if tool.Name == name {
			return tool.Call(context.Background(), b)
		}
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

// answer is a tool's result and error text as one string.
func answer(res string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return res
}

// The path forms a model might try on a private file: each answers, from a
// shared view, exactly as the same form on a missing file does (the text
// equal once the names are swapped), and nothing of the file shows.
var privateForms = []struct{ private, missing string }{
	{"facts/secret.md", "facts/nothere.md"},
	{"facts/gone.shared.md", "facts/nothere.shared.md"}, // a shared name made private
	{"facts/gone.md", "facts/nothere.md"},               // whose shared file is private
	{"facts/link.md", "facts/nothere.md"},               // a symlink to the private file
	{"facts/hard.md", "facts/nothere.md"},               // a hard link to it
	{"episodes/2026-03.md", "episodes/2026-04.md"},      // a private episode file
	{"episodes/2026-03.shared.md", "episodes/2026-04.shared.md"},
	{"./facts/secret.md", "./facts/nothere.md"},
	{"facts/../facts/secret.md", "facts/../facts/nothere.md"},
	{"facts/./secret.md", "facts/./nothere.md"},
	{"facts//secret.md", "facts//nothere.md"},
	{"/facts/secret.md", "/facts/nothere.md"},
	{"Facts/secret.md", "Facts/nothere.md"},
	{"FACTS/SECRET.MD", "FACTS/NOTHERE.MD"},
	{"facts/Secret.md", "facts/Nothere.md"},
	{"facts/secret.MD", "facts/nothere.MD"},
	{"facts/secret", "facts/nothere"},
	{"facts/secret.md/", "facts/nothere.md/"},
	{"facts/secret.md ", "facts/nothere.md "},
	{"facts\\secret.md", "facts\\nothere.md"},
	{"facts\uff0fsecret.md", "facts\uff0fnothere.md"}, // fullwidth solidus
	{"f\u0430cts/secret.md", "f\u0430cts/nothere.md"}, // Cyrillic a
	{"facts/s\u0435cret.md", "facts/n\u043ethere.md"}, // Cyrillic e, o
	{"facts/secret\u2024md", "facts/nothere\u2024md"}, // one dot leader
	{"facts%2fsecret.md", "facts%2fnothere.md"},
	{"channel/../facts/secret.md", "channel/../facts/nothere.md"},
	{"channel/facts/secret.md", "channel/facts/nothere.md"},
	{"channel/./facts/secret.md", "channel/./facts/nothere.md"},
	{"../alice/facts/secret.md", "../alice/facts/nothere.md"},
}

// swapNames is s with the path old named as new, as is and Go-quoted.
func swapNames(s, old, new string) string {
	q := func(p string) string { return strings.Trim(strconv.Quote(p), `"`) }
	return strings.ReplaceAll(strings.ReplaceAll(s, q(old), q(new)), old, new)
}

func TestViewPrivateReadsAsMissing(t *testing.T) {
	_, alice, ch := viewStore(t, true)
	v := NewView(alice, true, ch)
	for _, f := range privateForms {
		priv := answer(viewTool(t, v, "memory_read", readParams{Path: f.private}))
		miss := answer(viewTool(t, v, "memory_read", readParams{Path: f.missing}))
		if strings.Contains(priv, viewMark) {
			t.Errorf("memory_read %q shows private text: %s", f.private, priv)
		}
		if swapped := swapNames(priv, f.private, f.missing); swapped != miss {
			t.Errorf("memory_read %q and %q answer differently:\n%s\n%s", f.private, f.missing, priv, miss)
		}
		if _, err := v.Load(f.private); err == nil {
			t.Errorf("Load %q: no error", f.private)
		}
	}
	// A DM sees the private file: the control, so the forms above meant it.
	if got := answer(viewTool(t, NewView(alice, false, ch), "memory_read", readParams{Path: "facts/secret.md"})); got != secretFact {
		t.Errorf("a private view's memory_read of the private file = %q", got)
	}
}

// Everything a shared view gives is the same with or without the private
// files: memory_list, the index, the pre-load, and memory_read of every
// form above and of a private name whose shared file exists (that file
// is read, as when the private one is missing).
func TestViewSameWithoutPrivateFiles(t *testing.T) {
	_, alice, ch := viewStore(t, true)
	_, alice0, ch0 := viewStore(t, false)
	with, without := NewView(alice, true, ch), NewView(alice0, true, ch0)
	for _, q := range []struct {
		tool string
		args any
	}{{"memory_list", listParams{}}} {
		a, b := answer(viewTool(t, with, q.tool, q.args)), answer(viewTool(t, without, q.tool, q.args))
		if a != b {
			t.Errorf("%s differs:\n%s\n%s", q.tool, a, b)
		}
	}
	for _, f := range append(privateForms, struct{ private, missing string }{private: "facts/both.md"}) {
		a := answer(viewTool(t, with, "memory_read", readParams{Path: f.private}))
		b := answer(viewTool(t, without, "memory_read", readParams{Path: f.private}))
		if a != b {
			t.Errorf("memory_read %q differs:\n%s\n%s", f.private, a, b)
		}
	}
	if got := answer(viewTool(t, with, "memory_read", readParams{Path: "facts/both.md"})); got != bothShared {
		t.Errorf("memory_read facts/both.md = %q; want its shared file", got)
	}
	ia, err1 := with.Index(0)
	ib, err2 := without.Index(0)
	if ia != ib || err1 != nil || err2 != nil {
		t.Errorf("the index differs:\n%s\n%s", ia, ib)
	}
	fa, ea, err1 := with.Preload(1 << 20)
	fb, eb, err2 := without.Preload(1 << 20)
	if fa != fb || ea != eb || err1 != nil || err2 != nil {
		t.Errorf("the pre-load differs:\n%s\n%s\n--\n%s\n%s", fa, ea, fb, eb)
	}
	if !strings.Contains(fa, "### channel/facts/decisions.md\n"+chanFact) || !strings.Contains(fa, "### facts/public.md\n"+pubFact) {
		t.Errorf("the pre-load lacks the shared and the channel's facts:\n%s", fa)
	}
}

// A shared view reads a shared file by its name, and for a private name
// the shared file of that name; a channel's file by its channel/ path.
func TestViewLoad(t *testing.T) {
	_, alice, ch := viewStore(t, true, func(o *Options) { o.ReadCap = 40 })
	v := NewView(alice, true, ch)
	for p, want := range map[string]string{
		"facts/public.md":            pubFact,
		"facts/both.md":              bothShared,
		"facts/both.shared.md":       bothShared,
		"episodes/2026-01.md":        plainSharedEp,
		"episodes/2026-02.md":        sharedEp,
		"channel/facts/decisions.md": chanFact,
	} {
		d, err := v.Load(p)
		if err != nil || d.Text != want {
			t.Errorf("Load %q = %q, %v", p, d.Text, err)
		}
		if strings.HasPrefix(p, ChannelDir) && d.Path != p {
			t.Errorf("Load %q names it %q", p, d.Path)
		}
		// Read cuts at the read cap, as a session's does.
		got, err := v.Read(p)
		if err != nil || !strings.HasPrefix(got, want[:20]) || !strings.Contains(got, "bytes were left out") {
			t.Errorf("Read %q = %q, %v", p, got, err)
		}
	}
	if _, err := v.Load("facts/x"); !errors.Is(err, ErrBadPath) {
		t.Errorf("Load of a bad path: %v", err)
	}
	if _, err := v.Read("facts/secret.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read of a private file: %v", err)
	}
	if _, err := v.Load("channel/facts/nothere.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a missing channel file: %v", err)
	}
	// A private view reads every file of the speaker, as a session does.
	if d, err := NewView(alice, false, nil).Load("facts/secret.md"); err != nil || d.Text != secretFact {
		t.Errorf("private Load = %q, %v", d.Text, err)
	}
}

func fileText(t *testing.T, s *Store, name string) string {
	t.Helper()
	return readFile(t, filepath.Join(s.Dir(), name))
}

func fileMissing(t *testing.T, s *Store, name string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(s.Dir(), name))
	return errors.Is(err, os.ErrNotExist)
}

// A shared view's writes land in the shared file of the name (or the
// named file when it is itself shared), are left shared whatever the
// model wrote in the header, and never touch a private file.
func TestViewSharedWrites(t *testing.T) {
	s, alice, ch := viewStore(t, true)
	v := NewView(alice, true, ch)
	check := func(what, name string, shared bool) {
		t.Helper()
		if got := fileText(t, s, name); IsShared(got) != shared {
			t.Errorf("%s: %s is shared=%v:\n%s", what, name, !shared, got)
		}
	}
	// A private name: its shared file is made, the private one untouched.
	if err := v.Write("facts/secret.md", "# Secret\n\n> Summary: told in a channel\n> Visibility: private\n\n- a channel fact\n"); err != nil {
		t.Fatal(err)
	}
	check("write to a private name", "alice/facts/secret.shared.md", true)
	if !strings.Contains(fileText(t, s, "alice/facts/secret.shared.md"), "- a channel fact") || fileText(t, s, "alice/facts/secret.md") != secretFact {
		t.Error("the write did not go to facts/secret.shared.md alone")
	}
	// A new name: its shared file.
	if err := v.Write("facts/new.md", "# New\n\n> Summary: new\n"); err != nil {
		t.Fatal(err)
	}
	check("a new name", "alice/facts/new.shared.md", true)
	if !fileMissing(t, s, "alice/facts/new.md") {
		t.Error("facts/new.md was made")
	}
	// A shared file by its own name: that file, kept shared.
	if _, err := v.Load("facts/public.md"); err != nil {
		t.Fatal(err)
	}
	if err := v.Write("facts/public.md", "# Public\n\n> Summary: still public\n\n- likes Go and Rust\n"); err != nil {
		t.Fatal(err)
	}
	check("rewrite of a shared file without its line", "alice/facts/public.md", true)
	if !fileMissing(t, s, "alice/facts/public.shared.md") {
		t.Error("a write to a shared file made its shared name")
	}
	// Patches that drop or change the line cannot make it private.
	if _, err := v.Patch("facts/public.md", []Patch{{OldText: "> Visibility: shared\n", NewText: ""}}); err != nil {
		t.Fatal(err)
	}
	check("patch dropping the line", "alice/facts/public.md", true)
	if _, err := v.Patch("facts/public.md", []Patch{{OldText: "> Visibility: shared", NewText: "> Visibility: private"}}); err != nil {
		t.Fatal(err)
	}
	check("patch to private", "alice/facts/public.md", true)
	if got := fileText(t, s, "alice/facts/public.md"); strings.Contains(got, "private") {
		t.Errorf("the private line stayed:\n%s", got)
	}
	// Through the name of a private file whose shared file exists: that one.
	if _, err := v.Load("facts/both.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Patch("facts/both.md", []Patch{{OldText: "- shared both", NewText: "- shared both, patched"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fileText(t, s, "alice/facts/both.shared.md"), "patched") || fileText(t, s, "alice/facts/both.md") != bothPrivate {
		t.Error("the patch through facts/both.md did not go to both.shared.md alone")
	}
	// A patch of a private name with no shared file: missing, as for any
	// missing file, and the private file untouched.
	_, errMiss := v.Patch("facts/secret2.md", []Patch{{OldText: viewMark, NewText: "x"}})
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/secret2.md"), secretFact)
	_, errPriv := v.Patch("facts/secret2.md", []Patch{{OldText: viewMark, NewText: "x"}})
	if !errors.Is(errPriv, ErrNotFound) || errPriv.Error() != errMiss.Error() {
		t.Errorf("patch of a private file: %v; of a missing one: %v", errPriv, errMiss)
	}
	if fileText(t, s, "alice/facts/secret2.md") != secretFact {
		t.Error("a patch touched a private file")
	}
	// Appends: to the shared file of a private month, or a shared month itself.
	entry := "## Demo\n- Summary: demo\n- Date: 2026-03-09\n"
	if err := v.Append("episodes/2026-03.md", entry, ""); err != nil {
		t.Fatal(err)
	}
	check("append to a private month", "alice/episodes/2026-03.shared.md", true)
	if fileText(t, s, "alice/episodes/2026-03.md") != secretEp {
		t.Error("an append touched the private month")
	}
	if err := v.Append("episodes/2026-01.md", "## Plan\n- Summary: plan\n- Date: 2026-01-09\n\n> Visibility: private\n", "> Visibility: private"); err != nil {
		t.Fatal(err)
	}
	check("append to a shared month", "alice/episodes/2026-01.md", true)
	if !fileMissing(t, s, "alice/episodes/2026-01.shared.md") {
		t.Error("an append to a shared month made its shared name")
	}
}

// A shared file a person made private is refused to a channel's writes,
// with an error that says nothing of what is in it.
func TestViewSharedWriteToAPrivatedSharedFile(t *testing.T) {
	s, alice, ch := viewStore(t, true)
	v := NewView(alice, true, ch)
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-04.shared.md"), strings.Replace(secretEp, "2026-03", "2026-04", -1))
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"write facts/gone.md", func() error { return v.Write("facts/gone.md", "# Gone\n\n> Summary: x\n") }},
		{"write facts/gone.shared.md", func() error { return v.Write("facts/gone.shared.md", "# Gone\n\n> Summary: x\n") }},
		{"patch facts/gone.md", func() error {
			_, err := v.Patch("facts/gone.md", []Patch{{OldText: viewMark, NewText: "x"}})
			return err
		}},
		{"append episodes/2026-04.md", func() error {
			return v.Append("episodes/2026-04.md", "## X\n- Summary: x\n- Date: 2026-04-01\n", "")
		}},
	} {
		err := c.do()
		var nw *NotWritableError
		if !errors.As(err, &nw) || !errors.Is(err, ErrBadPath) || strings.Contains(err.Error(), viewMark) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), "cannot be written from this channel; choose another file name") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if fileText(t, s, "alice/facts/gone.shared.md") != goneShared {
		t.Error("a channel's write touched a privated shared file")
	}
}

// A private view's writes are private, and a shared file is refused.
func TestViewPrivateWrites(t *testing.T) {
	s, alice, ch := viewStore(t, true)
	v := NewView(alice, false, ch)
	// A new file the model marked shared is made private.
	if err := v.Write("facts/dm.md", "# DM\n\n> Summary: told in a DM\n> Visibility: shared\n\n- PRIVATE-7f3a dm\n"); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, s, "alice/facts/dm.md"); IsShared(got) || !strings.Contains(got, "> Visibility: private") {
		t.Errorf("a DM's new file:\n%s", got)
	}
	// A patch adding the line to a private file leaves it private.
	if _, err := v.Load("facts/secret.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Patch("facts/secret.md", []Patch{{OldText: "> Summary: PRIVATE-7f3a summary\n", NewText: "> Summary: PRIVATE-7f3a summary\n> Visibility: shared\n"}}); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, s, "alice/facts/secret.md"); IsShared(got) {
		t.Errorf("a DM's patch shared the file:\n%s", got)
	}
	// An append makes a new month private, also where the model's entry
	// and summary hold the line (the entry is below its "## ", the
	// summary one line after "> Summary:").
	if err := v.Append("episodes/2026-05.md", "## X\n> Visibility: shared\n- Summary: x\n- Date: 2026-05-01\n", "x\n> Visibility: shared"); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, s, "alice/episodes/2026-05.md"); IsShared(got) {
		t.Errorf("a DM's new month is shared:\n%s", got)
	}
	if err := v.Append("episodes/2026-05.md", "## Y\n- Summary: y\n- Date: 2026-05-02\n", "> Visibility: shared"); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, s, "alice/episodes/2026-05.md"); IsShared(got) {
		t.Errorf("a DM's append made the month shared:\n%s", got)
	}
	// Shared files are refused, by either kind of name, to every change.
	for _, c := range []struct {
		name, path, alt string
		do              func() error
	}{
		{"write", "facts/both.shared.md", "facts/both.md", func() error { return v.Write("facts/both.shared.md", "# B\n\n> Summary: b\n") }},
		{"write", "facts/public.md", "another file", func() error { return v.Write("facts/public.md", "# P\n\n> Summary: p\n") }},
		{"patch", "facts/public.md", "another file", func() error {
			v.Load("facts/public.md")
			_, err := v.Patch("facts/public.md", []Patch{{OldText: "likes Go", NewText: viewMark}})
			return err
		}},
		{"append", "episodes/2026-02.shared.md", "episodes/2026-02.md", func() error {
			return v.Append("episodes/2026-02.shared.md", "## X\n- Summary: x\n- Date: 2026-02-09\n", "")
		}},
		{"append", "episodes/2026-01.md", "another file", func() error {
			return v.Append("episodes/2026-01.md", "## X\n- Summary: x\n- Date: 2026-01-09\n", "")
		}},
	} {
		err := c.do()
		var sf *SharedFileError
		if !errors.As(err, &sf) || sf.Path != c.path {
			t.Errorf("%s %s: %v", c.name, c.path, err)
			continue
		}
		want := c.path + ` is shared with channels (its header says "> Visibility: shared"): what is said in a private conversation is kept in private files only; write it to ` + c.alt + " instead"
		if err.Error() != want {
			t.Errorf("%s %s: %q\nwant %q", c.name, c.path, err, want)
		}
	}
	for name, want := range map[string]string{"alice/facts/both.shared.md": bothShared, "alice/episodes/2026-02.shared.md": sharedEp, "alice/episodes/2026-01.md": plainSharedEp} {
		if fileText(t, s, name) != want {
			t.Errorf("a DM's write changed %s", name)
		}
	}
	if got := fileText(t, s, "alice/facts/public.md"); got != pubFact {
		t.Errorf("a DM's write changed facts/public.md:\n%s", got)
	}
}

// Writes to the channel's memory are told to OnCommit with their channel/
// path, and View.Version answers for it; the speaker's are told as they
// are. The channel's own files keep whatever visibility they say.
func TestViewChannelCommits(t *testing.T) {
	s, alice, ch := viewStore(t, true)
	v := NewView(alice, true, ch)
	var commits []Commit
	v.OnCommit(func(c Commit) error {
		// Told just before the change: the file is still what it was.
		if now, err := v.Version(c.Path); err != nil || !now.Same(c.Before) {
			t.Errorf("at the hook Version %q = %v, %v; the commit says before %v", c.Path, now, err, c.Before)
		}
		commits = append(commits, c)
		return nil
	})
	if err := v.Write("channel/facts/owners.md", "# Owners\n\n> Summary: who owns what\n\n- Ann: the API\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Load("channel/facts/decisions.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Patch("channel/facts/decisions.md", []Patch{{OldText: "Fridays", NewText: "Thursdays"}}); err != nil {
		t.Fatal(err)
	}
	if err := v.Append("channel/episodes/2026-03.md", "## Plan\n- Summary: plan\n- Date: 2026-03-10\n", ""); err != nil {
		t.Fatal(err)
	}
	if err := v.Write("facts/mine.md", "# Mine\n\n> Summary: mine\n"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range commits {
		got = append(got, string(c.Kind)+" "+c.Path)
		if after, err := v.Version(c.Path); err != nil || !after.Same(c.After) {
			t.Errorf("Version %q = %v, %v; the commit said %v", c.Path, after, err, c.After)
		}
	}
	want := []string{"create channel/facts/owners.md", "patch channel/facts/decisions.md", "append channel/episodes/2026-03.md", "create facts/mine.shared.md"}
	if !slices.Equal(got, want) {
		t.Errorf("commits %q\nwant %q", got, want)
	}
	if !strings.Contains(fileText(t, s, viewChannel+"/facts/decisions.md"), "Thursdays") || IsShared(fileText(t, s, viewChannel+"/facts/owners.md")) {
		t.Error("the channel's files are not as written")
	}
	if _, err := v.Version("channel/../x"); !errors.Is(err, ErrBadPath) {
		t.Errorf("Version of a bad channel path: %v", err)
	}
	// Without a channel, channel/ is no path at all.
	if _, err := NewView(alice, true, nil).Version("channel/facts/decisions.md"); !errors.Is(err, ErrBadPath) {
		t.Errorf("Version of channel/ without a channel: %v", err)
	}
	// No hook: the channel's writes still work.
	v2 := NewView(alice, true, ch)
	v2.OnCommit(nil)
	if err := v2.Write("channel/facts/other.md", "# Other\n\n> Summary: other\n"); err != nil {
		t.Fatal(err)
	}
}

// The index cache keeps each file's shared flag across a restart: the
// second run trusts it without reading the file (a change that keeps the
// file's size, time and inode is not seen), and a view lists by it.
func TestViewSharedFlagFromTheIndexCache(t *testing.T) {
	dir, cache := cacheDirs(t)
	pub, sec := filepath.Join(dir, "alice/facts/public.md"), filepath.Join(dir, "alice/facts/secret.md")
	writeAged(t, pub, pubFact)
	writeAged(t, sec, secretFact)
	s := cachedStore(t, dir, cache)
	if got := viewPaths(t, NewView(mustUser(t, s, "alice"), true, nil)); !slices.Equal(got, []string{"facts/public.md"}) {
		t.Fatalf("first run: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Same size, time and inode: the cache is trusted, so the flags the
	// second run lists are the cache's.
	swapSameKey(t, pub, strings.Replace(pubFact, "shared", "sharex", 1))
	nowShared := "# S\n> Visibility: shared\n"
	swapSameKey(t, sec, nowShared+strings.Repeat("x", len(secretFact)-len(nowShared)-1)+"\n")
	s = cachedStore(t, dir, cache)
	alice := mustUser(t, s, "alice")
	files, err := alice.List()
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, f := range files {
		if f.Shared {
			flags = append(flags, f.Path)
		}
	}
	if !slices.Equal(flags, []string{"facts/public.md"}) {
		t.Errorf("after the restart the shared files are %q; want the cache's", flags)
	}
	// What a view reads is checked again: the file says it is no longer
	// shared, so it is not given.
	if _, err := NewView(alice, true, nil).Load("facts/public.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a file now private: %v", err)
	}
}

// A hand edit that adds the line is seen at the next List, with the
// watcher and without.
func TestViewHandEditShares(t *testing.T) {
	for _, watch := range []bool{true, false} {
		s, alice, ch := viewStore(t, true, func(o *Options) { o.Watch = watch })
		v := NewView(alice, true, ch)
		if slices.Contains(viewPaths(t, v), "facts/secret.md") {
			t.Fatal("private file listed")
		}
		name := filepath.Join(s.Dir(), "alice/facts/secret.md")
		writeFile(t, name, SetVisibility(secretFact, true))
		if watch {
			eventually(t, "the watcher sees the edit", func() bool { return slices.Contains(viewPaths(t, v), "facts/secret.md") })
		}
		if !slices.Contains(viewPaths(t, v), "facts/secret.md") {
			t.Errorf("watch %v: the file shared by hand is not listed: %q", watch, viewPaths(t, v))
		}
		if d, err := v.Load("facts/secret.md"); err != nil || !IsShared(d.Text) {
			t.Errorf("watch %v: Load = %v", watch, err)
		}
	}
}

// SetShared flips the line through the one write path, and leaves a
// file already so alone.
func TestSetShared(t *testing.T) {
	s, alice, _ := viewStore(t, true)
	var commits []string
	hook := func(c Commit) error { commits = append(commits, string(c.Kind)+" "+c.Path); return nil }
	before := fileText(t, s, "alice/facts/public.md")
	if v, err := alice.SetShared("facts/public.md", true, hook); err != nil || !v.Same(versionOf([]byte(before), 0)) {
		t.Errorf("SetShared of a shared file: %v, %v", v, err)
	}
	if v, err := alice.SetShared("facts/secret.md", false, hook); err != nil || !v.Same(versionOf([]byte(secretFact), 0)) {
		t.Errorf("SetShared(false) of a private file: %v, %v", v, err)
	}
	if len(commits) != 0 || fileText(t, s, "alice/facts/public.md") != before || fileText(t, s, "alice/facts/secret.md") != secretFact {
		t.Errorf("a no-op SetShared wrote: %q", commits)
	}
	v, err := alice.SetShared("facts/secret.md", true, hook)
	got := fileText(t, s, "alice/facts/secret.md")
	if err != nil || got != SetVisibility(secretFact, true) || !v.Same(versionOf([]byte(got), 0)) {
		t.Errorf("SetShared(true) = %v, %v; the file:\n%s", v, err, got)
	}
	if _, err := alice.SetShared("facts/public.md", false, hook); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, s, "alice/facts/public.md"); IsShared(got) || !strings.Contains(got, "> Visibility: private") {
		t.Errorf("SetShared(false):\n%s", got)
	}
	if want := []string{"write facts/secret.md", "write facts/public.md"}; !slices.Equal(commits, want) {
		t.Errorf("commits %q, want %q", commits, want)
	}
	if _, err := alice.SetShared("facts/nothere.md", true, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetShared of a missing file: %v", err)
	}
	if _, err := alice.SetShared("facts/x", true, nil); !errors.Is(err, ErrBadPath) {
		t.Errorf("SetShared of a bad path: %v", err)
	}
}

// ListShared keeps its slice while nothing changes and makes it again
// after any change, also one that keeps the number of files.
func TestListSharedRebuilt(t *testing.T) {
	s, alice, _ := viewStore(t, false)
	shared := func() []string {
		t.Helper()
		files, err := alice.ListShared()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range files {
			out = append(out, f.Path)
		}
		return out
	}
	// Once the watcher has handled the folder made by the set-up (it may
	// make the index rescan), nothing changes any more.
	eventually(t, "the watcher to see alice's folder", func() bool { return watchLog.seen(filepath.Join(s.Dir(), "alice")) })
	first, _ := alice.ListShared()
	again, _ := alice.ListShared()
	if &first[0] != &again[0] {
		t.Error("ListShared made a new slice with nothing changed")
	}
	want := []string{"facts/both.shared.md", "facts/public.md", "episodes/2026-02.shared.md", "episodes/2026-01.md"}
	if got := shared(); !slices.Equal(got, want) {
		t.Fatalf("ListShared = %q", got)
	}
	// The same files, one of them private now.
	if _, err := alice.SetShared("facts/public.md", false, nil); err != nil {
		t.Fatal(err)
	}
	if got := shared(); !slices.Equal(got, []string{"facts/both.shared.md", "episodes/2026-02.shared.md", "episodes/2026-01.md"}) {
		t.Errorf("after a file was made private: %q", got)
	}
	if _, err := alice.SetShared("facts/public.md", true, nil); err != nil {
		t.Fatal(err)
	}
	if got := shared(); !slices.Equal(got, want) {
		t.Errorf("after it was shared again: %q", got)
	}
	// A user with no files, and one with no folder.
	empty := mustUser(t, s, "bob")
	if files, err := empty.ListShared(); files != nil || err != nil {
		t.Errorf("ListShared of a user with no folder: %v, %v", files, err)
	}
	writeFile(t, filepath.Join(s.Dir(), "carol/facts/x.md"), secretFact)
	if files, err := mustUser(t, s, "carol").ListShared(); len(files) != 0 || err != nil {
		t.Errorf("ListShared of a user with only private files: %v, %v", files, err)
	}
	writeFile(t, filepath.Join(s.Dir(), "dave"), "a file")
	if _, err := mustUser(t, s, "dave").ListShared(); err == nil {
		t.Error("ListShared of a user whose folder is a file: no error")
	}
}

// The guard of a channel's writes: an existing empty file is private,
// whatever the change would make of it; a private conversation's writes
// may start from one.
func TestGuardEmptyFile(t *testing.T) {
	v := Version{Exists: true}
	make := func([]byte, Version) ([]byte, error) { return []byte("# T\n> Summary: s\n"), nil }
	if _, err := visShared.guard("facts/x.shared.md", make)(nil, v); !errors.Is(err, errNotShared) {
		t.Errorf("shared guard on an empty file: %v", err)
	}
	out, err := visPrivate.guard("facts/x.md", make)(nil, v)
	if err != nil || string(out) != "# T\n> Summary: s\n" {
		t.Errorf("private guard on an empty file: %q, %v", out, err)
	}
	out, err = visShared.guard("facts/x.shared.md", make)(nil, Version{})
	if err != nil || string(out) != "# T\n> Summary: s\n> Visibility: shared\n" {
		t.Errorf("shared guard on a new file: %q, %v", out, err)
	}
	// The change's own refusal comes after, but for an append's wait for
	// a save in progress.
	if _, err := visShared.guard("facts/x.shared.md", func([]byte, Version) ([]byte, error) { return nil, ErrNotRead })(nil, v); !errors.Is(err, errNotShared) {
		t.Errorf("shared guard on an empty file, the change refused: %v", err)
	}
	if _, err := visShared.guard("episodes/2026-03.shared.md", func([]byte, Version) ([]byte, error) { return nil, errEmptyOnDisk })(nil, v); !errors.Is(err, errEmptyOnDisk) {
		t.Errorf("shared guard on an empty file, an append: %v", err)
	}
	fail := errors.New("compute failed")
	if _, err := visShared.guard("facts/x.md", func([]byte, Version) ([]byte, error) { return nil, fail })(nil, Version{}); err != fail {
		t.Errorf("a compute error: %v", err)
	}
}

// A view's index is kept between messages and made again at once after
// any change: a write through the store (the writer's next message sees
// it), a person's edit (once the watcher reports it), a change to the
// channel's memory, the folder's removal. Each view keeps its own: the
// shared view's never shows a private file, whichever was asked first.
func TestViewIndexKeptUntilAChange(t *testing.T) {
	s, alice, ch := viewStore(t, true)
	eventually(t, "the watcher to see alice's folder", func() bool { return watchLog.seen(filepath.Join(s.Dir(), "alice")) })
	index := func(v *View, budget int) string {
		t.Helper()
		idx, err := v.Index(budget)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	dm := func() string { return index(NewView(alice, false, nil), 0) }
	channel := func() string { return index(NewView(alice, true, ch), 0) }
	for range 2 {
		if got := dm(); !strings.Contains(got, "- facts/secret.md (") {
			t.Errorf("DM index without the private file:\n%s", got)
		}
		if got := channel(); strings.Contains(got, viewMark) || !strings.Contains(got, "- channel/facts/decisions.md (") {
			t.Errorf("channel index:\n%s", got)
		}
	}
	// The same text while nothing changes, from the version it was made of.
	ver := alice.idx.ver
	if a, b := dm(), dm(); a != b || alice.idx.ver != ver {
		t.Errorf("the DM index changed with nothing changed (version %d → %d)", ver, alice.idx.ver)
	}
	// Another budget is another index.
	if small := index(NewView(alice, false, nil), 200); small == dm() || !strings.Contains(small, "more files not shown") {
		t.Errorf("index of 200 bytes:\n%s", small)
	}
	// A write through the store: at once.
	if err := alice.NewSession().Write("facts/new.md", "# New\n\n> Summary: written now\n\n- x\n"); err != nil {
		t.Fatal(err)
	}
	if got := dm(); !strings.Contains(got, "- facts/new.md (") || !strings.Contains(got, "written now") {
		t.Errorf("DM index after a write:\n%s", got)
	}
	// A change to the channel's memory: in the channel's view at once.
	if err := ch.NewSession().Write("facts/more.md", "# More\n\n> Summary: more decisions\n\n- y\n"); err != nil {
		t.Fatal(err)
	}
	if got := channel(); !strings.Contains(got, "- channel/facts/more.md (") {
		t.Errorf("channel index after the channel's write:\n%s", got)
	}
	// A person's edit, once the watcher reports it; making a file private
	// by hand takes it out of the channel's index.
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/public.md"), "# Public\n\n> Summary: edited by hand\n\n- likes Go\n")
	eventually(t, "the edit in the DM index", func() bool { return strings.Contains(dm(), "edited by hand") })
	if got := channel(); strings.Contains(got, "facts/public.md") || strings.Contains(got, "edited by hand") {
		t.Errorf("the file made private by hand is in the channel's index:\n%s", got)
	}
	// The folder removed: nothing left to show.
	if err := os.RemoveAll(filepath.Join(s.Dir(), "alice")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removal in the DM index", func() bool { return dm() == indexNone })
}

// Without the watcher nothing is kept: every message's index is made
// from the folder as it is.
func TestViewIndexUnwatched(t *testing.T) {
	s, alice, _ := viewStore(t, true, func(o *Options) { o.Watch = false })
	if got, _ := NewView(alice, false, nil).Index(0); !strings.Contains(got, "- facts/secret.md (") {
		t.Fatalf("index:\n%s", got)
	}
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/public.md"), "# Public\n\n> Summary: edited by hand\n\n- likes Go\n")
	if got, _ := NewView(alice, false, nil).Index(0); !strings.Contains(got, "edited by hand") {
		t.Errorf("index after a hand edit without the watcher:\n%s", got)
	}
}

// A folder that is a file is an error for every view of it, the
// speaker's or the channel's: its index and pre-load say so.
func TestViewOfAFolderThatIsAFile(t *testing.T) {
	s := newStore(t)
	writeFile(t, filepath.Join(s.Dir(), "dave"), "a file")
	writeFile(t, filepath.Join(s.Dir(), viewChannel), "a file")
	alice, dave, ch := mustUser(t, s, "alice"), mustUser(t, s, "dave"), mustUser(t, s, viewChannel)
	for name, v := range map[string]*View{"speaker": NewView(dave, false, nil), "channel": NewView(alice, true, ch)} {
		if _, err := v.Index(0); err == nil {
			t.Errorf("%s: Index: no error", name)
		}
		if _, _, err := v.Preload(1 << 10); err == nil {
			t.Errorf("%s: Preload: no error", name)
		}
	}
	if _, _, err := dave.NewSession().Preload(1 << 10); err == nil {
		t.Error("Session.Preload: no error")
	}
}

// A forget of a person's memory leaves nothing of their files in what the
// index keeps in memory (entries, listings, rendered indexes), with an
// index cache or without one; the next index is of an empty memory.
func TestForgetEmptiesTheKeptIndex(t *testing.T) {
	for _, cached := range []bool{false, true} {
		var s *Store
		if cached {
			dir, cache := cacheDirs(t)
			s = cachedStore(t, dir, cache)
		} else {
			s = newStore(t)
		}
		u := mustUser(t, s, "alice")
		writeFile(t, filepath.Join(s.Dir(), "alice/facts/secret.md"), "# Secret\n\n> Summary: the secret summary\n\n- x\n")
		v := NewView(u, false, nil)
		eventually(t, "the file in the index", func() bool {
			idx, _ := v.Index(0)
			return strings.Contains(idx, "the secret summary")
		})
		v.Index(0) // started: this one is rendered and kept
		if err := u.RemoveAll(); err != nil {
			t.Fatal(err)
		}
		x := u.idx
		x.mu.Lock()
		kept := len(x.files) + len(x.all.files) + len(x.shared.files) + countChecked(x)
		x.mu.Unlock()
		x.rmu.Lock()
		rendered := len(x.rendered)
		x.rmu.Unlock()
		if kept != 0 || rendered != 0 {
			t.Errorf("cache %v: after the forget the index keeps %d entries and %d rendered indexes", cached, kept, rendered)
		}
		if idx, err := v.Index(0); err != nil || strings.Contains(idx, "secret") {
			t.Errorf("cache %v: the index after the forget: %q, %v", cached, idx, err)
		}
	}
}
