package main

// Issue 20 point 6: the admin commands see and manage channels' memories
// as they do people's, keep the two apart, and a person's forget never
// touches a channel's memory.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/console/consoletest"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

const (
	chanKey       = "#slack-T01-C02"
	chanDecisions = "# Decisions\n\n> Summary: what the team decided\n\n- Deploys: Tuesdays\n"
	chanOld       = "# Decisions\n\n> Summary: what the team decided\n\n- Deploys: Mondays\n"
	chanJan       = "# 2026-01 Episodes\n\n> Summary: release\n\n## Release\n- Summary: v2 shipped\n- Date: 2026-01-07\n\nShipped.\n"
	aliceWork     = "# Work\n\n> Summary: the search team\n> Visibility: shared\n\n- Team: search\n"
	// namesake is a person whose name is the channel's without its '#'.
	namesake     = "slack-T01-C02"
	namesakeUser = "# User\n\n> Summary: a person named like a channel\n"
)

// channelFixture is memoryFixture plus alice's shared facts/work.shared.md,
// the memory of the channel #slack-T01-C02 (a fact with two kept versions,
// an episode file) and of #discord-42, and history for alice. It returns
// the memory folder, the state folder and the environment.
func channelFixture(t *testing.T) (string, string, map[string]string) {
	t.Helper()
	data, env := memoryFixture(t)
	state := filepath.Join(filepath.Dir(data), "state")
	putFile(t, filepath.Join(data, "alice/facts/work.shared.md"), aliceWork)
	putFile(t, filepath.Join(data, chanKey, "facts/decisions.md"), chanDecisions)
	putFile(t, filepath.Join(data, chanKey, "episodes/2026-01.md"), chanJan)
	putFile(t, filepath.Join(data, "#discord-42/facts/topic.md"), "# Topic\n\n> Summary: games\n")
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(state, "history"), Now: func() time.Time { return time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, r := range []struct{ owner, path, text string }{
		{chanKey, "facts/decisions.md", chanOld},
		{chanKey, "facts/decisions.md", chanDecisions},
		{chanKey, "episodes/2026-01.md", chanJan},
		{"alice", "facts/work.shared.md", aliceWork},
		{"alice", "facts/pets.md", alicePets},
	} {
		if _, _, err := h.Record(r.owner, r.path, []byte(r.text), "reflector (task t1)"); err != nil {
			t.Fatal(err)
		}
	}
	return data, state, env
}

// snapshot reads every file under roots (a missing root is empty) into
// path → content: what must survive byte for byte.
func snapshot(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// channelRoots are everything of chanKey on disk: its memory, history and
// index cache.
func channelRoots(data, state string) []string {
	return []string{filepath.Join(data, chanKey), filepath.Join(state, "history", chanKey), filepath.Join(state, "index", chanKey+".idx")}
}

func TestMemoryUsersListsChannelsApart(t *testing.T) {
	data, _, env := channelFixture(t)
	putFile(t, filepath.Join(data, "#slack-file"), "a file, not a channel's folder")
	cli(t, env, "memory", "users").want(t, 0, "", "")
	r := cli(t, env, "memory", "users")
	if want := "alice\nbob\n\nchannels:\n#discord-42\n#slack-T01-C02\n"; r.stdout != want || r.stderr != "" {
		t.Errorf("users:\n%s\nwant\n%s\nstderr %q", r.stdout, want, r.stderr)
	}
	// Only channels: the people's part is empty, and said so.
	for _, u := range []string{"alice", "bob"} {
		if err := os.RemoveAll(filepath.Join(data, u)); err != nil {
			t.Fatal(err)
		}
	}
	r = cli(t, env, "memory", "users")
	r.want(t, 0, "", "no users have memory in "+data+" yet")
	if r.stdout != "channels:\n#discord-42\n#slack-T01-C02\n" {
		t.Errorf("users with only channels: %q", r.stdout)
	}
}

func TestMemoryLsVisibility(t *testing.T) {
	data, _, env := channelFixture(t)
	r := cli(t, env, "memory", "ls", "alice")
	want := "" +
		"facts/pets.md          48B  private  a cat called Tom\n" +
		"facts/user.md          69B  private  name, language\n" +
		"facts/work.shared.md   72B  shared   the search team\n" +
		"episodes/2026-01.md   109B  private  logger fix\n"
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("ls alice: %d\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	// The column is the third field of every line, for scripts.
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if f := strings.Fields(line); !slices.Contains([]string{"private", "shared"}, f[2]) {
			t.Errorf("visibility field of %q: %q", line, f[2])
		}
	}
	// A hand edit of the line shows at the next ls.
	putFile(t, filepath.Join(data, "alice/facts/pets.md"), strings.Replace(alicePets, "Tom\n", "Tom\n> Visibility: shared\n", 1))
	if r := cli(t, env, "memory", "ls", "alice"); !strings.Contains(r.stdout, "facts/pets.md          69B  shared   a cat called Tom\n") {
		t.Errorf("ls after sharing pets:\n%s", r.stdout)
	}
	// A channel's own files are everyone's in the channel, whatever their header says.
	putFile(t, filepath.Join(data, chanKey, "facts/private.md"), "# P\n\n> Summary: p\n> Visibility: private\n")
	r = cli(t, env, "memory", "ls", chanKey)
	want = "" +
		"facts/decisions.md    67B  channel  what the team decided\n" +
		"facts/private.md      40B  channel  p\n" +
		"episodes/2026-01.md  102B  channel  release\n"
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("ls %s: %d\n%s\nwant\n%s\nstderr %s", chanKey, r.code, r.stdout, want, r.stderr)
	}
}

// show, check, export, history, restore and edit take a channel's name.
func TestMemoryChannelCommands(t *testing.T) {
	data, state, env := channelFixture(t)
	r := cli(t, env, "memory", "show", chanKey, "facts/decisions.md")
	if r.code != 0 || r.stdout != chanDecisions || r.stderr != "" {
		t.Errorf("show: %d %q %q", r.code, r.stdout, r.stderr)
	}
	cli(t, env, "memory", "check").want(t, 0, "ok: 2 users, 2 channels, 8 files checked\n", "")
	cli(t, env, "memory", "check", chanKey).want(t, 0, "ok: 1 channel, 2 files checked\n", "")
	cli(t, env, "memory", "check", "alice").want(t, 0, "ok: 1 user, 4 files checked\n", "")
	putFile(t, filepath.Join(data, chanKey, "facts/nosum.md"), "# No summary\n")
	cli(t, env, "memory", "check", chanKey).want(t, 1, chanKey+`/facts/nosum.md: has no "> Summary: ..." line`, "mnemo: memory check: 1 problem (1 channel, 3 files checked)")
	if err := os.Remove(filepath.Join(data, chanKey, "facts/nosum.md")); err != nil {
		t.Fatal(err)
	}

	// export: the channel's folder, as a user's.
	r = cli(t, env, "memory", "export", chanKey)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	zr, err := gzip.NewReader(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got[h.Name] = string(body)
	}
	if want := map[string]string{chanKey + "/": "", chanKey + "/facts/": "", chanKey + "/facts/decisions.md": chanDecisions,
		chanKey + "/episodes/": "", chanKey + "/episodes/2026-01.md": chanJan}; !maps.Equal(got, want) {
		t.Errorf("archive of %s: %v", chanKey, got)
	}
	tty := consoletest.Open(t)
	var ttyErr bytes.Buffer
	err = run(stopOn(context.Background()), []string{"memory", "export", chanKey}, func(k string) string { return env[k] }, nil, tty.Slave, &ttyErr)
	if code := exitCode(err, &ttyErr); code != 2 || !strings.Contains(ttyErr.String(), "redirect it (mnemo memory export '#slack-T01-C02' > slack-T01-C02.tar.gz) or use -o FILE") {
		t.Errorf("export of a channel to a terminal: %d %q", code, ttyErr.String())
	}

	// history and restore: the channel's own, under state/history/<key>.
	r = cli(t, env, "memory", "history", chanKey, "facts/decisions.md")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.Contains(lines[1], "+1 −1 lines") || !strings.Contains(lines[2], "created") {
		t.Fatalf("history of %s: %d\n%s%s", chanKey, r.code, r.stdout, r.stderr)
	}
	if all := cli(t, env, "memory", "history", chanKey); strings.Count(all.stdout, "\n") != 4 || strings.Contains(all.stdout, "pets") {
		t.Errorf("history of all the channel's files:\n%s", all.stdout)
	}
	if alice := cli(t, env, "memory", "history", "alice"); strings.Contains(alice.stdout, "decisions") {
		t.Errorf("alice's history shows the channel's:\n%s", alice.stdout)
	}
	oldID := strings.Fields(lines[2])[0]
	cli(t, env, "memory", "restore", chanKey, "facts/decisions.md").want(t, 2, "", "mnemo memory history '#slack-T01-C02' facts/decisions.md lists them")
	cli(t, env, "memory", "restore", chanKey, "facts/decisions.md", "--at", oldID).want(t, 0, "restored facts/decisions.md of "+chanKey+" to version "+oldID, "")
	if b, _ := os.ReadFile(filepath.Join(data, chanKey, "facts/decisions.md")); string(b) != chanOld {
		t.Errorf("after restore: %q", b)
	}
	if !exists(filepath.Join(state, "history", chanKey, "facts/decisions.md")) {
		t.Errorf("no history under %s", filepath.Join(state, "history", chanKey))
	}

	// edit: the copy is named without the '#', the edit is kept in the history.
	tmp := t.TempDir()
	editor := filepath.Join(tmp, "editor.sh")
	putFile(t, editor, "#!/bin/sh\ncase \"$1\" in *'#'*) exit 3;; esac\nsed -i 's/Mondays/Fridays/' \"$1\"\n")
	if err := os.Chmod(editor, 0o700); err != nil {
		t.Fatal(err)
	}
	env["EDITOR"], env["TMPDIR"], env["USER"] = editor, tmp, "root-admin"
	cli(t, env, "memory", "edit", chanKey, "facts/decisions.md").want(t, 0, "", "mnemo: saved facts/decisions.md of "+chanKey)
	if b, _ := os.ReadFile(filepath.Join(data, chanKey, "facts/decisions.md")); string(b) != strings.Replace(chanOld, "Mondays", "Fridays", 1) {
		t.Errorf("after edit: %q", b)
	}
	if h := cli(t, env, "memory", "history", chanKey, "facts/decisions.md"); !strings.Contains(strings.Split(h.stdout, "\n")[1], "root-admin (memory edit)") {
		t.Errorf("edit not in the channel's history:\n%s", h.stdout)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "mnemo-edit-*")); len(left) != 0 {
		t.Errorf("edit left %v", left)
	}
}

