package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/bots/slack"
)

// platforms are the registered chat platforms, whose sections a file has.
var platforms = registry.Platforms()

func slackOf(c *Config) *slack.Section     { return c.Section("slack").(*slack.Section) }
func discordOf(c *Config) *discord.Section { return c.Section("discord").(*discord.Section) }

// envMap returns a getenv reading from m.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

var noEnv = envMap(nil)

// loadString loads YAML text as if read from a file called mnemo.yaml.
func loadString(yamlText string, env map[string]string) (*Config, error) {
	return Parse("mnemo.yaml", []byte(yamlText), envMap(env), platforms...)
}

// wantErr fails unless err is non-nil and contains every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not contain %q:\n%v", p, err)
		}
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultConfig(t *testing.T) {
	c := Default(platforms...)
	checks := []struct {
		name      string
		got, want any
	}{
		{"llm.baseURL", c.LLM.BaseURL, ""},
		{"llm.apiKey", c.LLM.APIKey, ""},
		{"llm.model", c.LLM.Model, "gpt-4o-mini"},
		{"llm.reflectorModel", c.LLM.ReflectorModel, "gpt-4o-mini"},
		{"llm.timeout", c.LLM.Timeout, 60 * time.Second},
		{"llm.maxRetries", c.LLM.MaxRetries, 3},
		{"llm.maxResponseBytes", c.LLM.MaxResponseBytes, 4 << 20},
		{"memory.dataDir", c.Memory.DataDir, filepath.Join("data", "memory")},
		{"memory.indexBudget", c.Memory.IndexBudget, 4096},
		{"memory.searchBudget", c.Memory.SearchBudget, 4096},
		{"memory.readCap", c.Memory.ReadCap, 65536},
		{"memory.writeCap", c.Memory.WriteCap, 32768},
		{"memory.rollupAfter", c.Memory.RollupAfter, 3},
		{"state.dir", c.State.Dir, filepath.Join("data", "state")},
		{"agent.maxSteps", c.Agent.MaxSteps, 8},
		{"agent.historyTurns", c.Agent.HistoryTurns, 10},
		{"agent.maxConcurrent", c.Agent.MaxConcurrent, 8},
		{"maxReplyChars", c.MaxReplyChars, 16000},
		{"attachments.maxBytes", c.Attachments.MaxBytes, 262144},
		{"reflector.idle", c.Reflector.Idle, 2 * time.Minute},
		{"reflector.maxTurns", c.Reflector.MaxTurns, 20},
		{"reflector.maxSteps", c.Reflector.MaxSteps, 12},
		{"reflector.factsBudget", c.Reflector.FactsBudget, 16384},
		{"slack.botToken", slackOf(c).BotToken, ""},
		{"slack.appToken", slackOf(c).AppToken, ""},
		{"slack.apiURL", slackOf(c).APIURL, "https://slack.com/api/"},
		{"slack.channelMemory", slackOf(c).ChannelMemory, "read"},
		{"slack.access", slackOf(c).Access, "open"},
		{"slack.allow", slackOf(c).Allow == nil, true},
		{"discord.access", discordOf(c).Access, "open"},
		{"discord.allow", discordOf(c).Allow == nil, true},
		{"discord.botToken", discordOf(c).BotToken, ""},
		{"discord.apiURL", discordOf(c).APIURL, "https://discord.com/"},
		{"discord.channelMemory", discordOf(c).ChannelMemory, "read"},
		{"discord.guildIDs", discordOf(c).GuildIDs == nil, true},
		{"discord.shardID", discordOf(c).ShardID, 0},
		{"discord.shardCount", discordOf(c).ShardCount, 1},
		{"discord.replyMention", discordOf(c).ReplyMention, false},
		{"identities", len(c.Identities), 0},
		{"limits.messagesPerMinute", c.Limits.MessagesPerMinute, 20},
		{"limits.tokensPerDay", c.Limits.TokensPerDay, 200000},
		{"limits.totalTokensPerDay", c.Limits.TotalTokensPerDay, 0},
		{"server.listen", c.Server.Listen, "127.0.0.1:9090"},
		{"shutdown.grace", c.Shutdown.Grace, 20 * time.Second},
		{"log.format", c.Log.Format, "text"},
		{"log.level", c.Log.Level, "info"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if slackOf(c).BotToken != "" || slackOf(c).AppToken != "" || discordOf(c).BotToken != "" {
		t.Error("adapters enabled without tokens")
	}
}

func TestLoadConfigFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)

	// No ./mnemo.yaml and no --config: defaults only.
	c, err := Load("", false, noEnv, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default(platforms...)) {
		t.Errorf("got %+v, want defaults", c)
	}
	// A default path given but absent, not explicit: defaults too.
	if _, err := Load("elsewhere.yaml", false, noEnv, platforms...); err != nil {
		t.Fatal(err)
	}

	// --config naming a missing file.
	_, err = Load("missing.yaml", true, noEnv, platforms...)
	wantErr(t, err, "missing.yaml", "does not exist; write one with mnemo --config missing.yaml init")
	_, err = Load("", true, noEnv, platforms...)
	wantErr(t, err, "--config needs a file name")

	// ./mnemo.yaml present: read without --config.
	writeFile(t, dir, "mnemo.yaml", "llm:\n  model: from-cwd\n")
	c, err = Load("", false, noEnv, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.Model != "from-cwd" {
		t.Errorf("model = %q, want from-cwd", c.LLM.Model)
	}

	// Present but unreadable as a file.
	if err := os.Mkdir(filepath.Join(dir, "adir.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = Load("adir.yaml", false, noEnv, platforms...)
	wantErr(t, err, "adir.yaml")

	// As large as allowed, then one byte larger.
	if _, err := Load(writeFile(t, dir, "max.yaml", "# "+strings.Repeat("x", maxFileSize-3)+"\n"), true, noEnv, platforms...); err != nil {
		t.Errorf("a file of %d bytes: %v", maxFileSize, err)
	}
	big := writeFile(t, dir, "big.yaml", "# "+strings.Repeat("x", maxFileSize-2)+"\n")
	_, err = Load(big, true, noEnv, platforms...)
	wantErr(t, err, "big.yaml", "larger than")

	// Errors name the file as given.
	bad := writeFile(t, dir, "bad.yaml", "memory:\n  datadir: x\n")
	_, err = Load(bad, true, noEnv, platforms...)
	wantErr(t, err, bad+`:2: unknown key "memory.datadir" (did you mean "memory.dataDir"?)`)

	// nil getenv means os.Getenv.
	t.Setenv("MNEMO_MODEL", "from-os-env")
	c, err = Load("", false, nil, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.Model != "from-os-env" {
		t.Errorf("model = %q, want from-os-env", c.LLM.Model)
	}
}

func TestEmptyFiles(t *testing.T) {
	for _, text := range []string{"", "\n", "# only a comment\n", "---\n", "~\n", "null\n", "llm:\n", "llm: ~\nmemory:\n  dataDir:\n", "llm:\n  model: \"\"\n"} {
		c, err := loadString(text, nil)
		if err != nil {
			t.Errorf("%q: %v", text, err)
			continue
		}
		if !reflect.DeepEqual(c, Default(platforms...)) {
			t.Errorf("%q: got %+v, want defaults", text, c)
		}
	}
}

func TestFixtureFull(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "full.yaml"), true, noEnv, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		LLM: LLM{
			BaseURL: "http://llm.internal:8000/v1", APIKey: "sk-file-secret-1234", Model: "llama3.2",
			ReflectorModel: "qwen2.5", Timeout: 90 * time.Second, MaxRetries: 0,
			MaxResponseBytes: 4194304, // not in the file: the default
			Stream:           false,   // the file turns it off
		},
		Memory:        Memory{DataDir: "/srv/mnemo/memory", IndexBudget: 8192, SearchBudget: 4096, ReadCap: 131072, WriteCap: 65536, RollupAfter: 6}, // searchBudget: the default
		State:         State{Dir: "/srv/mnemo/state"},
		Agent:         Agent{MaxSteps: 5, HistoryTurns: 0, MaxConcurrent: 16},
		MaxReplyChars: 16000, // not in the file: the default
		Reflector:     Reflector{Idle: 5 * time.Minute, MaxTurns: 40, MaxSteps: 6, FactsBudget: 1},
		platforms: []platformSection{
			{"slack", &slack.Section{
				BotToken: "xoxb-file-bot-secret", AppToken: "xapp-file-app-secret",
				APIURL: "http://slack.internal/api/", ChannelMemory: "full", Access: "pairing", Allow: []string{"T01ABC", "S02DEF"},
			}},
			{"discord", &discord.Section{
				BotToken: "discord.file.secret", APIURL: "http://discord.internal/", ChannelMemory: "off",
				GuildIDs: []string{"80351110224678912", "18446744073709551615"}, ShardID: 2, ShardCount: 3, ReplyMention: true,
				Access: "allowlist", Allow: []string{"role:41771983423143937"},
			}},
		},
		Identities: map[string][]string{
			"zhangsan": {"slack:T01ABC/U02DEF", "discord:80351110224678912"},
			"li.si":    {"discord:1234"},
		},
		Limits:      Limits{MessagesPerMinute: 5, TokensPerDay: 0, TotalTokensPerDay: 5_000_000},
		Attachments: Attachments{MaxBytes: 256 << 10}, // not in the file: the default
		Server:      Server{Listen: ":0"},
		Shutdown:    Shutdown{Grace: 45 * time.Second},
		History:     History{Keep: 50, MaxAge: 90 * 24 * time.Hour}, // not in the file: the defaults
		Log:         Log{Format: "json", Level: "debug"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%#v\nwant\n%#v", *c, *want)
		gb, _ := yaml.Marshal(c.view().Interface())
		wb, _ := yaml.Marshal(want.view().Interface())
		t.Errorf("got\n%s\nwant\n%s", gb, wb)
	}
	if slackOf(c).BotToken == "" || slackOf(c).AppToken == "" || discordOf(c).BotToken == "" || c.Section("slack") != any(slackOf(c)) || c.Section("discord") == nil || c.Section("nope") != nil || c.Section("") != nil {
		t.Error("adapters not enabled with tokens")
	}
	idx := c.IdentityIndex()
	wantIdx := map[string]string{
		"slack:T01ABC/U02DEF":       "zhangsan",
		"discord:80351110224678912": "zhangsan",
		"discord:1234":              "li.si",
	}
	if !reflect.DeepEqual(idx, wantIdx) {
		t.Errorf("IdentityIndex = %v, want %v", idx, wantIdx)
	}
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file string
		want []string // "" = must load
	}{
		{"anchors.yaml", nil},
		{"bom.yaml", nil},
		{"typo.yaml", []string{
			`typo.yaml:2: unknown key "llm.Model" (did you mean "llm.model"?)`,
			`typo.yaml:4: unknown key "memory.datadir" (did you mean "memory.dataDir"?)`,
			`typo.yaml:6: reflector.maxTurns: expected an integer, got "lots"`,
		}},
		{"syntax.yaml", []string{"syntax.yaml:3: YAML syntax error: mapping values are not allowed in this context"}},
		{"tabs.yaml", []string{"tabs.yaml:2: YAML syntax error: found character that cannot start any token (a tab: YAML is indented with spaces only)"}},
		{"two-docs.yaml", []string{"two-docs.yaml:3: a second YAML document starts here"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			c, err := Load(path, true, noEnv, platforms...)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, tt.want...)
			if c != nil {
				t.Error("config returned with an error")
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tt.want) {
				t.Errorf("%d problems reported, want %d:\n%v", n, len(tt.want), err)
			}
		})
	}

	c, err := Load(filepath.Join("testdata", "anchors.yaml"), true, noEnv, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.ReflectorModel != "llama3.2" || discordOf(c).ChannelMemory != "full" {
		t.Errorf("aliases not followed: %+v", c)
	}
	c, err = Load(filepath.Join("testdata", "bom.yaml"), true, noEnv, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level != "warn" {
		t.Errorf("log.level = %q, want warn", c.Log.Level)
	}
}

// TestDecodeErrors covers every problem found while reading the YAML.
func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"wrong case", "memory:\n  datadir: x\n", []string{`mnemo.yaml:2: unknown key "memory.datadir" (did you mean "memory.dataDir"?)`}},
		{"capitalised", "llm:\n  Model: x\n", []string{`mnemo.yaml:2: unknown key "llm.Model" (did you mean "llm.model"?)`}},
		{"typo", "llm:\n  modle: x\n", []string{`mnemo.yaml:2: unknown key "llm.modle" (did you mean "llm.model"?)`}},
		{"section typo", "slak:\n  botToken: x\n", []string{`mnemo.yaml:1: unknown key "slak" (did you mean "slack"?)`}},
		{"wrong level", "dataDir: x\n", []string{`mnemo.yaml:1: unknown key "dataDir" (did you mean "memory.dataDir"?)`}},
		{"wrong level, wrong case", "llm:\n  DATADIR: x\n", []string{`unknown key "llm.DATADIR" (did you mean "memory.dataDir"?)`}},
		{"ambiguous level", "maxSteps: 3\n", []string{`unknown key "maxSteps" (did you mean "agent.maxSteps" or "reflector.maxSteps"?)`}},
		{"flat key", "memory.dataDir: x\n", []string{`unknown key "memory.dataDir" (did you mean "memory.dataDir"?; write it nested, one section per level)`}},
		{"unknown no hint", "llm:\n  frobnicate: 1\n", []string{`mnemo.yaml:2: unknown key "llm.frobnicate"` + "\n"}},
		{"int word", "reflector:\n  maxTurns: lots\n", []string{`mnemo.yaml:2: reflector.maxTurns: expected an integer, got "lots"`}},
		{"int list", "reflector:\n  maxTurns: [1]\n", []string{`mnemo.yaml:2: reflector.maxTurns: expected an integer, got a list`}},
		{"int float", "llm:\n  maxRetries: 1.5\n", []string{`llm.maxRetries: expected an integer, got "1.5"`}},
		{"int bad tag", "llm:\n  maxRetries: !!int x\n", []string{`llm.maxRetries: expected an integer, got "x"`}},
		{"int bool", "llm:\n  maxRetries: true\n", []string{`llm.maxRetries: expected an integer, got "true"`}},
		{"duration no unit", "reflector:\n  idle: 5\n", []string{`mnemo.yaml:2: reflector.idle: 5 has no unit; write it as a duration such as "5s" or "2m"`}},
		{"duration word", "reflector:\n  idle: soon\n", []string{`reflector.idle: "soon" is not a duration; use a number with a unit`}},
		{"duration map", "llm:\n  timeout: {s: 1}\n", []string{`llm.timeout: expected a duration such as "90s" or "2m", got a mapping`}},
		{"string list", "llm:\n  model: [a]\n", []string{`mnemo.yaml:2: llm.model: expected a string, got a list`}},
		{"section scalar", "llm: xoxb-1234\n", []string{`mnemo.yaml:1: llm: expected a section of keys (a mapping), got a single value`}},
		{"top level list", "- a\n", []string{`mnemo.yaml:1: the top level must be a mapping of sections`}},
		{"top level text of several lines", "0\n\n\n0", []string{"mnemo.yaml:1: the top level must be a mapping of sections (llm:, memory:, slack:, ...), got a single value\n"}},
		{"top level scalar", "hello\n", []string{`the top level must be a mapping of sections (llm:, memory:, slack:, ...), got a single value`}},
		{"duplicate key", "llm:\n  model: a\n  model: b\n", []string{`mnemo.yaml:3: duplicate key "llm.model" (already set at line 2)`}},
		{"duplicate section", "llm: {}\nllm: {}\n", []string{`mnemo.yaml:2: duplicate key "llm" (already set at line 1)`}},
		{"syntax with line", "llm:\n  model: a\n   timeout: 60s\n", []string{"mnemo.yaml:3: YAML syntax error: mapping values are not allowed in this context"}},
		{"syntax unclosed", "llm: {model: [\n", []string{"mnemo.yaml:", "YAML syntax error: "}},
		{"syntax without line", "log:\n  level: info\nllm: a: b\n", []string{"mnemo.yaml:3: YAML syntax error: mapping values are not allowed in this context"}},
		// yaml.v3 says line 2 and line 1: the start of the block, not the mistake.
		{"indented too little", "llm:\n  model: a\n timeout: 3s\n", []string{"mnemo.yaml:3: YAML syntax error: did not find expected key\n"}},
		{"list item in a section", "llm:\n  model: a\n  - x\n", []string{"mnemo.yaml:3: YAML syntax error: did not find expected key\n"}},
		{"syntax on a last line without a newline", "llm: [", []string{"mnemo.yaml:1: YAML syntax error: "}},
		{"duplicate key in a second section", "slack:\n  apiURL: a\ndiscord:\n  apiURL: b\n  apiURL: c\n",
			[]string{`mnemo.yaml:5: duplicate key "discord.apiURL" (already set at line 4)` + "\n"}},
		{"as near two keys", "lom: {}\n", []string{`mnemo.yaml:1: unknown key "lom" (did you mean "llm"?)`}}, // llm and log: the first by name
		{"short key", "state:\n  dr: x\n", []string{`mnemo.yaml:2: unknown key "state.dr" (did you mean "state.dir"?)`}},
		{"too far for a hint", "reflector:\n  iddl: 1m\n", []string{`mnemo.yaml:2: unknown key "reflector.iddl"` + "\n"}},
		{"duration word of 60", "reflector:\n  idle: " + strings.Repeat("x", 60) + "\n", []string{`reflector.idle: "` + strings.Repeat("x", 60) + `" is not a duration`}},
		{"duration word of 61, cut", "reflector:\n  idle: " + strings.Repeat("x", 61) + "\n", []string{`reflector.idle: "` + strings.Repeat("x", 60) + `..." is not a duration`}},
		{"tab", "\tllm: x\n", []string{"mnemo.yaml:1: YAML syntax error: found character that cannot start any token (a tab: YAML is indented with spaces only)"}},
		{"unknown anchor", "log:\n  level: *nope\n", []string{"mnemo.yaml:2: YAML syntax error: unknown anchor 'nope' referenced"}},
		{"two documents", "llm:\n  model: a\n---\nllm:\n  model: b\n", []string{"mnemo.yaml:3: a second YAML document starts here; a config file holds one document"}},
		{"trailing separator", "llm:\n  model: a\n---\n", []string{"mnemo.yaml:3: a second YAML document"}},
		{"bad second document", "llm: {}\n---\nx: [\n", []string{"mnemo.yaml:", "YAML syntax error"}},
		{"merge key", "base: &b {model: x}\n", []string{`unknown key "base"`}},
		{"merge key in section", "llm:\n  <<: {model: x}\n", []string{`mnemo.yaml:2: merge keys ("<<") are not supported in "llm"; write the keys out`}},
		{"merge key at top", "<<: {llm: {}}\n", []string{`merge keys ("<<") are not supported in the top level`}},
		{"complex key", "? [a]\n: 1\n", []string{`mnemo.yaml:1: a key in the top level is a list; keys must be plain names`}},
		{"alias to wrong section", "llm: &a\n  model: x\nmemory: *a\n", []string{`mnemo.yaml:2: unknown key "memory.model"`}},
		{"identities list", "identities: [a]\n", []string{`mnemo.yaml:1: identities: expected a mapping of names to lists of accounts`}},
		{"identities scalar value", "identities:\n  a: discord:1\n", []string{`mnemo.yaml:2: identities.a: expected a list of accounts such as`}},
		{"identities nested list", "identities:\n  a: [[x]]\n", []string{`mnemo.yaml:2: identities.a[0]: expected an account such as "slack:T01ABC/U02DEF" or "discord:80351110224678912", got a list`}},
		{"identities null item", "identities:\n  a:\n    - discord:1\n    - ~\n", []string{`mnemo.yaml:4: identities.a[1]: expected an account such as "slack:T01ABC/U02DEF" or "discord:80351110224678912", got a single value` + "\n"}},
		{"identities duplicate", "identities:\n  a: [\"discord:1\"]\n  a: [\"discord:2\"]\n", []string{`mnemo.yaml:3: duplicate name "identities.a" (already listed at line 2)`}},
		{"identities complex key", "identities:\n  ? [x]\n  : [\"discord:1\"]\n", []string{`a key in "identities" is a list`}},
		{"too many accounts", "identities:\n  a: &l [" + strings.Repeat("\"discord:1\",", 6000) + "]\n  b: *l\n", []string{`mnemo.yaml:3: identities.b: more than 10000 accounts in identities`}},
		{"several", "llm:\n  Model: x\nmemory:\n  datadir: y\n", []string{"mnemo.yaml:2: ", "\nmnemo.yaml:4: "}},
		// discord: lists, ints and bools.
		{"guild ids scalar", "discord:\n  guildIDs: 123\n", []string{`mnemo.yaml:2: discord.guildIDs: expected a list such as ["80351110224678912", "41771983423143937"], got a single value; write even one item as a list (in brackets, or on its own line after "- ")` + "\n"}},
		{"guild ids string", "discord:\n  guildIDs: \"80351110224678912, 41771983423143937\"\n", []string{`mnemo.yaml:2: discord.guildIDs: expected a list such as`, `got a single value`}},
		{"guild ids mapping", "discord:\n  guildIDs: {a: 1}\n", []string{`mnemo.yaml:2: discord.guildIDs: expected a list such as`, `got a mapping (keys and values)`}},
		{"guild ids nested list", "discord:\n  guildIDs:\n    - \"1\"\n    - [2]\n", []string{`mnemo.yaml:4: discord.guildIDs[1]: expected a single value, got a list` + "\n"}},
		{"guild ids mapping item", "discord:\n  guildIDs: [{id: 1}]\n", []string{`mnemo.yaml:2: discord.guildIDs[0]: expected a single value, got a mapping`}},
		{"guild ids null item", "discord:\n  guildIDs:\n    - 1\n    -\n    - ~\n", []string{
			`mnemo.yaml:4: discord.guildIDs[1]: the item is empty; give a value or remove the "-"`,
			`mnemo.yaml:5: discord.guildIDs[2]: the item is empty`}},
		{"guild ids wrong case", "discord:\n  guildIds: [\"1\"]\n", []string{`mnemo.yaml:2: unknown key "discord.guildIds" (did you mean "discord.guildIDs"?)`}},
		{"guild ids wrong level", "guildIDs: [\"1\"]\n", []string{`mnemo.yaml:1: unknown key "guildIDs" (did you mean "discord.guildIDs"?)`}},
		{"guild ids duplicate key", "discord:\n  guildIDs: [\"1\"]\n  guildIDs: [\"2\"]\n", []string{`mnemo.yaml:3: duplicate key "discord.guildIDs" (already set at line 2)`}},
		{"shard count word", "discord:\n  shardCount: \"two\"\n", []string{`mnemo.yaml:2: discord.shardCount: expected an integer, got "two"` + "\n"}},
		{"shard count plain word", "discord:\n  shardCount: two\n", []string{`discord.shardCount: expected an integer, got "two"`}},
		{"shard count list", "discord:\n  shardCount: [2]\n", []string{`discord.shardCount: expected an integer, got a list`}},
		{"shard id float", "discord:\n  shardID: 0.5\n", []string{`mnemo.yaml:2: discord.shardID: expected an integer, got "0.5"`}},
		{"shard id too big", "discord:\n  shardID: 99999999999999999999\n", []string{`discord.shardID: expected an integer, got "99999999999999999999"`}},
		{"shard id wrong case", "discord:\n  shardId: 1\n", []string{`unknown key "discord.shardId" (did you mean "discord.shardID"?)`}},
		{"shard count wrong case", "discord:\n  ShardCount: 2\n", []string{`unknown key "discord.ShardCount" (did you mean "discord.shardCount"?)`}},
		{"reply mention yes", "discord:\n  replyMention: yes\n", []string{`mnemo.yaml:2: discord.replyMention: expected true or false, got "yes"` + "\n"}},
		{"reply mention on", "discord:\n  replyMention: on\n", []string{`discord.replyMention: expected true or false, got "on"`}},
		{"reply mention number", "discord:\n  replyMention: 1\n", []string{`discord.replyMention: expected true or false, got "1"`}},
		{"reply mention quoted word", "discord:\n  replyMention: \"sometimes\"\n", []string{`discord.replyMention: expected true or false, got "sometimes"`}},
		{"reply mention bad tag", "discord:\n  replyMention: !!bool maybe\n", []string{`discord.replyMention: expected true or false, got "maybe"`}},
		{"reply mention list", "discord:\n  replyMention: [true]\n", []string{`mnemo.yaml:2: discord.replyMention: expected true or false, got a list`}},
		{"reply mention wrong case", "discord:\n  replymention: true\n", []string{`unknown key "discord.replymention" (did you mean "discord.replyMention"?)`}},
		{"discord several", "discord:\n  guildIDs: 1\n  shardID: x\n  shardCount: y\n  replyMention: z\n", []string{
			"mnemo.yaml:2: discord.guildIDs: ", "\nmnemo.yaml:3: discord.shardID: ", "\nmnemo.yaml:4: discord.shardCount: ", "\nmnemo.yaml:5: discord.replyMention: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadString(tt.yaml, nil)
			if c != nil {
				t.Error("config returned with an error")
			}
			if err != nil {
				err = errors.New(err.Error() + "\n") // lets a want end in "\n" to say "nothing more"
			}
			wantErr(t, err, tt.want...)
		})
	}
}

