package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

func TestRuleEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"llm.maxRetries":           "MNEMO_LLM_MAX_RETRIES",
		"llm.baseURL":              "MNEMO_LLM_BASE_URL",
		"discord.guildIDs":         "MNEMO_DISCORD_GUILD_IDS",
		"discord.shardID":          "MNEMO_DISCORD_SHARD_ID",
		"maxReplyChars":            "MNEMO_MAX_REPLY_CHARS",
		"identities":               "MNEMO_IDENTITIES",
		"limits.totalTokensPerDay": "MNEMO_LIMITS_TOTAL_TOKENS_PER_DAY",
		"attachments.maxBytes":     "MNEMO_ATTACHMENTS_MAX_BYTES",
		"a.b2C":                    "MNEMO_A_B2_C",
		"history.maxAge":           "MNEMO_HISTORY_MAX_AGE",
		"reflector.factsBudget":    "MNEMO_REFLECTOR_FACTS_BUDGET",
		"memory.dataDir":           "MNEMO_MEMORY_DATA_DIR",
		"slack.channelMemory":      "MNEMO_SLACK_CHANNEL_MEMORY",
		"limits.messagesPerMinute": "MNEMO_LIMITS_MESSAGES_PER_MINUTE",
		"llm.maxResponseBytes":     "MNEMO_LLM_MAX_RESPONSE_BYTES",
		"discord.replyMention":     "MNEMO_DISCORD_REPLY_MENTION",
		"shutdown.grace":           "MNEMO_SHUTDOWN_GRACE",
		"server.listen":            "MNEMO_SERVER_LISTEN",
		"log.level":                "MNEMO_LOG_LEVEL",
		"agent.historyTurns":       "MNEMO_AGENT_HISTORY_TURNS",
		"reflector.maxTurns":       "MNEMO_REFLECTOR_MAX_TURNS",
		"llm.reflectorModel":       "MNEMO_LLM_REFLECTOR_MODEL",
		"memory.searchBudget":      "MNEMO_MEMORY_SEARCH_BUDGET",
		"discord.shardCount":       "MNEMO_DISCORD_SHARD_COUNT",
		"slack.allow":              "MNEMO_SLACK_ALLOW",
		"state.dir":                "MNEMO_STATE_DIR",
		"agent.maxConcurrent":      "MNEMO_AGENT_MAX_CONCURRENT",
		"history.keep":             "MNEMO_HISTORY_KEEP",
		"limits.tokensPerDay":      "MNEMO_LIMITS_TOKENS_PER_DAY",
		"memory.indexBudget":       "MNEMO_MEMORY_INDEX_BUDGET",
		"llm.stream":               "MNEMO_LLM_STREAM",
		"discord.access":           "MNEMO_DISCORD_ACCESS",
		"reflector.idle":           "MNEMO_REFLECTOR_IDLE",
		"log.format":               "MNEMO_LOG_FORMAT",
		"memory.writeCap":          "MNEMO_MEMORY_WRITE_CAP",
		"memory.rollupAfter":       "MNEMO_MEMORY_ROLLUP_AFTER",
		"llm.timeout":              "MNEMO_LLM_TIMEOUT",
		"discord.allow":            "MNEMO_DISCORD_ALLOW",
		"agent.maxSteps":           "MNEMO_AGENT_MAX_STEPS",
		"memory.readCap":           "MNEMO_MEMORY_READ_CAP",
		"reflector.maxSteps":       "MNEMO_REFLECTOR_MAX_STEPS",
		"slack.access":             "MNEMO_SLACK_ACCESS",
		"discord.channelMemory":    "MNEMO_DISCORD_CHANNEL_MEMORY",
		"llm.apiKey":               "MNEMO_LLM_API_KEY",
		"slack.botToken":           "MNEMO_SLACK_BOT_TOKEN",
	} {
		if got := ruleEnvName(key); got != want {
			t.Errorf("ruleEnvName(%q) = %q, want %q", key, got, want)
		}
	}
	// The names DESIGN.md gives are kept; every other key has the rule's.
	designed := map[string]string{
		"llm.baseURL": "OPENAI_BASE_URL", "llm.apiKey": "OPENAI_API_KEY", "llm.model": "MNEMO_MODEL",
		"llm.reflectorModel": "MNEMO_REFLECTOR_MODEL", "memory.dataDir": "MNEMO_DATA_DIR",
		"slack.botToken": "SLACK_BOT_TOKEN", "slack.appToken": "SLACK_APP_TOKEN", "slack.apiURL": "SLACK_API_URL",
		"discord.botToken": "DISCORD_BOT_TOKEN", "discord.apiURL": "DISCORD_API_URL",
	}
	seen := map[string]bool{}
	for _, e := range Env(Default(platforms...)) {
		want := designed[e.Key]
		if want == "" {
			want = ruleEnvName(e.Key)
		}
		if e.Name != want || seen[e.Name] {
			t.Errorf("%s: variable %s (seen before: %v), want %s", e.Key, e.Name, seen[e.Name], want)
		}
		seen[e.Name] = true
	}
	if keys := newSchema(Default(platforms...)).keys; len(seen) != len(keys)-len(sectionKeys(keys)) {
		t.Errorf("%d variables for %d keys", len(seen), len(keys)-len(sectionKeys(keys)))
	}
}

