package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	aliceUser = "# User\n\n> Summary: name, language\n\n- Name: Alice\n- Language: English\n"
	alicePets = "# Pets\n\n> Summary: a cat called Tom\n\n- cat: Tom\n"
	aliceJan  = "# 2026-01 Episodes\n\n> Summary: logger fix\n\n## Logger fix\n- Summary: logger fix\n- Date: 2026-01-05\n\nFixed it.\n"
	bobUser   = "# User\n\n> Summary: Bob\n"
)

// memoryFixture makes a memory folder with alice (two facts, one episode
// file) and bob (one fact), and returns the environment naming it.
func memoryFixture(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := inTempDir(t)
	data := filepath.Join(dir, "data", "memory")
	for rel, text := range map[string]string{
		"alice/facts/user.md":       aliceUser,
		"alice/facts/pets.md":       alicePets,
		"alice/episodes/2026-01.md": aliceJan,
		"bob/facts/user.md":         bobUser,
		".gitkeep":                  "",
	} {
		putFile(t, filepath.Join(data, rel), text)
	}
	return data, map[string]string{"MNEMO_DATA_DIR": data}
}

func putFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestMemoryUsers(t *testing.T) {
	data, env := memoryFixture(t)
	r := cli(t, env, "memory", "users")
	r.want(t, 0, "", "")
	if r.stdout != "alice\nbob\n" || r.stderr != "" {
		t.Errorf("users: %q %q", r.stdout, r.stderr)
	}
	// Global flags anywhere; the data folder from the environment.
	cli(t, env, "memory", "--log-format", "json", "users").want(t, 0, "alice\nbob\n", "")
	cli(t, env, "--config=", "memory", "users").want(t, 2, "", "--config needs a file name")

	empty := filepath.Join(filepath.Dir(data), "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	r = cli(t, map[string]string{"MNEMO_DATA_DIR": empty}, "memory", "users")
	r.want(t, 0, "", "no users have memory in "+empty+" yet")
	if r.stdout != "" {
		t.Errorf("users of an empty folder: %q", r.stdout)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("an admin command wrote into the memory folder: %v", entries)
	}
}

func TestMemoryDataDir(t *testing.T) {
	data, _ := memoryFixture(t)
	missing := filepath.Join(data, "..", "nope")
	cli(t, map[string]string{"MNEMO_DATA_DIR": missing}, "memory", "ls", "alice").
		want(t, 1, "", "mnemo: memory folder "+filepath.Clean(missing)+" does not exist|set MNEMO_DATA_DIR or memory.dataDir")
	if exists(missing) {
		t.Error("the missing memory folder was created")
	}
	file := filepath.Join(data, ".gitkeep")
	cli(t, map[string]string{"MNEMO_DATA_DIR": file}, "memory", "users").
		want(t, 1, "", "mnemo: memory folder "+file+" is not a folder")
	cli(t, map[string]string{"MNEMO_DATA_DIR": filepath.Join(file, "x")}, "memory", "users").
		want(t, 1, "", "mnemo: memory folder: stat "+file+"/x: not a directory")
}

func TestMemoryArgs(t *testing.T) {
	_, env := memoryFixture(t)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"memory"}, "mnemo: memory needs a subcommand: users, ls, show, check, search, why, forget, export"},
		{[]string{"memory", "list"}, `mnemo: unknown memory subcommand "list"; use one of users, ls, show, check, search, why, forget, export`},
		{[]string{"memory", "--yes", "forget", "alice"}, `mnemo: unknown memory subcommand "--yes"`},
		{[]string{"memory", "--config"}, "mnemo: flag --config needs a value\n"},
		{[]string{"memory", "users", "alice"}, "mnemo: memory users takes no arguments; usage: mnemo memory users\n"},
		{[]string{"memory", "ls"}, "mnemo: memory ls takes 1 argument; usage: mnemo memory ls USER; a channel's name starts with '#': quote it ('#slack-T01-C02'), or the shell drops it as a comment\n"},
		{[]string{"memory", "show", "alice"}, "mnemo: memory show takes 2 arguments; usage: mnemo memory show USER PATH; a channel's name starts with '#': quote it ('#slack-T01-C02'), or the shell drops it as a comment\n"},
		{[]string{"memory", "check", "alice", "bob"}, "mnemo: memory check takes 0 or 1 arguments; usage: mnemo memory check [USER]\n"},
		{[]string{"memory", "forget"}, "mnemo: memory forget takes 1 or 2 arguments; usage: mnemo memory forget USER [PATH] --yes [--keep-history]; a channel's name starts with '#': quote it ('#slack-T01-C02'), or the shell drops it as a comment\n"},
		{[]string{"memory", "export", "alice", "bob"}, "mnemo: memory export takes 1 argument; usage: mnemo memory export USER [-o FILE]\n"},
		{[]string{"memory", "ls", "--all", "alice"}, "mnemo: memory ls: unknown flag --all; usage: mnemo memory ls USER\n"},
		{[]string{"memory", "ls", "alice", "--yes"}, "mnemo: memory ls: unknown flag --yes"},
		{[]string{"memory", "forget", "alice", "--yes=maybe"}, `mnemo: memory forget: invalid boolean value "maybe" for -yes`},
		{[]string{"memory", "ls", "../bob"}, `mnemo: bad memory user name "../bob": use 1-64 letters, digits, '.', '_' or '-', not starting with '.'`},
		{[]string{"memory", "show", "alice", "facts/../../bob/facts/user.md"}, `mnemo: bad memory path "facts/../../bob/facts/user.md": memory paths are facts/<name>.md`},
		{[]string{"memory", "forget", "alice", "notes.txt", "--yes"}, `mnemo: bad memory path "notes.txt"`},
		{[]string{"memory", "check", ".hidden"}, `mnemo: bad memory user name ".hidden"`},
	} {
		r := cli(t, env, tc.args...)
		r.want(t, 2, "", tc.stderr)
		if r.stdout != "" {
			t.Errorf("%q: stdout %q", tc.args, r.stdout)
		}
	}
}