func TestTooManyProblems(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "bogus%d: 1\n", i)
	}
	_, err := loadString(b.String(), nil)
	wantErr(t, err, "bogus19", "... and 10 more problems")
	if strings.Contains(err.Error(), "bogus20") {
		t.Error("more than the limit reported")
	}
	// As many as the limit: all shown, no summary.
	b.Reset()
	for i := range maxProblems {
		fmt.Fprintf(&b, "bogus%d: 1\n", i)
	}
	_, err = loadString(b.String(), nil)
	if err == nil || strings.Count(err.Error(), "\n") != maxProblems-1 || strings.Contains(err.Error(), "more problems") {
		t.Errorf("%d problems reported as:\n%v", maxProblems, err)
	}
}

// TestValidateErrors covers every check of Validate, each through the file
// (named by file:line) or the environment (named by the variable).
func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want []string
	}{
		{"channel memory", "slack:\n  channelMemory: public\n", nil,
			[]string{`mnemo.yaml:2: slack.channelMemory: "public" is not one of full, read, off`}},
		{"discord channel memory", "discord:\n  channelMemory: all\n", nil,
			[]string{`mnemo.yaml:2: discord.channelMemory: "all" is not one of full, read, off`}},
		{"slack access", "slack:\n  access: closed\n", nil,
			[]string{`mnemo.yaml:2: slack.access: "closed" is not one of open, allowlist, pairing`}},
		{"discord access", "discord:\n  access: Open\n", nil,
			[]string{`mnemo.yaml:2: discord.access: "Open" is not one of open, allowlist, pairing`}},
		{"slack allow", "slack:\n  allow:\n    - T01ABC\n    - u02def\n    - D03\n    - T01ABC\n", nil,
			[]string{`mnemo.yaml:4: slack.allow[1]: "u02def" is not a Slack id (they are upper case); write a team "T…"`,
				`(e.g. T01ABC, C02DEF, U03GHI)`,
				`mnemo.yaml:5: slack.allow[2]: "D03" is not a Slack id`,
				`mnemo.yaml:6: slack.allow[3]: "T01ABC" is already listed at slack.allow[0]; list each id once`}},
		{"discord allow", "discord:\n  allow: [\"123\", \"role:x\"]\n", nil,
			[]string{`discord.allow[0]: "123" says neither guild, channel, user nor role; write "guild:ID"`,
				`discord.allow[1]: "role:x": "x" is not a Discord id`}},
		{"identity account", "identities:\n  zhangsan:\n    - slack:T01ABC/U02DEF\n    - discord:abc\n", nil,
			[]string{`mnemo.yaml:4: identities.zhangsan[1]: "discord:abc" must be "slack:TEAM_ID/USER_ID" or "discord:USER_ID" (digits)`}},
		{"identity platform", "identities:\n  a: [\"telegram:1\"]\n", nil,
			[]string{`identities.a[0]: "telegram:1" must be "slack:TEAM_ID/USER_ID" or "discord:USER_ID" (digits)`}},
		{"identity slack shape", "identities:\n  a: [\"slack:U02DEF\"]\n", nil,
			[]string{`identities.a[0]: "slack:U02DEF" must be`}},
		{"identity slack case", "identities:\n  a: [\"slack:t01abc/U02DEF\"]\n", nil,
			[]string{`identities.a[0]: "slack:t01abc/U02DEF": Slack IDs are upper case`}},
		{"identity slack user case", "identities:\n  a: [\"slack:T01ABC/u02def\"]\n", nil,
			[]string{`Slack IDs are upper case`}},
		{"identity name dot", "identities:\n  .hidden: [\"discord:1\"]\n", nil,
			[]string{`mnemo.yaml:2: identities..hidden: ".hidden" is not a valid user name; use 1 to 64 ASCII letters, digits, '.', '_' or '-', not starting with '.'`}},
		{"identity name space", "identities:\n  \"zhang san\": [\"discord:1\"]\n", nil,
			[]string{`"zhang san" is not a valid user name`}},
		{"identity name long", "identities:\n  " + strings.Repeat("a", 65) + ": [\"discord:1\"]\n", nil,
			[]string{`is not a valid user name`}},
		{"identity name unicode", "identities:\n  张三: [\"discord:1\"]\n", nil,
			[]string{`"张三" is not a valid user name`}},
		{"identity empty list", "identities:\n  a: []\n", nil,
			[]string{`mnemo.yaml:2: identities.a: lists no accounts`}},
		{"identity null list", "identities:\n  a:\n", nil,
			[]string{`identities.a: lists no accounts`}},
		{"identity linked twice", "identities:\n  zhangsan: [\"discord:1\"]\n  lisi: [\"slack:T1/U2\", \"discord:1\"]\n", nil,
			[]string{`mnemo.yaml:3: identities.lisi[1]: "discord:1" is already linked at identities.zhangsan[0]; an account can belong to one name only`}},
		{"identity named as another's folder", "identities:\n  slack-T1-U2: [\"discord:1\"]\n", nil,
			[]string{`mnemo.yaml:2: identities.slack-T1-U2: "slack-T1-U2" is the folder mnemo gives the account "slack:T1/U2", so whoever is listed here would share that person's memory; choose another name`}},
		{"identity named as another's discord folder", "identities:\n  discord-42: [\"discord:1\"]\n", nil,
			[]string{`identities.discord-42: "discord-42" is the folder mnemo gives the account "discord:42"`}},
		{"identity names one case apart", "identities:\n  slack-T1-U2: [\"slack:T1/U2\"]\n  Slack-T1-U2: [\"discord:1\"]\n", nil,
			[]string{`mnemo.yaml:3: identities.Slack-T1-U2: "Slack-T1-U2" and "slack-T1-U2" differ only in case, and a case-insensitive file system (macOS, Windows) keeps them in one folder; rename one`,
				`mnemo.yaml:3: identities.Slack-T1-U2: "Slack-T1-U2" is the folder mnemo gives the account "slack:T1/U2"`}},
		{"plain names one case apart", "identities:\n  Ada: [\"discord:1\"]\n  ada: [\"discord:2\"]\n", nil,
			[]string{`mnemo.yaml:3: identities.ada: "ada" and "Ada" differ only in case`}},
		{"identity named as a folder in another case", "identities:\n  SLACK-t1-u2: [\"discord:1\"]\n  DISCORD-42: [\"discord:2\"]\n", nil,
			[]string{`identities.SLACK-t1-u2: "SLACK-t1-u2" is the folder mnemo gives the account "slack:T1/U2"`,
				`identities.DISCORD-42: "DISCORD-42" is the folder mnemo gives the account "discord:42"`}},
		{"identity listed twice", "identities:\n  a: [\"discord:1\", \"discord:1\"]\n", nil,
			[]string{`identities.a[1]: "discord:1" is already linked at identities.a[0]`}},
		{"guild id word", "discord:\n  guildIDs:\n    - \"80351110224678912\"\n    - abc\n", nil,
			[]string{`mnemo.yaml:4: discord.guildIDs[1]: "abc" is not a guild id; a guild id is the number shown by Copy Server ID with Developer Mode on` + "\n"}},
		{"guild id empty string", "discord:\n  guildIDs: [\"\"]\n", nil, []string{`mnemo.yaml:2: discord.guildIDs[0]: "" is not a guild id`}},
		{"guild id 21 digits", "discord:\n  guildIDs: [\"123456789012345678901\"]\n", nil, []string{`discord.guildIDs[0]: "123456789012345678901" is not a guild id`}},
		{"guild id over uint64", "discord:\n  guildIDs: [18446744073709551616]\n", nil, []string{`discord.guildIDs[0]: "18446744073709551616" is not a guild id`}},
		{"guild id negative", "discord:\n  guildIDs: [-1]\n", nil, []string{`discord.guildIDs[0]: "-1" is not a guild id`}},
		{"guild id hex", "discord:\n  guildIDs: [0x10]\n", nil, []string{`discord.guildIDs[0]: "0x10" is not a guild id`}},
		{"guild id underscores", "discord:\n  guildIDs: [1_000]\n", nil, []string{`discord.guildIDs[0]: "1_000" is not a guild id`}},
		{"guild id float", "discord:\n  guildIDs: [1e5]\n", nil, []string{`discord.guildIDs[0]: "1e5" is not a guild id`}},
		{"guild id leading zero", "discord:\n  guildIDs: [\"0123\"]\n", nil, []string{`discord.guildIDs[0]: "0123" is not a guild id`}},
		{"guild id zero", "discord:\n  guildIDs: [0]\n", nil, []string{`discord.guildIDs[0]: "0" is not a guild id`}},
		{"guild id spaces", "discord:\n  guildIDs: [\" 123\"]\n", nil, []string{`discord.guildIDs[0]: " 123" is not a guild id`}},
		{"guild id with prefix", "discord:\n  guildIDs: [\"discord:123\"]\n", nil, []string{`discord.guildIDs[0]: "discord:123" is not a guild id`}},
		{"guild id bool", "discord:\n  guildIDs: [true]\n", nil, []string{`discord.guildIDs[0]: "true" is not a guild id`}},
		{"guild id duplicate", "discord:\n  guildIDs:\n    - 123\n    - 456\n    - \"123\"\n", nil,
			[]string{`mnemo.yaml:5: discord.guildIDs[2]: "123" is already listed at discord.guildIDs[0]; list each guild once` + "\n"}},
		{"guild id duplicate by alias", "discord:\n  guildIDs: [&g 123, *g]\n", nil, []string{`discord.guildIDs[1]: "123" is already listed at discord.guildIDs[0]`}},
		{"guild ids too many", "discord:\n  guildIDs: [" + strings.Repeat("1,", 50) + strings.Repeat("2,", 50) + "3]\n", nil, []string{
			`mnemo.yaml:2: discord.guildIDs: 101 guild ids, at most 100; for more guilds leave the list empty to register /memory globally`,
			`discord.guildIDs[1]: "1" is already listed at discord.guildIDs[0]`}},
		{"shard count zero", "discord:\n  shardCount: 0\n", nil,
			[]string{`mnemo.yaml:2: discord.shardCount: 0 is out of range; use 1 to 1024 (1 = one process serves every guild)` + "\n"}},
		{"shard count negative", "discord:\n  shardCount: -2\n  shardID: 0\n", nil, []string{`discord.shardCount: -2 is out of range; use 1 to 1024`}},
		{"shard count big", "discord:\n  shardCount: 1025\n", nil, []string{`discord.shardCount: 1025 is out of range; use 1 to 1024`}},
		{"shard count quoted big", "discord:\n  shardCount: \"100000\"\n", nil, []string{`discord.shardCount: 100000 is out of range`}},
		{"shard id negative", "discord:\n  shardID: -1\n", nil,
			[]string{`mnemo.yaml:2: discord.shardID: -1 is out of range; shard ids count from 0 to discord.shardCount-1, one per process` + "\n"}},
		{"shard id is count", "discord:\n  shardID: 2\n  shardCount: 2\n", nil,
			[]string{`mnemo.yaml:2: discord.shardID: 2 is out of range; with discord.shardCount 2 use 0 to 1, a different one in each process` + "\n"}},
		{"shard id without count", "discord:\n  shardID: 1\n", nil,
			[]string{`mnemo.yaml:2: discord.shardID: 1 is out of range; with discord.shardCount 1 use 0 to 0, a different one in each process`}},
		{"shard id and bad count", "discord:\n  shardCount: 0\n  shardID: 3\n", nil,
			[]string{`mnemo.yaml:2: discord.shardCount: 0 is out of range; use 1 to 1024 (1 = one process serves every guild)` + "\n"}}, // nothing about shardID: its bound is unknown
		{"shard both negative", "discord:\n  shardCount: -1\n  shardID: -1\n", nil,
			[]string{"mnemo.yaml:2: discord.shardCount: -1 is out of range", "\nmnemo.yaml:3: discord.shardID: -1 is out of range"}},
		{"log format", "log:\n  format: xml\n", nil, []string{`mnemo.yaml:2: log.format: "xml" is not one of text, json`}},
		{"log level", "log:\n  level: trace\n", nil, []string{`log.level: "trace" is not one of debug, info, warn, error`}},
		{"log level case", "log:\n  level: INFO\n", nil, []string{`log.level: "INFO" is not one of`}},
		{"listen no port", "server:\n  listen: \"9090\"\n", nil, []string{`mnemo.yaml:2: server.listen: "9090" must be host:port, e.g. "127.0.0.1:9090" or ":9090"`}},
		{"listen named port", "server:\n  listen: localhost:http\n", nil, []string{`server.listen: "localhost:http" must be host:port`}},
		{"listen big port", "server:\n  listen: localhost:99999\n", nil, []string{`server.listen: "localhost:99999" must be host:port`}},
		{"listen url", "server:\n  listen: http://localhost:9090\n", nil, []string{`server.listen: "http://localhost:9090" must be host:port`}},
		{"base url scheme", "llm:\n  baseURL: ftp://example.com/v1\n", nil,
			[]string{`mnemo.yaml:2: llm.baseURL: "ftp://example.com/v1" is not an absolute http(s) URL; use one such as "https://api.openai.com/v1"`}},
		{"base url relative", "", map[string]string{"OPENAI_BASE_URL": "localhost:8080/v1"},
			[]string{`OPENAI_BASE_URL: "localhost:8080/v1" is not an absolute http(s) URL`}},
		{"base url unparsable", "llm:\n  baseURL: \"http://[::1\"\n", nil,
			[]string{`llm.baseURL: is not a valid URL; use an absolute http(s) URL such as "https://api.openai.com/v1"`}},
		{"slack url env", "", map[string]string{"SLACK_API_URL": "slack.com/api"},
			[]string{`SLACK_API_URL: "slack.com/api/" is not an absolute http(s) URL; use one such as "https://slack.com/api/"`}},
		{"discord url", "discord:\n  apiURL: \"https:///nohost\"\n", nil,
			[]string{`discord.apiURL: "https:///nohost/" is not an absolute http(s) URL`}},
		{"slack bot token is app token", "", map[string]string{"SLACK_BOT_TOKEN": "xapp-1-SECRET", "SLACK_APP_TOKEN": "xapp-1-SECRET2"},
			[]string{"SLACK_BOT_TOKEN must start with xoxb-; use the Bot User OAuth Token from the app's OAuth & Permissions page (this is an app-level token; it belongs in SLACK_APP_TOKEN)"}},
		{"slack app token is bot token", "", map[string]string{"SLACK_BOT_TOKEN": "xoxb-SECRET", "SLACK_APP_TOKEN": "xoxb-SECRET2"},
			[]string{"SLACK_APP_TOKEN must start with xapp-; create an app-level token with connections:write on the app's Basic Information page (this is a bot token; it belongs in SLACK_BOT_TOKEN)"}},
		{"slack user token", "", map[string]string{"SLACK_BOT_TOKEN": "xoxp-SECRET", "SLACK_APP_TOKEN": "xapp-SECRET"},
			[]string{"SLACK_BOT_TOKEN must start with xoxb-", "(this is a user token; mnemo needs the bot token)"}},
		{"slack app token garbage", "slack:\n  botToken: xoxb-SECRET\n  appToken: SECRET\n", nil,
			[]string{"mnemo.yaml:3: slack.appToken must start with xapp-; create an app-level token with connections:write on the app's Basic Information page\n"}},
		{"slack token space", "slack:\n  botToken: \"xoxb-SECRET SECRET\"\n  appToken: xapp-SECRET\n", nil,
			[]string{`mnemo.yaml:2: slack.botToken contains spaces or control characters; give the token alone`}},
		{"slack bot only", "", map[string]string{"SLACK_BOT_TOKEN": "xoxb-SECRET"},
			[]string{"SLACK_BOT_TOKEN is set but slack.appToken (SLACK_APP_TOKEN) is not; Socket Mode needs both (or unset both to run without Slack)"}},
		{"slack app only", "slack:\n  appToken: xapp-SECRET\n", nil,
			[]string{"mnemo.yaml:2: slack.appToken is set but slack.botToken (SLACK_BOT_TOKEN) is not; Socket Mode needs both"}},
		{"discord bot prefix", "", map[string]string{"DISCORD_BOT_TOKEN": "Bot SECRET"},
			[]string{`DISCORD_BOT_TOKEN: give the token without the "Bot " prefix; mnemo adds it` + "\n"}},
		{"discord token space", "discord:\n  botToken: \"SECRET\\tSECRET\"\n", nil,
			[]string{`mnemo.yaml:2: discord.botToken contains spaces or control characters`}},
		{"api key bearer", "", map[string]string{"OPENAI_API_KEY": "Bearer SECRET"},
			[]string{`OPENAI_API_KEY contains spaces or control characters; give the token alone (no "Bearer " or "Bot " prefix, no quotes)`}},
		{"max retries high", "llm:\n  maxRetries: 11\n", nil, []string{`mnemo.yaml:2: llm.maxRetries: 11 is out of range; use 0 to 10` + "\n"}},
		{"max retries negative", "llm:\n  maxRetries: -1\n", nil, []string{`llm.maxRetries: -1 is out of range; use 0 to 10`}},
		{"timeout zero", "llm:\n  timeout: 0s\n", nil, []string{`mnemo.yaml:2: llm.timeout: must be greater than 0, got 0s; write a duration such as "90s" or "2m"`}},
		{"idle negative", "reflector:\n  idle: -1m\n", nil, []string{`reflector.idle: must be greater than 0, got -1m0s`}},
		{"grace zero", "shutdown:\n  grace: 0s\n", nil, []string{`mnemo.yaml:2: shutdown.grace: must be greater than 0, got 0s; write a duration such as "90s" or "2m"`}},
		{"index budget", "memory:\n  indexBudget: 100\n", nil, []string{`memory.indexBudget: 100 is out of range; use 256 to 1048576 bytes`}},
		{"search budget", "memory:\n  searchBudget: 100\n", nil, []string{`memory.searchBudget: 100 is out of range; use 512 to 1048576 bytes`}},
		{"read cap zero", "memory:\n  readCap: 0\n", nil, []string{`memory.readCap: 0 is out of range; use 1024 to 67108864 bytes`, `memory.writeCap: 32768 is larger than memory.readCap (0)`}},
		{"write cap big", "memory:\n  writeCap: 100000\n", nil, []string{`mnemo.yaml:2: memory.writeCap: 100000 is larger than memory.readCap (65536), so written files could not be read back whole; lower it or raise memory.readCap`}},
		{"agent steps", "agent:\n  maxSteps: 0\n", nil, []string{`agent.maxSteps: 0 is out of range; use 1 to 100`}},
		{"history turns", "agent:\n  historyTurns: -1\n", nil, []string{`agent.historyTurns: -1 is out of range; use 0 to 1000`}},
		{"max concurrent", "agent:\n  maxConcurrent: 0\n", nil, []string{`agent.maxConcurrent: 0 is out of range; use 1 to 1024`}},
		{"reflector turns", "reflector:\n  maxTurns: 0\n", nil, []string{`reflector.maxTurns: 0 is out of range; use 1 to 1000`}},
		{"reflector steps", "reflector:\n  maxSteps: 101\n", nil, []string{`reflector.maxSteps: 101 is out of range; use 1 to 100`}},
		{"facts budget", "reflector:\n  factsBudget: -1\n", nil, []string{`reflector.factsBudget: -1 is out of range; use 1 to 16777216 bytes`}},
		{"state inside memory", "memory:\n  dataDir: data/memory\nstate:\n  dir: data/memory/state\n", nil,
			[]string{`mnemo.yaml:4: state.dir: "data/memory/state" is inside memory.dataDir "data/memory", where every folder is a user's memory; put it beside, e.g. "`}},
		{"state is memory", "", map[string]string{"MNEMO_DATA_DIR": "/srv/m"}, nil},
		{"write cap as read cap", "memory:\n  writeCap: 65536\n", nil, nil},
		{"roll-ups off", "memory:\n  rollupAfter: 0\n", nil, nil},
		{"roll-ups negative", "memory:\n  rollupAfter: -1\n", nil, []string{`mnemo.yaml:2: memory.rollupAfter: -1 is out of range; use 0 to 120 months (0 turns roll-ups off; default 3)`}},
		{"highest port", "server:\n  listen: \"127.0.0.1:65535\"\n", nil, nil},
		{"memory is cwd", "memory:\n  dataDir: .\n", nil, []string{`state.dir: "state" is inside memory.dataDir "."`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadString(tt.yaml, tt.env)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if c != nil {
				t.Error("config returned with an error")
			}
			if err != nil {
				err = errors.New(err.Error() + "\n")
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("error shows a secret: %v", err)
				}
			}
			wantErr(t, err, tt.want...)
		})
	}
}

