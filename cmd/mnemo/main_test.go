package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// run is the whole program but for the exit, as main's runProcess runs it
// (runWith), with a map, buffers and stopOn(ctx) in place of the process.
func run(sig signals, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runWith(sig, args, cliEnv{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr})
}

// stopOn is signals with ctx as the first stage and no second stage.
func stopOn(ctx context.Context) signals { return signals{stop: ctx} }

// cliResult is what one run of the command line produced.
type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs the command line the way main does, with env as the whole
// environment and nothing on stdin.
func cli(t *testing.T, env map[string]string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	cmds := commandTable()
	maps.Copy(cmds, stubs)
	err := runWith(stopOn(context.Background()), args, cliEnv{getenv: func(k string) string { return env[k] },
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, commands: cmds})
	code := exitCode(err, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

// want fails unless r has the exit code and its stdout and stderr contain
// the given parts ("" checks nothing; stderr parts are separated by "|").
func (r cliResult) want(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, stdout) {
		t.Errorf("stdout does not contain %q:\n%s", stdout, r.stdout)
	}
	for _, part := range strings.Split(stderr, "|") {
		if !strings.Contains(r.stderr, part) {
			t.Errorf("stderr does not contain %q:\n%s", part, r.stderr)
		}
	}
}

// inTempDir runs the test in an empty working directory, so that no
// ./mnemo.yaml is found unless the test writes one.
func inTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// fakeCommand stands in for chat or serve and records how it was called.
type fakeCommand struct {
	calls int
	env   *cliEnv
	cfg   *config.Config
	user  string // its --user flag
	args  []string
	err   error
}

// flags defines a --user flag, as chat has.
func (f *fakeCommand) flags(fs *flag.FlagSet) (runner, string) {
	user := fs.String("user", "", "")
	return func(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
		f.user = *user
		return f.run(ctx, env, cfg, args)
	}, ""
}

func (f *fakeCommand) run(_ context.Context, env *cliEnv, cfg *config.Config, args []string) error {
	f.calls++
	f.env, f.cfg, f.args = env, cfg, args
	env.logger.Info("fake command ran")
	env.logger.Debug("fake debug line")
	return f.err
}

// stubs stand in for subcommands in cli (see stubCommand).
var stubs = map[string]command{}

// stubCommand replaces a subcommand for the duration of the test.
func stubCommand(t *testing.T, name string) *fakeCommand {
	t.Helper()
	f := &fakeCommand{}
	stubs[name] = command{flags: f.flags}
	t.Cleanup(func() { delete(stubs, name) })
	return f
}

func TestHelp(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	inTempDir(t)
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}, {"--config", "missing.yaml", "--help"}} {
		r := cli(t, nil, args...)
		r.want(t, 0, "Usage: mnemo [global flags] COMMAND", "")
		if r.stdout != usageText || r.stderr != "" {
			t.Errorf("%q: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
	// Every command's own help, the same by "help CMD" and "CMD --help";
	// golden files in testdata/help (go test -run TestHelp -update).
	for key := range commandHelp {
		words := strings.Fields(key)
		golden := filepath.Join(wd, "testdata", "help", strings.ReplaceAll(key, " ", "_")+".txt")
		r := cli(t, nil, append([]string{"help"}, words...)...)
		if *updateGolden {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			os.WriteFile(golden, []byte(r.stdout), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if r.code != 0 || r.stdout != string(want) || !strings.Contains(r.stdout, "Example:") {
			t.Errorf("mnemo help %s: %d\n%s\nwant:\n%s", key, r.code, r.stdout, want)
		}
		// The list names every command that has its own help ("memory"
		// is the group: its subcommands are listed; access's share a line).
		if !listed(usageText, words) {
			t.Errorf("mnemo help does not list %q", key)
		}
		if key == "help" {
			continue // "help --help" is the list
		}
		if r2 := cli(t, nil, append(words, "--help")...); r2.code != 0 || r2.stdout != string(want) {
			t.Errorf("mnemo %s --help: %d %q", key, r2.code, r2.stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chta"}, `mnemo: unknown command "chta"; did you mean "chat"? (mnemo help lists the commands)`},
		{[]string{"help", "chta"}, `did you mean "chat"?`},
		{[]string{"bogus", "--help"}, `mnemo: unknown command "bogus"`},
		{[]string{"memory", "lss", "alice"}, `mnemo: unknown memory subcommand "lss"; did you mean "ls"? (mnemo help memory)`},
		{[]string{"help", "memory", "hist"}, `did you mean "history"?`},
		{[]string{"help", "memory", "zzz"}, `unknown memory subcommand "zzz"; use one of users, ls`},
	} {
		cli(t, nil, tc.args...).want(t, 2, "", tc.want)
	}
}

// listed reports whether usage, mnemo help's list, has a line for the
// command words: "memory ls" on its own line, "access ls" on the line
// "access ls|allow|revoke|approve", "memory" as the group of its lines.
func listed(usage string, words []string) bool {
	for _, line := range strings.Split(usage, "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "  ") || len(f) < len(words) || f[0] != words[0] {
			continue
		}
		if len(words) == 1 || slices.Contains(strings.Split(f[1], "|"), words[1]) {
			return true
		}
	}
	return false
}

func TestUsageErrors(t *testing.T) {
	inTempDir(t)
	for _, tc := range []struct {
		args      []string
		stderr    string
		withUsage bool
	}{
		{nil, "mnemo: no command given\n", true},
		{[]string{"bogus"}, `mnemo: unknown command "bogus"`, true},
		{[]string{"--bogus", "memory", "users"}, "mnemo: unknown flag --bogus; the global flags are --config, --log-format, --listen and --help", false},
		{[]string{"--log-format"}, "mnemo: flag --log-format needs a value", false},
		{[]string{"memory", "users", "--config"}, "mnemo: flag --config needs a value", false},
		{[]string{"memory", "users", "--listen"}, "mnemo: flag --listen needs a value", false},
		{[]string{"version", "now"}, "mnemo: version takes no arguments", false},
		{[]string{"version", "--short"}, "mnemo: version: unknown flag --short", false},
		{[]string{"--", "chat"}, "mnemo: unknown flag --;", false},
		// A typo of a flag gets the flag meant, as a typo of a command does.
		{[]string{"chat", "--usr", "bob"}, "mnemo: chat: unknown flag --usr; did you mean --user?\n", false},
		{[]string{"chat", "--usr=bob"}, "mnemo: chat: unknown flag --usr; did you mean --user?\n", false},
		{[]string{"--confg", "x", "chat"}, "mnemo: unknown flag --confg; did you mean --config?; the global flags are", false},
		{[]string{"memory", "forget", "bob", "--ye"}, "did you mean --yes?", false},
	} {
		r := cli(t, nil, tc.args...)
		r.want(t, 2, "", tc.stderr)
		if r.stdout != "" {
			t.Errorf("%q: stdout %q", tc.args, r.stdout)
		}
		if got := strings.Contains(r.stderr, usageText); got != tc.withUsage {
			t.Errorf("%q: usage text shown = %v, want %v", tc.args, got, tc.withUsage)
		}
	}
}

func TestVersion(t *testing.T) {
	inTempDir(t)
	r := cli(t, nil, "version")
	r.want(t, 0, "mnemo ", "")
	if !strings.HasSuffix(r.stdout, " "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n") || r.stderr != "" {
		t.Errorf("version: %q %q", r.stdout, r.stderr)
	}
	// Global flags are taken out; a broken config does not matter.
	cli(t, nil, "--config", "missing.yaml", "version").want(t, 0, "mnemo ", "")

	tail := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		set, built string
		info       *debug.BuildInfo
		want       string
	}{
		{"", "", nil, "mnemo devel"},
		{"", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "mnemo devel"},
		{"", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "mnemo v0.3.1"},
		{"v1.0.0", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "mnemo v1.0.0"},
		{"", "", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"}}}, "mnemo devel (0123456789ab, modified)"},
		{"v1.0.0", "2026-11-25", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}, {Key: "GOOS", Value: "linux"}}}, "mnemo v1.0.0 (abc, built 2026-11-25)"},
		{"v1.0.0", "2026-11-25", nil, "mnemo v1.0.0 (built 2026-11-25)"},
	} {
		if got := versionString(tc.set, tc.built, tc.info); got != tc.want+tail {
			t.Errorf("versionString(%q, %q, %+v) = %q, want %q", tc.set, tc.built, tc.info, got, tc.want+tail)
		}
	}
}

func TestGlobalFlagPositions(t *testing.T) {
	dir := inTempDir(t)
	cfgFile := filepath.Join(dir, "custom.yaml")
	if err := os.WriteFile(cfgFile, []byte("llm:\n  model: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args      []string
		wantArgs  []string
		wantUser  string
		model     string
		format    string
		listen    string
		cfgSource string
	}{
		{[]string{"chat"}, nil, "", "gpt-4o-mini", "text", "127.0.0.1:9090", ""},
		{[]string{"--config", cfgFile, "chat", "--user", "bob"}, nil, "bob", "from-file", "text", "127.0.0.1:9090", cfgFile},
		{[]string{"chat", "--config=" + cfgFile, "--user", "bob"}, nil, "bob", "from-file", "text", "127.0.0.1:9090", cfgFile},
		{[]string{"chat", "--user=bob", "-config", cfgFile}, nil, "bob", "from-file", "text", "127.0.0.1:9090", cfgFile},
		{[]string{"--log-format=json", "chat", "--user", "bob", "--listen", ":8080"}, nil, "bob", "gpt-4o-mini", "json", ":8080", ""},
		{[]string{"-log-format", "json", "--listen=[::1]:0", "chat", "x"}, []string{"x"}, "", "gpt-4o-mini", "json", "[::1]:0", ""},
		{[]string{"chat", "--", "--config", "x", "-h"}, []string{"--config", "x", "-h"}, "", "gpt-4o-mini", "text", "127.0.0.1:9090", ""},
		{[]string{"chat", "-", "--config=" + cfgFile, "x", "--user", "bob"}, []string{"-", "x"}, "bob", "from-file", "text", "127.0.0.1:9090", cfgFile},
		{[]string{"chat", "--user", "--config=" + cfgFile}, nil, "--config=" + cfgFile, "gpt-4o-mini", "text", "127.0.0.1:9090", ""}, // a flag's value is the next argument
	} {
		f := stubCommand(t, "chat")
		r := cli(t, map[string]string{"MNEMO_DATA_DIR": dir}, tc.args...)
		r.want(t, 0, "", "fake command ran")
		if f.calls != 1 {
			t.Fatalf("%q: chat called %d times", tc.args, f.calls)
		}
		if f.user != tc.wantUser {
			t.Errorf("%q: chat got --user %q, want %q", tc.args, f.user, tc.wantUser)
		}
		if fmt.Sprint(f.args) != fmt.Sprint(tc.wantArgs) {
			t.Errorf("%q: chat got args %q, want %q", tc.args, f.args, tc.wantArgs)
		}
		c := f.cfg
		if c.LLM.Model != tc.model || c.Log.Format != tc.format || c.Server.Listen != tc.listen || c.Memory.DataDir != dir {
			t.Errorf("%q: config model=%s format=%s listen=%s dataDir=%s", tc.args, c.LLM.Model, c.Log.Format, c.Server.Listen, c.Memory.DataDir)
		}
		if f.env.configFile != tc.cfgSource {
			t.Errorf("%q: configFile = %q, want %q", tc.args, f.env.configFile, tc.cfgSource)
		}
		if json := strings.HasPrefix(r.stderr, "{"); json != (tc.format == "json") {
			t.Errorf("%q: log format %s, stderr %q", tc.args, tc.format, r.stderr)
		}
		if f.env.getenv("MNEMO_DATA_DIR") != dir || f.env.stdin == nil || f.env.stdout == nil || f.env.stderr == nil {
			t.Errorf("%q: env not filled in: %+v", tc.args, f.env)
		}
	}
}

func TestServeAndChatDispatch(t *testing.T) {
	inTempDir(t)
	serve := stubCommand(t, "serve")
	cli(t, nil, "serve", "--listen", ":9999").want(t, 0, "", "")
	if serve.calls != 1 || serve.cfg.Server.Listen != ":9999" || len(serve.args) != 0 {
		t.Errorf("serve: %+v", serve)
	}
	// An error from a subcommand is exit 1; a usage error keeps its 2; no
	// LLM configured is 2.
	chat := stubCommand(t, "chat")
	chat.err = errors.New("the model went away")
	cli(t, nil, "chat").want(t, 1, "", "mnemo: the model went away\n")
	chat.err = usageError("chat: unknown flag --x")
	cli(t, nil, "chat").want(t, 2, "", "mnemo: chat: unknown flag --x\n")
	chat.err = fmt.Errorf("start: %w: set OPENAI_API_KEY or OPENAI_BASE_URL", config.ErrNoLLM)
	cli(t, nil, "chat").want(t, 2, "", "mnemo: start: no LLM configured: set OPENAI_API_KEY")
}

func TestConfigFiles(t *testing.T) {
	dir := inTempDir(t)
	data := filepath.Join(dir, "from-file")
	if err := os.MkdirAll(filepath.Join(data, "alice"), 0o700); err != nil {
		t.Fatal(err)
	}
	fromEnv := filepath.Join(dir, "from-env")
	if err := os.MkdirAll(filepath.Join(fromEnv, "bob"), 0o700); err != nil {
		t.Fatal(err)
	}

	// No ./mnemo.yaml: defaults (data/memory, which does not exist here).
	cli(t, nil, "memory", "users").want(t, 1, "", "mnemo: memory folder data/memory does not exist")
	f := stubCommand(t, "chat")
	cli(t, nil, "chat").want(t, 0, "", "")
	if f.env.configFile != "" {
		t.Errorf("configFile = %q with no file", f.env.configFile)
	}

	// ./mnemo.yaml is read when present; the environment wins over it.
	if err := os.WriteFile("mnemo.yaml", []byte("memory:\n  dataDir: "+data+"\nlog:\n  level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli(t, nil, "memory", "users").want(t, 0, "alice\n", "")
	cli(t, map[string]string{"MNEMO_DATA_DIR": fromEnv}, "memory", "users").want(t, 0, "bob\n", "")
	cli(t, nil, "chat").want(t, 0, "", "fake debug line")
	if f.env.configFile != config.DefaultFile {
		t.Errorf("configFile = %q, want %s", f.env.configFile, config.DefaultFile)
	}

	// An explicit file must exist; it replaces ./mnemo.yaml.
	cli(t, nil, "--config", "nope.yaml", "memory", "users").want(t, 2, "", "mnemo: config file nope.yaml does not exist")
	cli(t, nil, "memory", "users", "--config=").want(t, 2, "", "mnemo: --config needs a file name")
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte("memory:\n  dataDir: "+fromEnv+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli(t, nil, "memory", "--config", other, "users").want(t, 0, "bob\n", "")

	// Bad configuration: exit 2, naming the key; flags are checked too.
	if err := os.WriteFile(other, []byte("memory:\n  datadir: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli(t, nil, "memory", "--config", other, "users").want(t, 2, "", "mnemo: "+other+":2: |datadir|dataDir")
	cli(t, nil, "--log-format", "xml", "memory", "users").want(t, 2, "", `mnemo: --log-format: "xml" is not one of text, json`)
	cli(t, nil, "memory", "users", "--listen", "nowhere").want(t, 2, "", `mnemo: --listen: "nowhere" must be host:port`)
	cli(t, nil, "--log-format", "json", "memory", "users").want(t, 0, "alice\n", "")
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  string
		yes  bool
		user string
		err  string
	}{
		{nil, "[]", false, "", ""},
		{[]string{"a", "--yes", "b"}, "[a b]", true, "", ""},
		{[]string{"--user", "u", "a", "-yes=false", "b", "--user=v"}, "[a b]", false, "v", ""},
		{[]string{"a", "--", "--yes", "-"}, "[a --yes -]", false, "", ""},
		{[]string{"--yes", "--"}, "[]", true, "", ""},
		{[]string{"a", "--nope"}, "", false, "", "test: unknown flag --nope"},
		{[]string{"a", "--user"}, "", false, "", "test: flag --user needs a value"},
		{[]string{"--yes=maybe"}, "", false, "", `test: invalid boolean value "maybe" for -yes`},
	} {
		fs := newFlagSet("test")
		yes := fs.Bool("yes", false, "")
		user := fs.String("user", "", "")
		pos, err := parseArgs(fs, tc.args, "")
		if tc.err != "" {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want usage error %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(pos) != tc.pos || *yes != tc.yes || *user != tc.user {
			t.Errorf("%q: pos %q yes %v user %q err %v", tc.args, pos, *yes, *user, err)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{errors.New("boom"), 1, "mnemo: boom\n"},
		{failure(errors.New("gone")), 1, "mnemo: gone\n"},
		{fmt.Errorf("wrapped: %w", usageError("bad %s", "flag")), 2, "mnemo: wrapped: bad flag\n"},
		{configError(errors.New("mnemo.yaml:3: llm.modle: unknown key\nmnemo.yaml:4: other")), 2, "mnemo: mnemo.yaml:3: llm.modle: unknown key\nmnemo.yaml:4: other\n"},
		{fmt.Errorf("x: %w", config.ErrNoLLM), 2, "mnemo: x: no LLM configured\n"},
		{&exitError{code: 2, err: errors.New("no command given"), usage: true}, 2, "mnemo: no command given\n\n" + usageText},
	} {
		var b bytes.Buffer
		if code := exitCode(tc.err, &b); code != tc.code || b.String() != tc.stderr {
			t.Errorf("exitCode(%v) = %d, %q; want %d, %q", tc.err, code, b.String(), tc.code, tc.stderr)
		}
	}
	if err := failure(fmt.Errorf("open: %w", os.ErrNotExist)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an exitError hides what it wraps: %v", err)
	}
}

// TestMainEntry runs the process as main does, but for the exit.
func TestMainEntry(t *testing.T) {
	inTempDir(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	origArgs, origStdout := os.Args, os.Stdout
	t.Cleanup(func() { os.Args, os.Stdout = origArgs, origStdout })
	code := -1
	os.Stdout = out
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mnemo", "version"}, 0, "mnemo "},
		{[]string{"mnemo", "memory", "users"}, 1, ""},
	} {
		code = -1
		os.Args = tc.args
		if err := out.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := out.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = out
		code = runProcess()
		os.Stderr = stderr
		got, _ := os.ReadFile(out.Name())
		if code != tc.code || !strings.Contains(string(got), tc.want) {
			t.Errorf("main %q: exit %d, output %q", tc.args[1:], code, got)
		}
	}
}
