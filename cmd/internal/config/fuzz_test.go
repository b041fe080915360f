package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// FuzzParse: arbitrary bytes never panic; every problem is reported on a
// line of its own that names the file or a key; an accepted config passes
// Validate again and reads back the same when written out as YAML.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"full.yaml", "typo.yaml", "syntax.yaml", "tabs.yaml", "two-docs.yaml", "anchors.yaml", "bom.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "mnemo.yaml"))
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
		"llm:\n  model: a\n timeout: 3s\n",
		"slack:\n  botToken: xoxb-S3CR3T\n  appToken: xapp-S3CR3T\n",
		"log: {level: info}\r\nserver: {listen: \"[::1]:0\"}\r\n",
		"discord:\n  guildIDs: [80351110224678912, \"41771983423143937\"]\n  shardID: 1\n  shardCount: 2\n  replyMention: true\n",
		"discord: {guildIDs: [\"1\", ~, [2], 0x10, 1, \"a\"], shardID: -1, shardCount: \"two\", replyMention: yes}\n",
		"discord: {guildIDs: 123, shardCount: 0, replyMention: \"false\"}\n",
		"llm: {timeout: 5, maxRetries: 1.5}\nreflector: {idle: soon}\nshutdown: {grace: [1]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data, noEnv, platforms...)
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if line == "" || strings.HasPrefix(line, "line ") {
					t.Fatalf("line %q of error %q names no file or key", line, err)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v\n%s", err, data)
		}
		out, err := yaml.Marshal(c.view().Interface())
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("back.yaml", out, noEnv, platforms...)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("written out and read back: %v\n%s", err, out)
		}
	})
}
