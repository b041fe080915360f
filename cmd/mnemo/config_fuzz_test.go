package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// FuzzLoadConfig: arbitrary bytes never panic; an accepted config passes
// Validate again and never shows its secrets; every problem is reported on a
// line of its own that names the file.
func FuzzLoadConfig(f *testing.F) {
	for _, name := range []string{"full.yaml", "typo.yaml", "syntax.yaml", "tabs.yaml", "two-docs.yaml", "anchors.yaml", "bom.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "config", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", "mnemo.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, s := range []string{
		"",
		"llm:\n  model: a\n  model: b\n",
		"identities:\n  zhangsan: [\"slack:T01ABC/U02DEF\", \"discord:80351110224678912\"]\n",
		"a: &a [*a]\n",
		"llm: &x {timeout: 5s}\nreflector: *x\n",
		"<<: *x\n",
		"? {a: 1}\n: b\n",
		"llm: {maxRetries: 0x7fffffffffffffff}\n",
		"---\n---\n",
		"slack:\n  botToken: xoxb-S3CR3T\n  appToken: xapp-S3CR3T\n",
		"log: {level: info}\r\nserver: {listen: \"[::1]:0\"}\r\n",
		"discord:\n  guildIDs: [80351110224678912, \"41771983423143937\"]\n  shardID: 1\n  shardCount: 2\n  replyMention: true\n",
		"discord: {guildIDs: [\"1\", ~, [2], 0x10, 1, \"a\"], shardID: -1, shardCount: \"two\", replyMention: yes}\n",
		"discord: {guildIDs: 123, shardCount: 0, replyMention: \"false\"}\n",
	} {
		f.Add([]byte(s))
	}
	const mark = "S3CR3T"
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := loadConfigBytes("fuzz.yaml", data, noEnv)
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if line == "" {
					t.Fatalf("empty line in error %q", err)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v\n%s", err, data)
		}
		text := c.Redacted()
		if strings.Contains(text, mark) || strings.Contains(c.String(), mark) {
			t.Fatalf("Redacted shows a secret:\n%s", text)
		}
		// Redacted is YAML of the same keys and values, secrets aside.
		var back Config
		if err := yaml.Unmarshal([]byte(text), &back); err != nil {
			t.Fatalf("Redacted is not YAML: %v\n%s", err, text)
		}
		for _, s := range []string{back.LLM.APIKey, back.Slack.BotToken, back.Slack.AppToken, back.Discord.BotToken} {
			if s != "set" && s != "unset" {
				t.Fatalf("secret rendered as %q", s)
			}
		}
		back.LLM.APIKey, back.Slack.BotToken, back.Slack.AppToken, back.Discord.BotToken = c.LLM.APIKey, c.Slack.BotToken, c.Slack.AppToken, c.Discord.BotToken
		back.LLM.BaseURL, back.Slack.APIURL, back.Discord.APIURL = c.LLM.BaseURL, c.Slack.APIURL, c.Discord.APIURL
		if len(back.Identities) == 0 && len(c.Identities) == 0 {
			back.Identities = c.Identities
		}
		if len(back.Discord.GuildIDs) == 0 && len(c.Discord.GuildIDs) == 0 {
			back.Discord.GuildIDs = c.Discord.GuildIDs // [] and nil
		}
		if !reflect.DeepEqual(&back, c) {
			t.Fatalf("Redacted does not render the config:\n%s", text)
		}
	})
}