func TestValidateHandBuilt(t *testing.T) {
	err := (&Config{platforms: []platformSection{{"slack", &slack.Section{}}, {"discord", &discord.Section{}}}}).Validate()
	wantErr(t, err,
		"llm.model (MNEMO_MODEL): must not be empty",
		"memory.dataDir (MNEMO_DATA_DIR): must not be empty",
		"state.dir: must not be empty",
		"llm.timeout: must be greater than 0",
		`slack.apiURL (SLACK_API_URL): must not be empty; the default is "https://slack.com/api/"`,
		`slack.channelMemory: "" is not one of full, read, off`,
		"llm.maxResponseBytes: 0 is out of range; use 1024 to 1073741824 bytes",
		"maxReplyChars: 0 is out of range; use 100 to 1048576 characters",
		"... and ", // more than maxReportedErrors problems
	)
	c1 := Default(platforms...)
	discordOf(c1).ShardCount, c1.Server.Listen = 0, ""
	wantErr(t, c1.Validate(), "discord.shardCount: 0 is out of range; use 1 to 1024", `server.listen: "" must be host:port`)

	// Discord keys set by the caller, as serve flags or tests might.
	c0 := Default(platforms...)
	discordOf(c0).GuildIDs = []string{"abc", "7", "7"}
	for i := range 99 {
		discordOf(c0).GuildIDs = append(discordOf(c0).GuildIDs, fmt.Sprint(1000+i))
	}
	discordOf(c0).ShardID, discordOf(c0).ShardCount = 4, 4
	err = c0.Validate()
	wantErr(t, err,
		"discord.guildIDs: 102 guild ids, at most 100",
		`discord.guildIDs[0]: "abc" is not a guild id; a guild id is the number shown by Copy Server ID with Developer Mode on`,
		`discord.guildIDs[2]: "7" is already listed at discord.guildIDs[1]`,
		"discord.shardID: 4 is out of range; with discord.shardCount 4 use 0 to 3",
	)
	if strings.Contains(err.Error(), "mnemo.yaml") {
		t.Errorf("a hand-built config named a file: %v", err)
	}
	discordOf(c0).GuildIDs, discordOf(c0).ShardID = []string{"80351110224678912"}, 3
	if err := c0.Validate(); err != nil {
		t.Error(err)
	}

	// Without a file, names are checked in name order.
	c := Default(platforms...)
	c.Identities = map[string][]string{"b": {"discord:1"}, "a": {"discord:1"}, "c": {"discord:2"}}
	wantErr(t, c.Validate(), `identities.b[0]: "discord:1" is already linked at identities.a[0]`)

	// An automatic folder name is fine for the account it belongs to: a
	// person linking another account to the folder they have already.
	c = Default(platforms...)
	c.Identities = map[string][]string{"slack-T1-U2": {"slack:T1/U2", "discord:1"}, "discord-7": {"discord:7"}}
	if err := c.Validate(); err != nil {
		t.Errorf("an automatic name with its own account: %v", err)
	}

	c = Default(platforms...)
	c.Server.Listen = "0.0.0.0:8080" // as a --listen flag would
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Log.Format = "yaml" // as a bad --log-format would
	wantErr(t, c.Validate(), `log.format: "yaml" is not one of text, json`)
}