// Names that are neither a user's nor a channel's, and channels that do
// not exist, get errors naming the fix.
func TestMemoryChannelNameErrors(t *testing.T) {
	data, _, env := channelFixture(t)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"memory", "ls", "slack:T01"}, 2, `mnemo: bad memory user name "slack:T01": use 1-64 letters, digits, '.', '_' or '-', not starting with '.'; ` +
			`a channel's memory is named '#' and such a name, quoted in a shell ('#slack-T01-C02'); mnemo memory users lists both` + "\n"},
		{[]string{"memory", "forget", "#slack/T01", "--yes"}, 2, `mnemo: bad memory user name "#slack/T01": a channel's memory is named '#' and 1-64 letters, digits, '.', '_' or '-' (e.g. #slack-T01-C02)` + "\n"},
		{[]string{"memory", "ls", "#"}, 2, `bad memory user name "#"`},
		{[]string{"memory", "ls", "#slack-T09-C09"}, 1, `mnemo: no memory for channel "#slack-T09-C09"; mnemo memory users lists them` + "\n"},
		{[]string{"memory", "ls", namesake}, 1, `mnemo: no memory for user "slack-T01-C02"; did you mean the channel '#slack-T01-C02'? (mnemo memory users lists them)` + "\n"},
		{[]string{"memory", "show", "#alice", "facts/user.md"}, 1, `mnemo: no memory for channel "#alice"; did you mean the user alice? (mnemo memory users lists them)` + "\n"},
		{[]string{"memory", "check", "#slack-T09-C09"}, 1, `mnemo: no memory for channel "#slack-T09-C09"`},
		{[]string{"memory", "export", "#slack-T09-C09", "-o", filepath.Join(t.TempDir(), "x.tgz")}, 1, `mnemo: no memory for channel "#slack-T09-C09"`},
		{[]string{"memory", "forget", "#slack-T09-C09", "--yes"}, 1, `mnemo: no memory for channel "#slack-T09-C09"`},
		{[]string{"memory", "forget", "#slack-T09-C09"}, 1, `mnemo: no memory for channel "#slack-T09-C09"`},
		{[]string{"memory", "show", chanKey, "facts/none.md"}, 1, "mnemo: #slack-T01-C02 has no file facts/none.md; mnemo memory ls '#slack-T01-C02' lists them\n"},
		{[]string{"memory", "forget", chanKey, "facts/none.md", "--yes"}, 1, "mnemo: #slack-T01-C02 has no file facts/none.md; mnemo memory ls '#slack-T01-C02' lists them\n"},
		// What an unquoted '#' leaves: the name is gone, and nothing runs.
		{[]string{"memory", "forget", "--yes"}, 2, "quote it ('#slack-T01-C02'), or the shell drops it as a comment"},
		{[]string{"memory", "show"}, 2, "quote it ('#slack-T01-C02'), or the shell drops it as a comment"},
	} {
		r := cli(t, env, tc.args...)
		r.want(t, tc.code, "", tc.stderr)
		if r.stdout != "" {
			t.Errorf("%q: stdout %q", tc.args, r.stdout)
		}
	}
	if !exists(filepath.Join(data, chanKey, "facts/decisions.md")) || exists(filepath.Join(data, "#slack-T09-C09")) {
		t.Error("a failed command changed the memory folder")
	}
}