// sectionKeys are the keys of keys that are sections.
func sectionKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if slices.ContainsFunc(keys, func(o string) bool { return strings.HasPrefix(o, k+".") }) {
			out = append(out, k)
		}
	}
	return out
}

// envCase is one key set two ways: by the file and by its variable.
type envCase struct {
	key      string
	fileYAML string // the value as written in the file
	fileWant any
	envText  string // the variable's value
	envWant  any
}

var everyKey = []envCase{
	{"llm.baseURL", "http://file.example/v1", "http://file.example/v1", "http://env.example/v1", "http://env.example/v1"},
	{"llm.apiKey", "file-key", "file-key", "env-key", "env-key"},
	{"llm.model", "file-model", "file-model", "env-model", "env-model"},
	{"llm.reflectorModel", "file-refl", "file-refl", "env-refl", "env-refl"},
	{"llm.timeout", "30s", 30 * time.Second, "45s", 45 * time.Second},
	{"llm.maxRetries", "2", 2, "5", 5},
	{"llm.maxResponseBytes", "2048", 2048, "4096", 4096},
	{"llm.stream", "false", false, "true", true},
	{"memory.dataDir", "/file/memory", "/file/memory", "/env/memory", "/env/memory"},
	{"memory.indexBudget", "300", 300, "400", 400},
	{"memory.searchBudget", "600", 600, "700", 700},
	{"memory.readCap", "4096", 4096, "8192", 8192},
	{"memory.writeCap", "2048", 2048, "4096", 4096},
	{"memory.rollupAfter", "6", 6, "0", 0},
	{"state.dir", "/file/state", "/file/state", "/env/state", "/env/state"},
	{"agent.maxSteps", "3", 3, "4", 4},
	{"agent.historyTurns", "5", 5, "0", 0},
	{"agent.maxConcurrent", "2", 2, "3", 3},
	{"maxReplyChars", "200", 200, "300", 300},
	{"reflector.idle", "1m", time.Minute, "3m", 3 * time.Minute},
	{"reflector.maxTurns", "7", 7, "8", 8},
	{"reflector.maxSteps", "9", 9, "10", 10},
	{"reflector.factsBudget", "100", 100, "200", 200},
	{"slack.botToken", "xoxb-file", "xoxb-file", "xoxb-env", "xoxb-env"},
	{"slack.appToken", "xapp-file", "xapp-file", "xapp-env", "xapp-env"},
	{"slack.apiURL", "http://file-slack/", "http://file-slack/", "http://env-slack/", "http://env-slack/"},
	{"slack.channelMemory", "full", "full", "off", "off"},
	{"slack.access", "allowlist", "allowlist", "pairing", "pairing"},
	{"slack.allow", "[T01ABC]", []string{"T01ABC"}, "T02DEF, C03GHI", []string{"T02DEF", "C03GHI"}},
	{"discord.botToken", "file-discord", "file-discord", "env-discord", "env-discord"},
	{"discord.apiURL", "http://file-discord/", "http://file-discord/", "http://env-discord/", "http://env-discord/"},
	{"discord.channelMemory", "full", "full", "off", "off"},
	{"discord.guildIDs", `["11"]`, []string{"11"}, "22,33", []string{"22", "33"}},
	{"discord.shardID", "1", 1, "2", 2},
	{"discord.shardCount", "3", 3, "4", 4},
	{"discord.replyMention", "true", true, "false", false},
	{"discord.access", "allowlist", "allowlist", "pairing", "pairing"},
	{"discord.allow", `["guild:1"]`, []string{"guild:1"}, "user:2,role:3", []string{"user:2", "role:3"}},
	{"identities", `{ann: ["discord:1"]}`, map[string][]string{"ann": {"discord:1"}},
		"bob=discord:2, slack:T1/U2; cy=discord:3;", map[string][]string{"bob": {"discord:2", "slack:T1/U2"}, "cy": {"discord:3"}}},
	{"limits.messagesPerMinute", "1", 1, "2", 2},
	{"limits.tokensPerDay", "3", 3, "4", 4},
	{"limits.totalTokensPerDay", "5", 5, "6", 6},
	{"attachments.maxBytes", "1024", 1024, "2048", 2048},
	{"server.listen", "127.0.0.1:1", "127.0.0.1:1", ":2", ":2"},
	{"shutdown.grace", "5s", 5 * time.Second, "6s", 6 * time.Second},
	{"history.keep", "7", 7, "8", 8},
	{"history.maxAge", "1h", time.Hour, "2h", 2 * time.Hour},
	{"log.format", "json", "json", "text", "text"},
	{"log.level", "warn", "warn", "error", "error"},
}