func TestEnvPrecedence(t *testing.T) {
	file := "llm:\n  baseURL: http://file/v1\n  apiKey: file-key\n  model: file-model\nmemory:\n  dataDir: /file/memory\n" +
		"slack:\n  botToken: xoxb-file\n  appToken: xapp-file\n  apiURL: http://file-slack/\n" +
		"discord:\n  botToken: file-discord\n  apiURL: http://file-discord/\n"

	// No environment: the file.
	c, err := loadString(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.Model != "file-model" || c.LLM.ReflectorModel != "file-model" || c.State.Dir != "/file/state" {
		t.Errorf("file values not used: %+v", c)
	}

	// Blank environment variables do not count.
	c, err = loadString(file, map[string]string{"MNEMO_MODEL": "  ", "OPENAI_API_KEY": ""})
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.Model != "file-model" || c.LLM.APIKey != "file-key" {
		t.Errorf("blank env won: %+v", c)
	}

	// Every variable wins over the file, trimmed.
	env := map[string]string{
		"OPENAI_BASE_URL":       "http://env/v1",
		"OPENAI_API_KEY":        " env-key\n",
		"MNEMO_MODEL":           "env-model",
		"MNEMO_REFLECTOR_MODEL": "env-reflector",
		"MNEMO_DATA_DIR":        "/env/mem/",
		"SLACK_BOT_TOKEN":       "xoxb-env",
		"SLACK_APP_TOKEN":       "xapp-env",
		"SLACK_API_URL":         "http://env-slack/api",
		"DISCORD_BOT_TOKEN":     "env-discord",
		"DISCORD_API_URL":       "http://env-discord",
	}
	c, err = loadString(file, env)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"baseURL": c.LLM.BaseURL, "apiKey": c.LLM.APIKey, "model": c.LLM.Model, "reflectorModel": c.LLM.ReflectorModel,
		"dataDir": c.Memory.DataDir, "state": c.State.Dir, "slackBot": slackOf(c).BotToken, "slackApp": slackOf(c).AppToken,
		"slackURL": slackOf(c).APIURL, "discordBot": discordOf(c).BotToken, "discordURL": discordOf(c).APIURL,
	}
	want := map[string]string{
		"baseURL": "http://env/v1", "apiKey": "env-key", "model": "env-model", "reflectorModel": "env-reflector",
		"dataDir": "/env/mem", "state": "/env/state", "slackBot": "xoxb-env", "slackApp": "xapp-env",
		"slackURL": "http://env-slack/api/", "discordBot": "env-discord", "discordURL": "http://env-discord/",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}

	// MNEMO_MODEL moves the reflector model when that is not set anywhere.
	c, err = loadString("", map[string]string{"MNEMO_MODEL": "llama3.2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.ReflectorModel != "llama3.2" {
		t.Errorf("reflectorModel = %q, want llama3.2", c.LLM.ReflectorModel)
	}
	// ... but not when the file sets it.
	c, err = loadString("llm:\n  reflectorModel: big\n", map[string]string{"MNEMO_MODEL": "small"})
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.ReflectorModel != "big" || c.LLM.Model != "small" {
		t.Errorf("models = %q, %q", c.LLM.Model, c.LLM.ReflectorModel)
	}
	// An explicit state.dir is kept when the data dir moves.
	c, err = loadString("state:\n  dir: /var/state\n", map[string]string{"MNEMO_DATA_DIR": "/srv/memory"})
	if err != nil {
		t.Fatal(err)
	}
	if c.State.Dir != "/var/state" {
		t.Errorf("state.dir = %q", c.State.Dir)
	}
}

// TestDiscordValid covers the accepted forms of the discord keys.
func TestDiscordValid(t *testing.T) {
	var hundred []string
	for i := range 100 {
		hundred = append(hundred, fmt.Sprint(80351110224678912+i))
	}
	tests := []struct {
		name, yaml string
		want       discord.Section // compared on guildIDs, shardID, shardCount, replyMention
	}{
		{"defaults", "", discord.Section{ShardCount: 1}},
		{"all empty", "discord:\n  guildIDs:\n  shardID:\n  shardCount:\n  replyMention:\n", discord.Section{ShardCount: 1}},
		{"empty list", "discord:\n  guildIDs: []\n", discord.Section{ShardCount: 1}},
		{"block list, unquoted and quoted", "discord:\n  guildIDs:\n    - 80351110224678912\n    - \"41771983423143937\"\n",
			discord.Section{GuildIDs: []string{"80351110224678912", "41771983423143937"}, ShardCount: 1}},
		{"flow list", "discord: {guildIDs: [1, '22', \"333\"]}\n", discord.Section{GuildIDs: []string{"1", "22", "333"}, ShardCount: 1}},
		{"largest snowflake", "discord:\n  guildIDs: [18446744073709551615]\n", discord.Section{GuildIDs: []string{"18446744073709551615"}, ShardCount: 1}},
		{"one guild", "discord:\n  guildIDs: [1]\n", discord.Section{GuildIDs: []string{"1"}, ShardCount: 1}},
		{"a hundred guilds", "discord:\n  guildIDs: [" + strings.Join(hundred, ", ") + "]\n", discord.Section{GuildIDs: hundred, ShardCount: 1}},
		{"aliased item", "discord:\n  shardID: &one 1\n  shardCount: 2\n  guildIDs: [*one, 9]\n",
			discord.Section{GuildIDs: []string{"1", "9"}, ShardID: 1, ShardCount: 2}},
		{"aliased section", "slack: &s {channelMemory: full}\ndiscord: *s\n", discord.Section{ShardCount: 1}},
		{"first shard", "discord:\n  shardID: 0\n  shardCount: 2\n", discord.Section{ShardID: 0, ShardCount: 2}},
		{"last shard", "discord:\n  shardID: 1023\n  shardCount: 1024\n", discord.Section{ShardID: 1023, ShardCount: 1024}},
		{"quoted ints", "discord:\n  shardID: \"2\"\n  shardCount: ' 3 '\n", discord.Section{ShardID: 2, ShardCount: 3}},
		{"hex ints", "discord:\n  shardID: 0x1\n  shardCount: 0x10\n", discord.Section{ShardID: 1, ShardCount: 16}},
		{"reply mention true", "discord:\n  replyMention: true\n", discord.Section{ShardCount: 1, ReplyMention: true}},
		{"reply mention True", "discord:\n  replyMention: True\n", discord.Section{ShardCount: 1, ReplyMention: true}},
		{"reply mention TRUE", "discord:\n  replyMention: TRUE\n", discord.Section{ShardCount: 1, ReplyMention: true}},
		{"reply mention quoted", "discord:\n  replyMention: \"true\"\n", discord.Section{ShardCount: 1, ReplyMention: true}},
		{"reply mention false", "discord:\n  replyMention: false\n", discord.Section{ShardCount: 1}},
		{"reply mention quoted false", "discord:\n  replyMention: 'false'\n", discord.Section{ShardCount: 1}},
		{"reply mention tagged", "discord:\n  replyMention: !!bool true\n", discord.Section{ShardCount: 1, ReplyMention: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadString(tt.yaml, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := discordOf(c)
			if !slices.Equal(d.GuildIDs, tt.want.GuildIDs) || (d.GuildIDs == nil) != (tt.want.GuildIDs == nil) ||
				d.ShardID != tt.want.ShardID || d.ShardCount != tt.want.ShardCount || d.ReplyMention != tt.want.ReplyMention {
				t.Errorf("got guildIDs=%#v shardID=%d shardCount=%d replyMention=%v, want %#v %d %d %v",
					d.GuildIDs, d.ShardID, d.ShardCount, d.ReplyMention,
					tt.want.GuildIDs, tt.want.ShardID, tt.want.ShardCount, tt.want.ReplyMention)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate after load: %v", err)
			}
		})
	}
}

// IdentityIndex maps "discord:USER_ID" to the linked name, as the Discord
// adapter looks it up; an unlinked account is absent.
func TestIdentityIndexDiscord(t *testing.T) {
	c, err := loadString("identities:\n  zhangsan:\n    - discord:80351110224678912\n    - slack:T01ABC/U02DEF\n  lisi: [\"discord:41771983423143937\"]\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	idx := c.IdentityIndex()
	for account, want := range map[string]string{
		"discord:80351110224678912": "zhangsan",
		"discord:41771983423143937": "lisi",
		"slack:T01ABC/U02DEF":       "zhangsan",
		"discord:1":                 "",
		"80351110224678912":         "", // the platform prefix is part of the key
	} {
		if got, ok := idx[account]; ok != (want != "") || got != want {
			t.Errorf("IdentityIndex()[%q] = %q, %v; want %q", account, got, ok, want)
		}
	}
	if len(idx) != 3 {
		t.Errorf("IdentityIndex has %d entries, want 3: %v", len(idx), idx)
	}
	if len(Default(platforms...).IdentityIndex()) != 0 {
		t.Error("IdentityIndex of the defaults is not empty")
	}
}

// Every list key has an example for its "expected a list" message, and the
// example is a valid value.
func TestListExamples(t *testing.T) {
	var lists []string
	s := newSchema(Default(platforms...))
	for _, key := range s.keys {
		if s.typ[key] == "[]string" {
			lists = append(lists, key)
		}
	}
	if len(lists) != len(s.examples) {
		t.Errorf("list keys %v, examples for %d", lists, len(s.examples))
	}
	for _, key := range lists {
		ex, ok := s.examples[key]
		if !ok {
			t.Errorf("no example for %s (the section's ListExamples)", key)
			continue
		}
		section, name, _ := strings.Cut(key, ".")
		if _, err := loadString(section+":\n  "+name+": "+ex+"\n", nil); err != nil {
			t.Errorf("the example of %s does not load: %v", key, err)
		}
	}
}

func TestIntForms(t *testing.T) {
	c, err := loadString("memory:\n  readCap: 0x20000\n  indexBudget: 8_192\n  writeCap: \"2048\"\nllm:\n  maxRetries: 0\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Memory.ReadCap != 0x20000 || c.Memory.IndexBudget != 8192 || c.Memory.WriteCap != 2048 || c.LLM.MaxRetries != 0 {
		t.Errorf("got %+v %+v", c.Memory, c.LLM.MaxRetries)
	}
}

// TestExampleFile keeps deploy/mnemo.yaml and the code in step: the example
// loads, equals the defaults, names every key and every variable.
func TestExampleFile(t *testing.T) {
	path := filepath.Join("..", "..", "..", "deploy", "mnemo.yaml")
	c, err := Load(path, true, noEnv, platforms...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default(platforms...)) {
		t.Errorf("the example differs from the defaults:\n%+v\nwant\n%+v", c, Default(platforms...))
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var present []string
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := joinKey(prefix, n.Content[i].Value)
			present = append(present, k)
			if k != "identities" && n.Content[i+1].Kind == yaml.MappingNode {
				walk(n.Content[i+1], k)
			}
		}
	}
	walk(doc.Content[0], "")
	if keys := newSchema(Default(platforms...)).keys; !slices.Equal(present, keys) {
		t.Errorf("keys of the example:\n%v\nkeys of Config, in order:\n%v", present, keys)
	}
	if !bytes.Contains(data, []byte("MNEMO_LLM_MAX_RETRIES")) {
		t.Error("the example does not show the environment rule (MNEMO_LLM_MAX_RETRIES)")
	}
	for _, e := range Env(Default(platforms...)) {
		if e.Name != ruleEnvName(e.Key) && !bytes.Contains(data, []byte("env "+e.Name)) {
			t.Errorf("the example does not mention env %s", e.Name)
		}
	}
}

// TestSecretsNeverShown sets every secret to a marked value and looks for the
// mark everywhere a config is shown.
func TestSecretsNeverShown(t *testing.T) {
	const mark = "S3CR3T"
	env := map[string]string{
		"OPENAI_API_KEY":    "sk-" + mark,
		"SLACK_BOT_TOKEN":   "xoxb-" + mark,
		"SLACK_APP_TOKEN":   "xapp-" + mark,
		"DISCORD_BOT_TOKEN": "a." + mark + ".b",
		"OPENAI_BASE_URL":   "https://user:" + mark + "@llm.example/v1",
	}
	c, err := loadString("", env)
	if err != nil {
		t.Fatal(err)
	}
	_ = c

	// Invalid secrets are not shown either.
	bad := map[string]string{
		"OPENAI_API_KEY":    "sk " + mark,
		"SLACK_BOT_TOKEN":   "xapp-" + mark,
		"SLACK_APP_TOKEN":   mark,
		"DISCORD_BOT_TOKEN": "Bot " + mark,
	}
	_, err = loadString("llm:\n  maxRetries: 99\n", bad)
	wantErr(t, err, "OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN", "llm.maxRetries")
	if strings.Contains(err.Error(), mark) {
		t.Errorf("error shows a secret:\n%v", err)
	}
	// A secret given where a section belongs is not echoed.
	_, err = loadString("slack: xoxb-"+mark+"\n", nil)
	wantErr(t, err, "slack: expected a section")
	if strings.Contains(err.Error(), mark) {
		t.Errorf("error shows a secret:\n%v", err)
	}
}

func TestLogging(t *testing.T) {
	for level, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "": slog.LevelInfo} {
		c := &Config{Log: Log{Level: level}}
		h := c.LogHandler(io.Discard)
		if !h.Enabled(context.Background(), want) || (want > slog.LevelDebug && h.Enabled(context.Background(), want-1)) {
			t.Errorf("log.level %q: handler not at %v", level, want)
		}
	}
	var buf bytes.Buffer
	c := Default(platforms...)
	c.Log.Format = "json"
	c.Log.Level = "warn"
	l := slog.New(c.LogHandler(&buf))
	l.Info("hidden")
	l.Warn("shown")
	if s := buf.String(); strings.Contains(s, "hidden") || !strings.HasPrefix(s, "{") {
		t.Errorf("json handler wrote %q", s)
	}
	buf.Reset()
	c.Log.Format, c.Log.Level = "text", "info"
	slog.New(c.LogHandler(&buf)).Info("line")
	if !strings.Contains(buf.String(), "msg=line") {
		t.Errorf("text handler wrote %q", buf.String())
	}
}

func TestResolveLLM(t *testing.T) {
	okProbe := func(calls *[]string) func(context.Context, string) error {
		return func(ctx context.Context, u string) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("probe without a deadline")
			}
			*calls = append(*calls, u)
			return nil
		}
	}
	failProbe := func(context.Context, string) error { return errors.New("connection refused") }

	tests := []struct {
		name      string
		baseURL   string
		apiKey    string
		ollama    string
		probe     func(*[]string) func(context.Context, string) error
		wantURL   string
		wantNote  string
		wantCalls []string
		wantErr   []string
	}{
		{name: "base url", baseURL: "http://vllm:8000/v1", probe: okProbe, wantURL: "http://vllm:8000/v1"},
		{name: "base url and key", baseURL: "http://vllm:8000/v1", apiKey: "k", probe: okProbe, wantURL: "http://vllm:8000/v1"},
		{name: "key only", apiKey: "k", probe: okProbe, wantURL: OpenAIBaseURL},
		{name: "ollama", probe: okProbe, wantURL: DefaultOllamaURL, wantCalls: []string{DefaultOllamaURL},
			wantNote: "no OPENAI_API_KEY or OPENAI_BASE_URL set; using local Ollama at " + DefaultOllamaURL + ` with model "gpt-4o-mini"`},
		{name: "ollama elsewhere", ollama: "http://gpu:11434/v1", probe: okProbe, wantURL: "http://gpu:11434/v1",
			wantCalls: []string{"http://gpu:11434/v1"}, wantNote: "using local Ollama at http://gpu:11434/v1"},
		{name: "nothing", probe: func(*[]string) func(context.Context, string) error { return failProbe },
			wantErr: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", DefaultOllamaURL, "connection refused", "ollama serve", "`mnemo init` asks these questions"}},
		{name: "no probe", wantErr: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "no probe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default(platforms...)
			c.LLM.BaseURL, c.LLM.APIKey = tt.baseURL, tt.apiKey
			var calls []string
			var probe func(context.Context, string) error
			if tt.probe != nil {
				probe = tt.probe(&calls)
			}
			u, note, err := c.ResolveLLM(t.Context(), probe, tt.ollama)
			if tt.wantErr != nil {
				wantErr(t, err, tt.wantErr...)
				if !errors.Is(err, ErrNoLLM) {
					t.Errorf("error does not wrap ErrNoLLM: %v", err)
				}
				if u != "" {
					t.Errorf("url %q with an error", u)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u != tt.wantURL {
				t.Errorf("url = %q, want %q", u, tt.wantURL)
			}
			if !strings.Contains(note, tt.wantNote) || (tt.wantNote == "" && note != "") {
				t.Errorf("note = %q, want %q", note, tt.wantNote)
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("probe calls = %v, want %v", calls, tt.wantCalls)
			}
			if c.LLM.BaseURL != tt.baseURL {
				t.Error("cfg changed")
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	d := &decoder{schema: newSchema(Default(platforms...))}
	for name, want := range map[string]string{
		"levle":  ` (did you mean "log.level"?)`,
		"FORMAT": ` (did you mean "log.format"?)`,
		"lvl":    ` (did you mean "log.level"?)`,
		"color":  "",
		"x":      "",
	} {
		if got := d.suggest(name, "log"); got != want {
			t.Errorf("suggest(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestFindErrorLine(t *testing.T) {
	if got := failingLine([]byte("a: 1\nb: 2"), "yaml: something else"); got != 0 {
		t.Errorf("unreproduced error found at line %d", got)
	}
	data := []byte("a: 1\nb: 2\nc: d: e")
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	err := dec.Decode(&n)
	if err == nil {
		t.Fatal("no error")
	}
	if got := failingLine(data, err.Error()); got != 3 {
		t.Errorf("line %d, want 3 (%v)", got, err)
	}
}

// Validation problems come in file order, those from the environment last.
func TestValidateOrder(t *testing.T) {
	text := "server:\n  listen: \"9090\"\nslack:\n  channelMemory: public\n  botToken: xapp-1\nlog:\n  level: loud\n"
	_, err := loadString(text, map[string]string{"SLACK_APP_TOKEN": "nope"})
	if err == nil {
		t.Fatal("no error")
	}
	var prefixes []string
	for _, line := range strings.Split(err.Error(), "\n") {
		p, _, _ := strings.Cut(line, " ")
		prefixes = append(prefixes, p)
	}
	want := []string{"mnemo.yaml:2:", "mnemo.yaml:4:", "mnemo.yaml:5:", "mnemo.yaml:7:", "SLACK_APP_TOKEN"}
	if !slices.Equal(prefixes, want) {
		t.Errorf("order %v, want %v:\n%v", prefixes, want, err)
	}
}

// llm.maxResponseBytes and maxReplyChars: where they are written, their
// checks, and that openApp hands them to the model client and the agent.
func TestBoundsConfig(t *testing.T) {
	c, err := loadString("llm:\n  maxResponseBytes: 2048\nmaxReplyChars: 100\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.MaxResponseBytes != 2048 || c.MaxReplyChars != 100 {
		t.Errorf("got %d, %d", c.LLM.MaxResponseBytes, c.MaxReplyChars)
	}
	tests := []struct{ yaml, want string }{
		{"llm:\n  maxResponseBytes: 1023\n", "mnemo.yaml:2: llm.maxResponseBytes: 1023 is out of range; use 1024 to 1073741824 bytes (default 4194304)"},
		{"llm:\n  maxResponseBytes: 2147483648\n", "llm.maxResponseBytes: 2147483648 is out of range"},
		{"maxReplyChars: 99\n", "mnemo.yaml:1: maxReplyChars: 99 is out of range; use 100 to 1048576 characters (default 16000)"},
		{"maxReplyChars: 0\n", "mnemo.yaml:1: maxReplyChars: 0 is out of range"},
		{"maxReplyChars: lots\n", `mnemo.yaml:1: maxReplyChars: expected an integer, got "lots"`},
		{"agent:\n  maxReplyChars: 500\n", `mnemo.yaml:2: unknown key "agent.maxReplyChars" (did you mean "maxReplyChars"?)`},
		{"maxResponseBytes: 5000\n", `mnemo.yaml:1: unknown key "maxResponseBytes" (did you mean "llm.maxResponseBytes"?)`},
	}
	for _, tt := range tests {
		_, err := loadString(tt.yaml, nil)
		wantErr(t, err, tt.want)
	}
}

// Errors of yaml.v3 that name no key known here are shown as they are,
// with their line; a panic in the parser is an error, not a crash.
func TestUnexpectedDecodeErrors(t *testing.T) {
	d := &decoder{file: "f.yaml", schema: newSchema(Default(platforms...)), seen: map[*yaml.Node]bool{}}
	d.typeError("line 3: something new")
	d.typeError("no line at all")
	d.typeError("line 4: two\nlines")
	d.typeError("line 2: cannot unmarshal !!str `x` into int")
	want := "f.yaml:2: cannot unmarshal !!str `x` into int\nf.yaml:3: something new\nf.yaml:4: two\\nlines\nf.yaml: no line at all"
	if err := joinProblems(d.problems); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	dec := yaml.NewDecoder(strings.NewReader("llm: {model: x}\n"))
	if err := safeDecode(dec, Config{}); err == nil || !strings.Contains(err.Error(), "the YAML parser failed") {
		t.Errorf("decoding into a value, not a pointer: %v", err)
	}
	s := newSchema(Default(platforms...))
	for key, want := range map[string]string{
		"llm": "config.LLM", "llm.timeout": "time.Duration", "discord.guildIDs[3]": "string", "identities.li.si": "[]string",
		"identities.li.si[0]": "string", "identities": "map[string][]string", "llm.model[0]": "", "slak": "",
	} {
		if got := s.typeOf(key); got != want {
			t.Errorf("typeOf(%q) = %q, want %q", key, got, want)
		}
	}
}

// The state folder suggested instead of one inside the memory folder is an
// absolute path beside it.
func TestStateInsideMemoryHint(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadString("memory:\n  dataDir: data/memory\nstate:\n  dir: data/memory/state\n", nil)
	wantErr(t, err, `put it beside, e.g. "`+filepath.Join(wd, "data", "state")+`"`)
}

// TestStateInsideMemoryHintDeepPath: run from a folder whose path is
// longer than any cut (as a clone under a long path is), the suggested
// folder and the folders named are printed whole.
func TestStateInsideMemoryHintDeepPath(t *testing.T) {
	deep := t.TempDir()
	for range 6 {
		deep = filepath.Join(deep, "a-rather-long-folder-name-to-make-the-path-deep")
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	_, err := loadString("memory:\n  dataDir: data/memory\nstate:\n  dir: data/memory/state\n", nil)
	wantErr(t, err, `put it beside, e.g. "`+filepath.Join(deep, "data", "state")+`"`)
	abs := filepath.Join(deep, "memory")
	_, err = loadString("memory:\n  dataDir: "+abs+"\nstate:\n  dir: "+abs+"/state\n", nil)
	wantErr(t, err, strconv.Quote(abs+"/state")+" is inside memory.dataDir "+strconv.Quote(abs))
	if strings.Contains(err.Error(), "...") {
		t.Errorf("a path is cut: %v", err)
	}
}

// At most maxIdentityAccounts accounts in identities, aliases included.
func TestIdentityAccountLimit(t *testing.T) {
	accounts := func(from, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "\"discord:%d\",", from+i)
		}
		return "[" + strings.TrimSuffix(b.String(), ",") + "]"
	}
	half := maxIdentityAccounts / 2
	if _, err := loadString("identities:\n  a: "+accounts(1, half)+"\n  b: "+accounts(1+half, half)+"\n", nil); err != nil {
		t.Errorf("%d accounts: %v", maxIdentityAccounts, err)
	}
	_, err := loadString("identities:\n  a: "+accounts(1, half)+"\n  b: "+accounts(1+half, half+1)+"\n", nil)
	wantErr(t, err, `mnemo.yaml:3: identities.b: more than 10000 accounts in identities; is this the right file?`)
}

func TestHistoryKeys(t *testing.T) {
	c, err := loadString("history:\n  keep: 3\n  maxAge: 24h\n", nil)
	if err != nil || c.History.Keep != 3 || c.History.MaxAge != 24*time.Hour {
		t.Fatalf("history: %+v, %v", c.History, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"history:\n  keep: 0\n", "history.keep"},
		{"history:\n  keep: 10001\n", "history.keep"},
		{"history:\n  maxAge: 0s\n", "history.maxAge"},
		{"history:\n  maxAge: 90\n", "history.maxAge"},
		{"history:\n  kep: 3\n", `did you mean "history.keep"`},
	} {
		if _, err := loadString(tc.yaml, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error naming %s", tc.yaml, err, tc.want)
		}
	}
}

// limits.*: 0 is no limit, a key left out is the default, and a bad value
// names the key, the range and what 0 means.
func TestLimits(t *testing.T) {
	c, err := loadString("limits:\n  messagesPerMinute: 0\n  totalTokensPerDay: 1000000\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Limits; got != (Limits{MessagesPerMinute: 0, TokensPerDay: 200000, TotalTokensPerDay: 1000000}) {
		t.Errorf("limits = %+v", got)
	}
	tests := []struct{ yaml, want string }{
		{"limits:\n  messagesPerMinute: -1\n", "mnemo.yaml:2: limits.messagesPerMinute: -1 is out of range; use 0 to 10000 (0 = no limit)"},
		{"limits:\n  messagesPerMinute: 10001\n", "limits.messagesPerMinute: 10001 is out of range"},
		{"limits:\n  tokensPerDay: -5\n", "mnemo.yaml:2: limits.tokensPerDay: -5 is out of range; use 0 to 1000000000000 (0 = no limit)"},
		{"limits:\n  totalTokensPerDay: 1000000000001\n", "limits.totalTokensPerDay: 1000000000001 is out of range"},
		{"limits:\n  tokensPerDay: many\n", `mnemo.yaml:2: limits.tokensPerDay: expected an integer, got "many"`},
		{"limits:\n  tokensperday: 5\n", `unknown key "limits.tokensperday" (did you mean "limits.tokensPerDay"?)`},
		{"tokensPerDay: 5\n", `unknown key "tokensPerDay" (did you mean "limits.tokensPerDay"?)`},
	}
	for _, tt := range tests {
		_, err := loadString(tt.yaml, nil)
		wantErr(t, err, tt.want)
	}
}

// attachments.maxBytes: read, 0 allowed (none read), a range outside
// refused with the key and the fix.
func TestAttachmentsConfig(t *testing.T) {
	c, err := loadString("attachments:\n  maxBytes: 0\n", nil)
	if err != nil || c.Attachments.MaxBytes != 0 {
		t.Fatalf("%+v, %v", c.Attachments, err)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"attachments:\n  maxBytes: -1\n", "mnemo.yaml:2: attachments.maxBytes: -1 is out of range; use 0 to 4194304 bytes (0 = none read)"},
		{"attachments:\n  maxBytes: 4194305\n", "attachments.maxBytes: 4194305 is out of range"},
		{"attachments:\n  maxbytes: 5\n", `unknown key "attachments.maxbytes" (did you mean "attachments.maxBytes"?)`},
	} {
		_, err := loadString(tt.yaml, nil)
		wantErr(t, err, tt.want)
	}
}