// A person's forget, by the CLI with no process running, removes all of
// theirs (their shared files too) and leaves every channel's memory, its
// history and its index cache byte for byte, even the channel named like
// the person.
func TestForgetPersonKeepsChannels(t *testing.T) {
	data, state, env := channelFixture(t)
	putFile(t, filepath.Join(data, namesake, "facts/user.md"), namesakeUser)
	putFile(t, filepath.Join(state, "index", chanKey+".idx"), "an index cache")
	putFile(t, filepath.Join(state, "chat", "alice.history"), "hello\n")
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(state, "history")})
	if err != nil {
		t.Fatal(err)
	}
	h.Record(namesake, "facts/user.md", []byte(namesakeUser), "reflector (task t3)")
	h.Close()
	channels := snapshot(t, append(channelRoots(data, state), filepath.Join(data, "#discord-42"))...)
	if len(channels) != 10 {
		t.Fatalf("fixture: %d channel files: %v", len(channels), slices.Sorted(maps.Keys(channels)))
	}

	cli(t, env, "memory", "forget", "alice").want(t, 2, "", "mnemo: this would delete all memory of alice: the folder "+data+"/alice and its 4 memory files "+
		"(the channels' memories stay as they are: what alice said in a channel is the channel's; mnemo memory users lists them); add --yes to delete it\n")
	r := cli(t, env, "memory", "forget", "alice", "--yes")
	if want := "deleted all memory of alice: the folder " + data + "/alice and its 4 memory files\n"; r.code != 0 || r.stdout != want {
		t.Errorf("forget alice: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, gone := range []string{filepath.Join(data, "alice"), filepath.Join(state, "history", "alice"), filepath.Join(state, "chat", "alice.history")} {
		if exists(gone) {
			t.Errorf("%s is still there after alice's forget", gone)
		}
	}
	if got := snapshot(t, append(channelRoots(data, state), filepath.Join(data, "#discord-42"))...); !maps.Equal(got, channels) {
		t.Errorf("alice's forget changed a channel's memory:\n%v\nwant\n%v", got, channels)
	}

	// The person named like the channel is theirs alone to forget.
	cli(t, env, "memory", "forget", namesake, "--yes").want(t, 0, "deleted all memory of slack-T01-C02: the folder "+data+"/slack-T01-C02 and its 1 memory file\n", "")
	if exists(filepath.Join(data, namesake)) || exists(filepath.Join(state, "history", namesake)) {
		t.Error("the namesake's memory or history survived their forget")
	}
	if got := snapshot(t, append(channelRoots(data, state), filepath.Join(data, "#discord-42"))...); !maps.Equal(got, channels) {
		t.Errorf("the namesake's forget changed the channel's memory:\n%v\nwant\n%v", got, channels)
	}
	cli(t, env, "memory", "users").want(t, 0, "bob\n\nchannels:\n#discord-42\n#slack-T01-C02\n", "")
}