// everyKeyFile is a file setting every key of everyKey to its file value.
func everyKeyFile() string {
	var b strings.Builder
	section := ""
	for _, c := range everyKey {
		sec, name, nested := strings.Cut(c.key, ".")
		switch {
		case !nested:
			section = ""
			fmt.Fprintf(&b, "%s: %s\n", c.key, c.fileYAML)
		case sec != section:
			section = sec
			fmt.Fprintf(&b, "%s:\n", sec)
			fallthrough
		default:
			fmt.Fprintf(&b, "  %s: %s\n", name, c.fileYAML)
		}
	}
	return b.String()
}

// TestEveryKeyBothWays sets every key by the file only, by its variable
// only, and by both: the variable wins, and Overridden names each key the
// file set too, never its value.
func TestEveryKeyBothWays(t *testing.T) {
	vars := map[string]string{}
	for _, e := range Env(Default(platforms...)) {
		vars[e.Key] = e.Name
	}
	if len(everyKey) != len(vars) {
		t.Fatalf("the table covers %d keys, there are %d", len(everyKey), len(vars))
	}
	env := map[string]string{}
	for _, c := range everyKey {
		env[vars[c.key]] = c.envText
	}
	check := func(name string, c *Config, env bool) {
		t.Helper()
		byKey := map[string]any{}
		for _, e := range Env(c) {
			byKey[e.Key] = reflect.ValueOf(e.Field).Elem().Interface()
		}
		for _, k := range everyKey {
			want := k.fileWant
			if env {
				want = k.envWant
			}
			if !reflect.DeepEqual(byKey[k.key], want) {
				t.Errorf("%s: %s = %#v, want %#v", name, k.key, byKey[k.key], want)
			}
		}
	}

	c, err := loadString(everyKeyFile(), nil)
	if err != nil {
		t.Fatalf("file only: %v\n%s", err, everyKeyFile())
	}
	check("file only", c, false)
	if o := c.Overridden(); len(o) != 0 {
		t.Errorf("file only: overridden %v", o)
	}

	c, err = loadString("", env)
	if err != nil {
		t.Fatalf("variables only: %v", err)
	}
	check("variables only", c, true)
	if o := c.Overridden(); len(o) != 0 {
		t.Errorf("variables only: overridden %v", o)
	}

	c, err = loadString(everyKeyFile(), env)
	if err != nil {
		t.Fatalf("both: %v", err)
	}
	check("both", c, true)
	var want []string
	for _, k := range everyKey {
		want = append(want, k.key+" ("+vars[k.key]+")")
	}
	if got := c.Overridden(); !slices.Equal(got, want) {
		t.Errorf("both: overridden\n%v\nwant\n%v", got, want)
	}
	for _, o := range c.Overridden() {
		for _, k := range everyKey {
			if strings.Contains(o, k.envText) || strings.Contains(o, k.fileYAML) && len(k.fileYAML) > 3 {
				t.Errorf("overridden %q shows a value", o)
			}
		}
	}
}