func TestMemoryLs(t *testing.T) {
	data, env := memoryFixture(t)
	r := cli(t, env, "memory", "ls", "alice")
	want := "" +
		"facts/pets.md         48B  private  a cat called Tom\n" +
		"facts/user.md         69B  private  name, language\n" +
		"episodes/2026-01.md  109B  private  logger fix\n"
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("ls alice: %d\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	// Sizes are right-aligned, as memory.FormatSize shows them.
	putFile(t, filepath.Join(data, "bob/episodes/2026-02.md"), "# Feb\n\n> Summary: long\n"+strings.Repeat("x", 2500))
	r = cli(t, env, "memory", "ls", "bob")
	want = "" +
		"facts/user.md          23B  private  Bob\n" +
		"episodes/2026-02.md  2.5KB  private  long\n"
	if r.stdout != want {
		t.Errorf("ls bob:\n%s\nwant\n%s", r.stdout, want)
	}

	cli(t, env, "memory", "ls", "nobody").want(t, 1, "", `mnemo: no memory for user "nobody"; mnemo memory users lists them`)
	if exists(filepath.Join(data, "nobody")) {
		t.Error("ls created a user folder")
	}
	if err := os.Mkdir(filepath.Join(data, "carol"), 0o700); err != nil {
		t.Fatal(err)
	}
	r = cli(t, env, "memory", "ls", "carol")
	r.want(t, 0, "", "carol has no memory files")
	if r.stdout != "" {
		t.Errorf("ls of an empty user: %q", r.stdout)
	}
	if err := os.Symlink("alice", filepath.Join(data, "dave")); err != nil {
		t.Fatal(err)
	}
	cli(t, env, "memory", "ls", "dave").want(t, 1, "", "mnemo: memory folder "+data+"/dave is a symlink, not a folder")
}

func TestMemoryShow(t *testing.T) {
	data, env := memoryFixture(t)
	r := cli(t, env, "memory", "show", "alice", "episodes/2026-01.md")
	if r.code != 0 || r.stdout != aliceJan || r.stderr != "" {
		t.Errorf("show: %d %q %q", r.code, r.stdout, r.stderr)
	}
	cli(t, env, "memory", "show", "alice", "facts/none.md").want(t, 1, "", "mnemo: alice has no file facts/none.md; mnemo memory ls alice lists them")
	cli(t, env, "memory", "show", "nobody", "facts/user.md").want(t, 1, "", `mnemo: no memory for user "nobody"`)
	// The same sandbox as the tools: a symlink is not followed, even inside.
	if err := os.Symlink("../../bob/facts/user.md", filepath.Join(data, "alice/facts/bob.md")); err != nil {
		t.Fatal(err)
	}
	r = cli(t, env, "memory", "show", "alice", "facts/bob.md")
	r.want(t, 1, "", "mnemo: facts/bob.md: not a regular file (it is a symlink)")
	if strings.Contains(r.stdout, "Bob") {
		t.Error("show followed a symlink into another user's folder")
	}
}

func TestMemoryCheck(t *testing.T) {
	data, env := memoryFixture(t)
	r := cli(t, env, "memory", "check")
	if r.code != 0 || r.stdout != "ok: 2 users, 4 files checked\n" || r.stderr != "" {
		t.Errorf("check: %d %q %q", r.code, r.stdout, r.stderr)
	}
	cli(t, env, "memory", "check", "bob").want(t, 0, "ok: 1 user, 1 file checked\n", "")

	putFile(t, filepath.Join(data, "alice/facts/nosum.md"), "# Pets\n")
	putFile(t, filepath.Join(data, "alice/episodes/2026-02.md"), "# Feb\n\n> Summary: s\n\n## Torn\n- Date: 2026-02-01\n")
	putFile(t, filepath.Join(data, "alice/facts/notes.txt"), "x")
	putFile(t, filepath.Join(data, "bob/facts/.user.md.mnemo-tmp-0011"), "x")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(data, "bob/facts/.user.md.mnemo-tmp-0011"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(data, "bob/facts/pw.md")); err != nil {
		t.Fatal(err)
	}
	r = cli(t, env, "memory", "check")
	wantLines := []string{
		`alice/facts/nosum.md: has no "> Summary: ..." line under its title; the index shows "Pets" instead: add one`,
		"alice/facts/notes.txt: not a memory file name, so mnemo ignores it",
		`alice/episodes/2026-02.md: line 5: entry "Torn" has no "- Summary:" line: add it, or remove the entry`,
		"bob/facts/.user.md.mnemo-tmp-0011: temp file of a write interrupted 1h0m0s ago",
		"bob/facts/pw.md: is a symlink, not a plain file",
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 1 || len(lines) != len(wantLines) {
		t.Fatalf("check: exit %d\n%s", r.code, r.stdout)
	}
	for i := range lines {
		if !strings.HasPrefix(lines[i], wantLines[i]) {
			t.Errorf("line %d:\n got %s\nwant %s...", i, lines[i], wantLines[i])
		}
	}
	if r.stderr != "mnemo: memory check: 5 problems (2 users, 7 files checked)\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	r = cli(t, env, "memory", "check", "bob")
	r.want(t, 1, "bob/facts/pw.md", "mnemo: memory check: 2 problems (1 user, 2 files checked)")
	if strings.Contains(r.stdout, "alice") {
		t.Errorf("check bob reported alice: %s", r.stdout)
	}
	cli(t, env, "memory", "check", "nobody").want(t, 1, "", `mnemo: no memory for user "nobody"; mnemo memory users lists them`)
	// Checking removes nothing, not even the leftover temp file.
	if !exists(filepath.Join(data, "bob/facts/.user.md.mnemo-tmp-0011")) {
		t.Error("check removed a temp file")
	}
}

func TestMemoryForget(t *testing.T) {
	data, env := memoryFixture(t)
	// Without --yes nothing changes, and the message says what would go.
	r := cli(t, env, "memory", "forget", "alice")
	r.want(t, 2, "", "mnemo: this would delete all memory of alice: the folder "+data+"/alice and its 3 memory files; add --yes to delete it")
	r = cli(t, env, "memory", "forget", "alice", "facts/pets.md")
	r.want(t, 2, "", "mnemo: this would delete alice/facts/pets.md (48B); add --yes to delete it")
	cli(t, env, "memory", "forget", "alice", "--yes=false").want(t, 2, "", "add --yes")
	if !exists(filepath.Join(data, "alice/facts/pets.md")) || !exists(filepath.Join(data, "alice/facts/user.md")) {
		t.Fatal("forget without --yes deleted something")
	}

	// One file, --yes before or after the arguments. The answer alone:
	// the store's info lines only with --verbose.
	r = cli(t, env, "memory", "forget", "--yes", "alice", "facts/pets.md")
	if r.want(t, 0, "deleted alice/facts/pets.md (48B)\n", ""); r.stderr != "" {
		t.Errorf("forget printed log lines without --verbose:\n%s", r.stderr)
	}
	putFile(t, filepath.Join(data, "alice/facts/pets.md"), "# Pets\n> Summary: pets\n")
	cli(t, env, "memory", "forget", "--yes", "--verbose", "alice", "facts/pets.md").want(t, 0, "deleted alice/facts/pets.md", "memory: removed")
	if exists(filepath.Join(data, "alice/facts/pets.md")) || !exists(filepath.Join(data, "alice/facts/user.md")) {
		t.Error("forget of one file deleted the wrong thing")
	}
	cli(t, env, "memory", "forget", "alice", "facts/pets.md", "--yes").want(t, 1, "", "mnemo: alice has no file facts/pets.md; mnemo memory ls alice lists them")

	// A symlink is removed as a name; its target stays.
	if err := os.Symlink("../../bob/facts/user.md", filepath.Join(data, "alice/facts/bob.md")); err != nil {
		t.Fatal(err)
	}
	cli(t, env, "memory", "forget", "alice", "facts/bob.md", "--yes").want(t, 0, "deleted alice/facts/bob.md", "")
	if exists(filepath.Join(data, "alice/facts/bob.md")) || !exists(filepath.Join(data, "bob/facts/user.md")) {
		t.Error("forget followed a symlink")
	}
	// A folder with a memory file's name is refused.
	if err := os.Mkdir(filepath.Join(data, "alice/facts/dir.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	cli(t, env, "memory", "forget", "alice", "facts/dir.md", "--yes").want(t, 1, "", "mnemo: facts/dir.md: not a regular file (it is a folder)")
	if err := os.Remove(filepath.Join(data, "alice/facts/dir.md")); err != nil {
		t.Fatal(err)
	}

	// The whole user.
	r = cli(t, env, "memory", "forget", "alice", "--yes")
	r.want(t, 0, "deleted all memory of alice: the folder "+data+"/alice and its 2 memory files\n", "")
	if exists(filepath.Join(data, "alice")) || !exists(filepath.Join(data, "bob/facts/user.md")) {
		t.Error("forget alice deleted the wrong thing")
	}
	cli(t, env, "memory", "users").want(t, 0, "bob\n", "")
	cli(t, env, "memory", "forget", "alice", "--yes").want(t, 1, "", `mnemo: no memory for user "alice"`)

	// A user folder that is a symlink is not followed.
	if err := os.Symlink("bob", filepath.Join(data, "eve")); err != nil {
		t.Fatal(err)
	}
	cli(t, env, "memory", "forget", "eve", "--yes").want(t, 1, "", "is a symlink, not a folder")
	cli(t, env, "memory", "forget", "eve", "facts/user.md", "--yes").want(t, 1, "", "is a symlink, not a folder")
	if !exists(filepath.Join(data, "bob/facts/user.md")) {
		t.Error("forget through a symlinked user folder deleted bob's memory")
	}
}

func TestMemoryExport(t *testing.T) {
	data, env := memoryFixture(t)
	at := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	for _, rel := range []string{"alice/facts/user.md", "alice/facts/pets.md", "alice/episodes/2026-01.md"} {
		if err := os.Chtimes(filepath.Join(data, rel), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../bob/facts/user.md", filepath.Join(data, "alice/facts/bob.md")); err != nil {
		t.Fatal(err)
	}
	putFile(t, filepath.Join(data, "alice/notes.txt"), "not memory")
	r := cli(t, env, "memory", "export", "alice")
	if r.code != 0 {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	if r.stderr != "mnemo: export: skipped alice/facts/bob.md: not a regular file (it is a symlink); replace it with a plain Markdown file; not exported\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	zr, err := gzip.NewReader(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	want := map[string]string{
		"alice/facts/user.md":       aliceUser,
		"alice/facts/pets.md":       alicePets,
		"alice/episodes/2026-01.md": aliceJan,
	}
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		body, _ := io.ReadAll(tr)
		if h.Typeflag == tar.TypeDir {
			if h.Mode != 0o700 {
				t.Errorf("%s: mode %o", h.Name, h.Mode)
			}
			continue
		}
		if string(body) != want[h.Name] || h.Mode != 0o600 || !h.ModTime.Equal(at) {
			t.Errorf("%s: mode %o mtime %v body %q", h.Name, h.Mode, h.ModTime, body)
		}
		delete(want, h.Name)
	}
	if len(want) != 0 {
		t.Errorf("missing from the archive: %v (has %v)", want, names)
	}
	if strings.Join(names, " ") != "alice/ alice/facts/ alice/facts/pets.md alice/facts/user.md alice/episodes/ alice/episodes/2026-01.md" {
		t.Errorf("archive entries: %v", names)
	}

	// -o FILE: the same archive, whole, private.
	file := filepath.Join(t.TempDir(), "alice.tar.gz")
	cli(t, env, "memory", "export", "alice", "-o", file).want(t, 0, "", "")
	if b, err := os.ReadFile(file); err != nil || string(b) != r.stdout {
		t.Errorf("-o wrote %d bytes (%v), stdout had %d", len(b), err, len(r.stdout))
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("-o file mode: %v %v", fi.Mode(), err)
	}
	cli(t, env, "memory", "export", "alice", "-o", filepath.Join(t.TempDir(), "no", "such", "dir.tgz")).want(t, 1, "", "mnemo: export: ")
	// Never gzip onto a terminal.
	tty := consoletest.Open(t)
	var ttyErr bytes.Buffer
	err = run(stopOn(context.Background()), []string{"memory", "export", "alice"}, func(k string) string { return env[k] }, nil, tty.Slave, &ttyErr)
	if code := exitCode(err, &ttyErr); code != 2 || !strings.Contains(ttyErr.String(), "mnemo: memory export writes a tar.gz archive, not text for a terminal: redirect it (mnemo memory export alice > alice.tar.gz) or use -o FILE") {
		t.Errorf("export to a terminal: %d %q", code, ttyErr.String())
	}

	cli(t, env, "memory", "export", "nobody").want(t, 1, "", `mnemo: no memory for user "nobody"`)
	var errOut bytes.Buffer
	err = run(stopOn(context.Background()), []string{"memory", "export", "bob"}, func(k string) string { return env[k] }, nil, failingWriter{}, &errOut)
	if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "mnemo: export of bob failed, the archive is incomplete: ") {
		t.Errorf("export to a broken pipe: %d %q", code, errOut.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestMemoryBrokenStdout: every command that prints reports a failed write.
func TestMemoryBrokenStdout(t *testing.T) {
	data, env := memoryFixture(t)
	putFile(t, filepath.Join(data, "bob/facts/x.md"), "no title")
	for _, args := range [][]string{
		{"memory", "users"},
		{"memory", "ls", "alice"},
		{"memory", "show", "alice", "facts/user.md"},
		{"memory", "check", "alice"},
		{"memory", "check", "bob"},
		{"memory", "forget", "alice", "facts/user.md", "--yes"},
		{"memory", "forget", "alice", "--yes"},
		{"version"},
		{"help"},
		{"--help"},
	} {
		var errOut bytes.Buffer
		err := run(stopOn(context.Background()), args, func(k string) string { return env[k] }, nil, failingWriter{}, &errOut)
		if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "broken pipe") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// What the model wrote cannot steer the admin's terminal: control
// characters are shown, not sent; text, tabs and line breaks are kept.
func TestShowable(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nnext line é": "plain\ttext\nnext line é",
		"\x1b]0;owned\a\x1b[2J":    "^[]0;owned^G^[[2J",
		"cr\r\nnul\x00 del\x7f":    "cr^M\nnul^@ del^?",
		"c1 \u0085 \u009b":         `c1 \u0085 \u009b`,
	} {
		if got := showable(in); got != want {
			t.Errorf("showable(%q) = %q; want %q", in, got, want)
		}
	}
}

// FuzzShowable: whatever a file holds, what show prints holds no control
// character a terminal acts on, and text without one is printed as it is.
func FuzzShowable(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\x1b[31mred", "\u009b2J", "\xff\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := showable(s)
		if strings.ContainsFunc(out, isTerminalControl) {
			t.Fatalf("showable(%q) = %q still has a control character", s, out)
		}
		if !strings.ContainsFunc(s, isTerminalControl) && out != s {
			t.Fatalf("showable(%q) = %q changed text without controls", s, out)
		}
	})
}

// mnemo memory show prints a file's control characters in caret notation.
func TestMemoryShowControlCharacters(t *testing.T) {
	data, env := memoryFixture(t)
	putFile(t, filepath.Join(data, "alice/facts/evil.md"), "# Evil\n> Summary: x\x1b[2J\n\nbell\a\n")
	r := cli(t, env, "memory", "show", "alice", "facts/evil.md")
	if r.code != 0 || r.stdout != "# Evil\n> Summary: x^[[2J\n\nbell^G\n" {
		t.Errorf("show: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, env, "memory", "ls", "alice"); r.code != 0 || strings.ContainsFunc(r.stdout, isTerminalControl) { // the index already cleans summaries
		t.Errorf("ls: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