// A channel's memory is forgotten by the CLI (--yes): a file, then all of
// it, with its history; people's memories and pending work stay.
func TestForgetChannel(t *testing.T) {
	data, state, env := channelFixture(t)
	putFile(t, filepath.Join(state, "index", chanKey+".idx"), "an index cache")
	people := snapshot(t, filepath.Join(data, "alice"), filepath.Join(data, "bob"), filepath.Join(data, "#discord-42"), filepath.Join(state, "history", "alice"))

	cli(t, env, "memory", "forget", chanKey).want(t, 2, "", "mnemo: this would delete all memory of channel #slack-T01-C02: the folder "+data+"/#slack-T01-C02 and its 2 memory files; add --yes to delete it\n")
	cli(t, env, "memory", "forget", chanKey, "facts/decisions.md").want(t, 2, "", "mnemo: this would delete #slack-T01-C02/facts/decisions.md (67B); add --yes to delete it\n")
	if !exists(filepath.Join(data, chanKey, "facts/decisions.md")) {
		t.Fatal("forget without --yes deleted the channel's file")
	}

	// One file, its history kept on request.
	cli(t, env, "memory", "forget", chanKey, "facts/decisions.md", "--yes", "--keep-history").want(t, 0, "deleted #slack-T01-C02/facts/decisions.md (67B)\n", "")
	if exists(filepath.Join(data, chanKey, "facts/decisions.md")) || !exists(filepath.Join(data, chanKey, "episodes/2026-01.md")) {
		t.Error("forget of the channel's file deleted the wrong thing")
	}
	cli(t, env, "memory", "history", chanKey, "facts/decisions.md").want(t, 0, "reflector (task t1)", "")

	// All of it: folder, history, index cache.
	cli(t, env, "memory", "forget", chanKey, "--yes").want(t, 0, "deleted all memory of channel #slack-T01-C02: the folder "+data+"/#slack-T01-C02 and its 1 memory file\n", "")
	if got := snapshot(t, channelRoots(data, state)...); len(got) != 0 {
		t.Errorf("left of the channel after its forget: %v", slices.Sorted(maps.Keys(got)))
	}
	if got := snapshot(t, filepath.Join(data, "alice"), filepath.Join(data, "bob"), filepath.Join(data, "#discord-42"), filepath.Join(state, "history", "alice")); !maps.Equal(got, people) {
		t.Errorf("the channel's forget changed other memories:\n%v\nwant\n%v", got, people)
	}
	cli(t, env, "memory", "users").want(t, 0, "alice\nbob\n\nchannels:\n#discord-42\n", "")
	cli(t, env, "memory", "forget", chanKey, "--yes").want(t, 1, "", `mnemo: no memory for channel "#slack-T01-C02"; mnemo memory users lists them`)
}

