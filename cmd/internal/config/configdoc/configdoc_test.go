package configdoc

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

var update = flag.Bool("update", false, "rewrite "+reference+" from the code")

// The folders the reference is made from and written to, from this one.
var (
	configDir = ".."
	cmdDir    = filepath.Join("..", "..", "..", "mnemo")
	reference = filepath.Join("..", "..", "..", "mnemo", "CONFIG.md")
)

// TestReference fails when the committed reference is not what the code
// makes; with -update (go generate ./cmd/internal/config) it rewrites it.
func TestReference(t *testing.T) {
	got, err := Generate(configDir, cmdDir)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(reference, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(reference)
	if err != nil {
		t.Fatalf("%v; run `%s`", err, RefreshCommand)
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		n := 0
		for n < min(len(g), len(w)) && g[n] == w[n] {
			n++
		}
		t.Errorf("cmd/mnemo/CONFIG.md is stale (from line %d): the configuration changed; run `%s` and commit the result", n+1, RefreshCommand)
	}
}

// TestEveryKeyAndVariable checks that the reference has a row for every
// key of the config (the schema Load accepts), with its default, and every
// environment variable.
func TestEveryKeyAndVariable(t *testing.T) {
	got, err := Generate(configDir, cmdDir)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	for _, row := range []string{
		"| `llm.baseURL` | string | empty | `OPENAI_BASE_URL` | OpenAI-compatible endpoint.",
		"| `llm.timeout` | duration | `1m` | `MNEMO_LLM_TIMEOUT` |",
		"| `llm.maxRetries` | integer | `3` | `MNEMO_LLM_MAX_RETRIES` |",
		"| `maxReplyChars` | integer | `16000` | `MNEMO_MAX_REPLY_CHARS` |",
		"| `reflector.idle` | duration | `2m` | `MNEMO_REFLECTOR_IDLE` |",
		"| `discord.guildIDs` | list of strings | empty | `MNEMO_DISCORD_GUILD_IDS` |",
		"| `discord.replyMention` | boolean | `false` | `MNEMO_DISCORD_REPLY_MENTION` |",
		"| `identities` | map: name → list of strings | empty | `MNEMO_IDENTITIES` |",
		"| `history.maxAge` | duration | `2160h` | `MNEMO_HISTORY_MAX_AGE` |",
		"| `memory.dataDir` | string | `" + filepath.Join("data", "memory") + "` | `MNEMO_DATA_DIR` |",
		"| `SLACK_BOT_TOKEN` | overrides `slack.botToken` |",
		"| `MNEMO_DISCORD_ALLOW` | overrides `discord.allow`; items separated by commas",
		"| `MNEMO_IDENTITIES` | overrides `identities`; `NAME=ACCOUNT,ACCOUNT` entries separated by semicolons",
		"| `MNEMO_OLLAMA_URL` | Where to look",
		"| `EDITOR` | The editor",
	} {
		if !strings.Contains(text, row) {
			t.Errorf("no row %q in:\n%s", row, text)
		}
	}
	c := config.Default(registry.Platforms()...)
	for _, e := range config.Env(c) {
		if strings.Count(text, "`"+e.Name+"`") < 2 {
			t.Errorf("%s is not in the key's row and the variables' table", e.Name)
		}
	}
	// Every key: each section's keys, from a file that sets them all.
	for _, key := range []string{"llm.reflectorModel", "llm.maxResponseBytes", "memory.writeCap", "state.dir",
		"agent.maxConcurrent", "reflector.factsBudget", "slack.channelMemory", "discord.shardCount",
		"server.listen", "shutdown.grace", "history.keep", "log.level"} {
		if !strings.Contains(text, "| `"+key+"` |") {
			t.Errorf("no row for %s", key)
		}
	}
	keys := len(newSchemaKeys(c)) // the platforms' sections' included
	if vars := len(config.Env(c)) + len(OtherEnv); strings.Count(text, "\n| `") != keys+vars {
		t.Errorf("%d rows, want %d keys and %d variables", strings.Count(text, "\n| `"), keys, vars)
	}
}

// copyDir copies dir's non-test Go files into a new folder, changed by
// edit (file name → text → text).
func copyDir(t *testing.T, dir string, edit func(name, text string) string) string {
	t.Helper()
	out := t.TempDir()
	files, err := sources(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), []byte(edit(filepath.Base(f), string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one with %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	// A key without a doc comment.
	undocumented := copyDir(t, configDir, func(name, text string) string {
		if name != "config.go" {
			return text
		}
		return strings.Replace(text, "// Timeout of one model request, per attempt.\n", "", 1)
	})
	_, err := Generate(undocumented, cmdDir)
	wantErr(t, err, "LLM.Timeout (key llm.timeout) has no doc comment", undocumented)

	// Source that does not parse.
	broken := copyDir(t, configDir, func(name, text string) string { return text })
	os.WriteFile(filepath.Join(broken, "bad.go"), []byte("package config\nfunc {"), 0o644)
	_, err = Generate(broken, cmdDir)
	wantErr(t, err, "doc comments", "bad.go")

	// No sources at all.
	_, err = Generate(t.TempDir(), cmdDir)
	wantErr(t, err, "no Go files")
	_, err = Generate(configDir, t.TempDir())
	wantErr(t, err, "no Go files")

	// A command reads a variable the reference does not describe.
	newVar := copyDir(t, cmdDir, func(name, text string) string {
		if name == "main.go" {
			text += "\nvar _ = func(e *cliEnv) string { return e.getenv(\"MNEMO_NEW_THING\") }\n"
		}
		return text
	})
	_, err = Generate(configDir, newVar)
	wantErr(t, err, "main.go reads the environment variable MNEMO_NEW_THING", "add it to configdoc.OtherEnv")

	// The reference describes a variable no command reads.
	gone := copyDir(t, cmdDir, func(name, text string) string { return strings.ReplaceAll(text, `getenv("TMPDIR")`, `getenv("USER")`) })
	_, err = Generate(configDir, gone)
	wantErr(t, err, "describes TMPDIR, which no command reads any more")

	// A source file that cannot be read (a link to nothing).
	dangling := copyDir(t, cmdDir, func(name, text string) string { return text })
	if err := os.Symlink(filepath.Join(dangling, "missing"), filepath.Join(dangling, "zz.go")); err != nil {
		t.Fatal(err)
	}
	_, err = Generate(configDir, dangling)
	wantErr(t, err, "zz.go")
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90 * time.Second: "90s", 2 * time.Minute: "2m", 2160 * time.Hour: "2160h", 1500 * time.Millisecond: "1.5s",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
	if got := cell("a|b <x> *y* `<z>|*`"); got != "a\\|b &lt;x> \\*y\\* `<z>\\|*`" {
		t.Errorf("cell: %q", got)
	}
}

// Each kind of key says how its variable is written, for CONFIG.md.
func TestEnvSyntax(t *testing.T) {
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[time.Duration](), "a duration with a unit"},
		{reflect.TypeFor[int](), "decimal digits"},
		{reflect.TypeFor[bool](), "`true` or `false`"},
		{reflect.TypeFor[[]string](), "items separated by commas"},
		{reflect.TypeFor[map[string][]string](), "`NAME=ACCOUNT,ACCOUNT` entries separated by semicolons"},
		{reflect.TypeFor[string](), "the value as it is"},
	} {
		if got := envSyntax(tc.t); !strings.Contains(got, tc.want) {
			t.Errorf("envSyntax(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

// newSchemaKeys are c's keys (not the sections themselves): one row each.
func newSchemaKeys(c *config.Config) []string {
	var keys []string
	for _, e := range config.Env(c) {
		keys = append(keys, e.Key)
	}
	return keys
}

// A platform's section is documented from its package's folder, found
// from the module root above the working directory: outside the module,
// Generate says it cannot read them.
func TestSectionDocsOutsideTheModule(t *testing.T) {
	if d := packageDir("github.com/mnemo-agent/mnemo/bots/slack"); !strings.HasSuffix(d, filepath.Join("bots", "slack")) {
		t.Errorf("packageDir(bots/slack) = %q", d)
	}
	abs, err := filepath.Abs(configDir)
	if err != nil {
		t.Fatal(err)
	}
	cmdAbs, err := filepath.Abs(cmdDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if d := packageDir("github.com/mnemo-agent/mnemo/bots/slack"); d != "" {
		t.Errorf("outside the module, packageDir = %q", d)
	}
	_, err = Generate(abs, cmdAbs)
	wantErr(t, err, "no Go files")
}