// TestEnvBadValues: a value a variable cannot hold stops start-up naming
// the variable, the key and what to write, and never shows a string key's
// value.
func TestEnvBadValues(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"MNEMO_LLM_TIMEOUT": "30"}, []string{"MNEMO_LLM_TIMEOUT (llm.timeout)", `"30" has no unit`, `"30s"`}},
		{map[string]string{"MNEMO_LLM_TIMEOUT": "soon"}, []string{"MNEMO_LLM_TIMEOUT", `"soon" is not a duration`}},
		{map[string]string{"MNEMO_LLM_MAX_RETRIES": "three"}, []string{"MNEMO_LLM_MAX_RETRIES (llm.maxRetries)", `"three" is not an integer; write decimal digits`}},
		{map[string]string{"MNEMO_LLM_STREAM": "yes"}, []string{"MNEMO_LLM_STREAM (llm.stream)", `"yes" is not true or false`}},
		{map[string]string{"MNEMO_SLACK_ALLOW": "T01,,T02"}, []string{"MNEMO_SLACK_ALLOW (slack.allow): item 2 is empty; separate the items with single commas"}},
		{map[string]string{"MNEMO_IDENTITIES": "discord:1"}, []string{"MNEMO_IDENTITIES (identities): entry 1 has no NAME=", "NAME=ACCOUNT,ACCOUNT"}},
		{map[string]string{"MNEMO_IDENTITIES": "ann=discord:1;ann=discord:2"}, []string{"MNEMO_IDENTITIES", `"ann" is named twice`}},
		{map[string]string{"MNEMO_IDENTITIES": "ann="}, []string{"MNEMO_IDENTITIES", `"ann": item 1 is empty`}},
		{map[string]string{"MNEMO_LLM_MODEL": "x"}, []string{"MNEMO_LLM_MODEL is set, but mnemo does not read it: the variable of llm.model is MNEMO_MODEL; rename it"}},
		{map[string]string{"MNEMO_SLACK_BOT_TOKEN": "xoxb-S3CR3T"}, []string{"the variable of slack.botToken is SLACK_BOT_TOKEN"}},
		// Values are checked like the file's, each naming the variable (and the item).
		{map[string]string{"MNEMO_SLACK_ACCESS": "closed"}, []string{`MNEMO_SLACK_ACCESS: "closed" is not one of open, allowlist, pairing`}},
		{map[string]string{"MNEMO_DISCORD_ALLOW": "guild:1,bogus"}, []string{"MNEMO_DISCORD_ALLOW (item 2): "}},
		{map[string]string{"MNEMO_IDENTITIES": "ann=discord:x"}, []string{"MNEMO_IDENTITIES (ann, item 1): \"discord:x\" must be"}},
		{map[string]string{"MNEMO_IDENTITIES": "ann=discord:1;bob=discord:1"}, []string{"is already linked at"}},
		{map[string]string{"MNEMO_LLM_MAX_RETRIES": "99"}, []string{"MNEMO_LLM_MAX_RETRIES: 99 is out of range; use 0 to 10"}},
	} {
		_, err := loadString("slack:\n  allow: [T09XYZ]\n", tc.env)
		wantErr(t, err, tc.want...)
		if err != nil && strings.Contains(err.Error(), "S3CR3T") {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

// FuzzEnvValue: any value of any variable never panics; it is taken or
// refused with a message naming the variable, and a list taken reads back
// the same when written out again.
func FuzzEnvValue(f *testing.F) {
	for i, c := range everyKey {
		f.Add(i, c.envText)
	}
	f.Add(0, "a,,b")
	f.Add(37, "x=;=y")
	f.Fuzz(func(t *testing.T, i int, value string) {
		vars := Env(Default(platforms...))
		if i < 0 {
			i = -i
		}
		e := vars[i%len(vars)]
		c, err := loadString("", map[string]string{e.Name: value})
		if err != nil {
			if !strings.Contains(err.Error(), e.Name) && !strings.Contains(err.Error(), e.Key) {
				t.Fatalf("%s=%q: the error names neither the variable nor the key: %v", e.Name, value, err)
			}
			return
		}
		for _, got := range Env(c) {
			if got.Key != e.Key {
				continue
			}
			if l, ok := reflect.ValueOf(got.Field).Elem().Interface().([]string); ok && strings.TrimSpace(value) != "" {
				again, err := envList(strings.Join(l, ","))
				if err != nil || !slices.Equal(again, l) {
					t.Fatalf("%s=%q read as %q, which reads back as %q, %v", e.Name, value, l, again, err)
				}
			}
		}
	})
}

// A section written twice, null the first time, is refused by name and
// panics nowhere; a key whose section the decoder set to nil is passed
// over, not followed through the nil pointer.
func TestNullSectionTwice(t *testing.T) {
	_, err := loadString("discord:\ndiscord:\n  shardID: 1\n", nil)
	wantErr(t, err, `duplicate key "discord"`)

	c := Default(platforms...)
	v, s := c.view(), newSchema(c)
	v.Field(s.field["discord"][0]).SetZero() // as yaml.v3 does for "discord: null"
	d := &decoder{file: "f.yaml", schema: s, seen: map[*yaml.Node]bool{},
		entries: []entry{{key: "discord.shardID", n: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"}}}}
	d.scalars(v)
	if len(d.problems) != 0 || discordOf(c).ShardID != 0 {
		t.Errorf("problems %v, shardID %d", d.problems, discordOf(c).ShardID)
	}
}

// The secrets are the keys tagged so, the model's key and the registered
// platforms' tokens: what a world-readable file must not hold (cmd/mnemo
// warns of it). A platform's token untagged would go unwarned.
func TestEnvSecrets(t *testing.T) {
	var got []string
	for _, e := range Env(Default(platforms...)) {
		if e.Secret {
			got = append(got, e.Key+" "+e.Name)
		}
	}
	want := []string{"llm.apiKey OPENAI_API_KEY", "slack.botToken SLACK_BOT_TOKEN", "slack.appToken SLACK_APP_TOKEN", "discord.botToken DISCORD_BOT_TOKEN"}
	if !slices.Equal(got, want) {
		t.Errorf("secrets %q, want %q", got, want)
	}
}