// While serve runs, the forgets go through its control socket: a person's
// leaves the channel's memory and history byte for byte; a channel's runs
// none of the person-only holders (queued messages, journaled turns,
// short-term history) and deletes only the channel's memory.
func TestForgetWhileServeRunsKeepsChannelsApart(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	data, state := filepath.Join(w.dir, "data", "memory"), filepath.Join(w.dir, "data", "state")
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(state, "history")})
	if err != nil {
		t.Fatal(err)
	}
	// Each file's text is its newest kept version: serve's start keeps nothing more.
	for rel, text := range map[string]string{
		"alice/facts/user.md": aliceUser, "alice/facts/work.shared.md": aliceWork,
		chanKey + "/facts/decisions.md": chanDecisions, chanKey + "/episodes/2026-01.md": chanJan,
	} {
		putFile(t, filepath.Join(data, rel), text)
		owner, p, _ := strings.Cut(rel, "/")
		if _, _, err := h.Record(owner, p, []byte(text), "reflector (task t1)"); err != nil {
			t.Fatal(err)
		}
	}
	h.Close()
	env, _ := serveEnv(w)
	asked := make(chan string, 8)
	fa := &fakeAdapter{started: make(chan struct{}), forget: func(user string) int {
		asked <- user
		return 1
	}}
	ctx, cancel := context.WithCancel(context.Background())
	_, done := goServe(t, ctx, env, cfg, func(_ *cliEnv, _ *config.Config, a *app.App) ([]namedAdapter, error) {
		return []namedAdapter{{"fake", fa}}, nil
	})
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-fa.started
	by := fmt.Sprintf(" (done by process %d (mnemo serve))\n", os.Getpid())
	channel := snapshot(t, filepath.Join(data, chanKey), filepath.Join(state, "history", chanKey))
	if len(channel) != 6 {
		t.Fatalf("fixture: %v", slices.Sorted(maps.Keys(channel)))
	}

	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 0,
		"deleted all memory of alice: the folder "+data+"/alice and its 2 memory files; also dropped 1 message queued for an answer on fake"+by, "")
	if exists(filepath.Join(data, "alice")) {
		t.Error("alice's folder (a shared file in it) survived her forget")
	}
	if got := snapshot(t, filepath.Join(data, chanKey), filepath.Join(state, "history", chanKey)); !maps.Equal(got, channel) {
		t.Errorf("alice's forget changed the channel's memory:\n%v\nwant\n%v", got, channel)
	}

	cli(t, w.env, "memory", "forget", chanKey, "facts/decisions.md", "--yes").want(t, 0, "deleted #slack-T01-C02/facts/decisions.md (67B)"+by, "")
	cli(t, w.env, "memory", "forget", chanKey, "--yes").want(t, 0,
		"deleted all memory of channel #slack-T01-C02: the folder "+data+"/#slack-T01-C02 and its 1 memory file"+by, "")
	if exists(filepath.Join(data, chanKey)) {
		t.Error("the channel's folder survived its forget")
	}
	cli(t, w.env, "memory", "forget", chanKey, "--yes").want(t, 1, "", `no memory for channel "#slack-T01-C02"`)
	if got := snapshot(t, filepath.Join(state, "history", chanKey)); len(got) != 0 {
		t.Errorf("the channel's history survived its forget: %v", slices.Sorted(maps.Keys(got)))
	}
	if got := snapshot(t, filepath.Join(state, "history", "alice")); len(got) != 0 {
		t.Errorf("alice's history survived her forget: %v", slices.Sorted(maps.Keys(got)))
	}
	if _, err := control.Call(context.Background(), app.ControlSocket(cfg), control.Request{Op: app.OpForget, User: "#slack/T01"}); err == nil || !strings.Contains(err.Error(), `bad memory user name "#slack/T01": a channel's memory is named '#'`) {
		t.Errorf("forget of a bad channel name: %v", err)
	}
	close(asked)
	var names []string
	for n := range asked {
		names = append(names, n)
	}
	if !slices.Equal(names, []string{"alice"}) {
		t.Errorf("the person's queue holder ran for %q, want only alice", names)
	}
}

// A history folder that cannot be used, and kept versions that do not
// read back, are named with the fix; a channel's history is no exception.
func TestMemoryHistoryTrouble(t *testing.T) {
	data, state, env := channelFixture(t)
	// A kept version whose text no longer matches its checksum.
	vs, err := filepath.Glob(filepath.Join(state, "history", chanKey, "facts/decisions.md", "*.md"))
	if err != nil || len(vs) != 2 {
		t.Fatalf("kept versions: %v %v", vs, err)
	}
	// The older: ids of versions kept in the same millisecond get -0002, -0003…
	slices.SortFunc(vs, func(a, b string) int { return len(a) - len(b) })
	putFile(t, vs[0], "tampered")
	r := cli(t, env, "memory", "history", chanKey, "facts/decisions.md")
	if lines := strings.Split(r.stdout, "\n"); r.code != 0 || len(lines) < 3 || !strings.HasSuffix(lines[1], "(earlier version unreadable)") ||
		!strings.Contains(lines[2], "(unreadable: history: facts/decisions.md of #slack-T01-C02, version ") {
		t.Errorf("history with a tampered version: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The history folder is a file.
	if err := os.RemoveAll(filepath.Join(state, "history")); err != nil {
		t.Fatal(err)
	}
	putFile(t, filepath.Join(state, "history"), "not a folder")
	fix := "; the history is kept in " + filepath.Join(state, "history") + ": make that a folder mnemo may write, or set state.dir\n"
	cli(t, env, "memory", "history", chanKey).want(t, 1, "", fix)
	cli(t, env, "memory", "restore", chanKey, "facts/decisions.md", "--at", "2026-01-02").want(t, 1, "", fix)
	tmp := t.TempDir()
	editor := filepath.Join(tmp, "editor.sh")
	putFile(t, editor, "#!/bin/sh\nsed -i 's/Tuesdays/Fridays/' \"$1\"\n")
	if err := os.Chmod(editor, 0o700); err != nil {
		t.Fatal(err)
	}
	env["EDITOR"], env["TMPDIR"] = editor, tmp
	cli(t, env, "memory", "edit", chanKey, "facts/decisions.md").want(t, 0, "", "mnemo: saved, but the history could not keep it: history: |"+fix+"mnemo: saved facts/decisions.md of #slack-T01-C02")
	if b, _ := os.ReadFile(filepath.Join(data, chanKey, "facts/decisions.md")); !strings.Contains(string(b), "Fridays") {
		t.Errorf("edit without a history: %q", b)
	}
}

// A channel forgotten while turns said there wait to be reflected: the
// forget detaches the channel from them (offline, in the journal), so the
// next start reflects each person's words into their own shared files and
// never writes the forgotten memory back; the report says so.
func TestForgetChannelDetachesJournaledTurns(t *testing.T) {
	data, state, env := channelFixture(t)
	journal := filepath.Join(state, "reflector", "alice.jsonl")
	line := `{"user":"alice","userText":"we ship on Friday","time":"2026-01-02T09:00:00Z","channel":true,"channelKey":"` + chanKey + `"}` + "\n"
	other := `{"user":"alice","userText":"B's budget","time":"2026-01-02T09:01:00Z","channel":true,"channelKey":"#discord-42"}` + "\n"
	putFile(t, journal, line+other)
	cli(t, env, "memory", "forget", chanKey, "--yes").want(t, 0,
		"deleted all memory of channel #slack-T01-C02: the folder "+data+"/#slack-T01-C02 and its 2 memory files; also detached the channel from 1 turn waiting to be reflected\n", "")
	got, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), chanKey) || !strings.Contains(string(got), "we ship on Friday") || !strings.Contains(string(got), `"channel":true`) ||
		!strings.HasSuffix(string(got), other) {
		t.Errorf("the journal after the channel's forget:\n%s", got)
	}
}

// A new file's template in memory edit: a shared month's is dated in its
// month and marked shared; a plain one is private (no line).
func TestNewFileTextShared(t *testing.T) {
	for p, want := range map[string][]string{
		"episodes/2026-03.shared.md": {"# Episodes of 2026-03", "- Date: 2026-03-01", "> Visibility: shared"},
		"episodes/2026-03.md":        {"# Episodes of 2026-03", "- Date: 2026-03-01"},
		"facts/team.shared.md":       {"# Title", "> Visibility: shared"},
		"facts/team.md":              {"# Title"},
	} {
		got := newFileText(p)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("newFileText(%s) lacks %q:\n%s", p, w, got)
			}
		}
		if memory.IsShared(got) != memory.IsSharedName(p) || strings.Contains(got, ".shared-") {
			t.Errorf("newFileText(%s):\n%s", p, got)
		}
	}
}
