package main

// Configuration of the mnemo binary: the YAML file, the environment variables
// that win over it, the defaults, and the checks that stop start-up with a
// message naming the key and the fix.
//
// Order of precedence, lowest first:
//
//  1. built-in defaults (DefaultConfig);
//  2. the YAML file (--config FILE, or ./mnemo.yaml when present);
//  3. environment variables, when set and not blank (envVars);
//  4. derived defaults for whatever is still empty (llm.reflectorModel follows
//     llm.model, state.dir sits beside memory.dataDir);
//  5. Validate.
//
// Command-line flags (--listen, --log-format, ...) are applied by the caller
// on the returned Config, which then calls Validate again.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
)

const (
	// DefaultConfigFile is read from the working directory when --config is
	// not given and the file exists.
	DefaultConfigFile = "mnemo.yaml"
	// OpenAIBaseURL is the LLM endpoint used when an API key is set but no
	// base URL.
	OpenAIBaseURL = "https://api.openai.com/v1"
	// DefaultOllamaURL is probed when neither an API key nor a base URL is set.
	DefaultOllamaURL = "http://127.0.0.1:11434/v1"

	maxConfigSize       = 1 << 20 // a config file larger than this is refused
	maxReportedErrors   = 20      // more problems than this are summarised
	maxIdentityAccounts = 10000   // bounds the work aliases can multiply
	maxDiscordGuilds    = 100     // discord.guildIDs: more guilds, register /memory globally
	maxDiscordShards    = 1024    // discord.shardCount: 2.5 million guilds at Discord's 2500 per shard
	ollamaProbeTimeout  = 3 * time.Second
	// Upper bounds of llm.maxResponseBytes and maxReplyChars.
	maxResponseBytesLimit = 1 << 30
	maxReplyCharsLimit    = 1 << 20
)

// ErrNoLLM is wrapped by ResolveLLM when no LLM endpoint is configured and no
// local Ollama answers. The caller exits 2 on it.
var ErrNoLLM = errors.New("no LLM configured")

// Config is the whole configuration. YAML keys are camelCase exactly as in
// the tags; unknown keys, wrong case included, are refused.
type Config struct {
	LLM           LLMConfig           `yaml:"llm"`
	Memory        MemoryConfig        `yaml:"memory"`
	State         StateConfig         `yaml:"state"`
	Agent         AgentConfig         `yaml:"agent"`
	MaxReplyChars int                 `yaml:"maxReplyChars"` // top level, as it bounds every platform's replies; default 16000, 100..1048576
	Reflector     ReflectorConfig     `yaml:"reflector"`
	Slack         SlackConfig         `yaml:"slack"`
	Discord       DiscordConfig       `yaml:"discord"`
	Identities    map[string][]string `yaml:"identities"` // name → ["slack:T01ABC/U02DEF", "discord:80351110224678912"]
	Server        ServerConfig        `yaml:"server"`
	Shutdown      ShutdownConfig      `yaml:"shutdown"`
	Log           LogConfig           `yaml:"log"`
}

// LLMConfig is the "llm:" section.
type LLMConfig struct {
	BaseURL          string   `yaml:"baseURL"`          // env OPENAI_BASE_URL; "" = not set (see ResolveLLM)
	APIKey           string   `yaml:"apiKey"`           // env OPENAI_API_KEY; secret
	Model            string   `yaml:"model"`            // env MNEMO_MODEL; default gpt-4o-mini
	ReflectorModel   string   `yaml:"reflectorModel"`   // env MNEMO_REFLECTOR_MODEL; default = Model
	Timeout          Duration `yaml:"timeout"`          // default 60s
	MaxRetries       int      `yaml:"maxRetries"`       // default 3, 0..10
	MaxResponseBytes int      `yaml:"maxResponseBytes"` // bytes of one response read at most; default 4 MiB, 1024..1 GiB
}

// MemoryConfig is the "memory:" section.
type MemoryConfig struct {
	DataDir     string `yaml:"dataDir"`     // env MNEMO_DATA_DIR; default data/memory
	IndexBudget int    `yaml:"indexBudget"` // bytes; default 4096, min 256
	ReadCap     int    `yaml:"readCap"`     // bytes; default 65536
	WriteCap    int    `yaml:"writeCap"`    // bytes; default 32768
}

// StateConfig is the "state:" section.
type StateConfig struct {
	Dir string `yaml:"dir"` // default: "state" beside memory.dataDir (data/state)
}

// AgentConfig is the "agent:" section.
type AgentConfig struct {
	MaxSteps      int `yaml:"maxSteps"`      // default 8
	HistoryTurns  int `yaml:"historyTurns"`  // default 10
	MaxConcurrent int `yaml:"maxConcurrent"` // default 8
}

// ReflectorConfig is the "reflector:" section.
type ReflectorConfig struct {
	Idle        Duration `yaml:"idle"`        // default 2m
	MaxTurns    int      `yaml:"maxTurns"`    // default 20
	MaxSteps    int      `yaml:"maxSteps"`    // default 12
	FactsBudget int      `yaml:"factsBudget"` // bytes; default 16384
}

// SlackConfig is the "slack:" section.
type SlackConfig struct {
	BotToken      string `yaml:"botToken"`      // env SLACK_BOT_TOKEN; secret
	AppToken      string `yaml:"appToken"`      // env SLACK_APP_TOKEN; secret
	APIURL        string `yaml:"apiURL"`        // env SLACK_API_URL; default https://slack.com/api/ (always ends in "/")
	ChannelMemory string `yaml:"channelMemory"` // full|read|off; default read
}

// DiscordConfig is the "discord:" section.
type DiscordConfig struct {
	BotToken      string   `yaml:"botToken"`      // env DISCORD_BOT_TOKEN; secret
	APIURL        string   `yaml:"apiURL"`        // env DISCORD_API_URL; default https://discord.com/ (always ends in "/")
	ChannelMemory string   `yaml:"channelMemory"` // full|read|off; default read
	GuildIDs      []string `yaml:"guildIDs"`      // guilds where /memory is registered (at once); default none = globally; ≤ 100 snowflakes
	ShardID       int      `yaml:"shardID"`       // this process's shard; default 0; 0 ≤ shardID < shardCount
	ShardCount    int      `yaml:"shardCount"`    // processes the guilds are split across; default 1, 1..1024
	ReplyMention  bool     `yaml:"replyMention"`  // whether a reply pings the author it answers; default false
}

// ServerConfig is the "server:" section.
type ServerConfig struct {
	Listen string `yaml:"listen"` // default 127.0.0.1:9090
}

// ShutdownConfig is the "shutdown:" section.
type ShutdownConfig struct {
	// Grace: after SIGTERM or SIGINT, how long running tasks and
	// reflections may take to finish before their model calls are
	// cancelled (unfinished reflections stay journaled); default 20s.
	Grace Duration `yaml:"grace"`
}

// LogConfig is the "log:" section.
type LogConfig struct {
	Format string `yaml:"format"` // text|json; default text
	Level  string `yaml:"level"`  // debug|info|warn|error; default info
}

// Duration is a time.Duration written the Go way in YAML: "90s", "2m", "1h30m".
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d like time.Duration ("2m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML accepts a Go duration string with a unit. A bare number is
// refused: it is not clear whether 60 means seconds or nanoseconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration such as \"90s\" or \"2m\", got %s", describe(n))
	}
	v := strings.TrimSpace(n.Value)
	if n.Tag == "!!int" || n.Tag == "!!float" {
		return fmt.Errorf("%s has no unit; write it as a duration such as \"%ss\" or \"2m\"", v, v)
	}
	p, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%s is not a duration; use a number with a unit: \"90s\", \"2m\", \"1h30m\"", quote(v))
	}
	*d = Duration(p)
	return nil
}

// envVar links an environment variable to the key it overrides.
type envVar struct {
	name string
	key  string
	ptr  func(*Config) *string
}

// envVars are the environment variables that win over the file when set and
// not blank (surrounding white space is trimmed).
var envVars = []envVar{
	{"OPENAI_BASE_URL", "llm.baseURL", func(c *Config) *string { return &c.LLM.BaseURL }},
	{"OPENAI_API_KEY", "llm.apiKey", func(c *Config) *string { return &c.LLM.APIKey }},
	{"MNEMO_MODEL", "llm.model", func(c *Config) *string { return &c.LLM.Model }},
	{"MNEMO_REFLECTOR_MODEL", "llm.reflectorModel", func(c *Config) *string { return &c.LLM.ReflectorModel }},
	{"MNEMO_DATA_DIR", "memory.dataDir", func(c *Config) *string { return &c.Memory.DataDir }},
	{"SLACK_BOT_TOKEN", "slack.botToken", func(c *Config) *string { return &c.Slack.BotToken }},
	{"SLACK_APP_TOKEN", "slack.appToken", func(c *Config) *string { return &c.Slack.AppToken }},
	{"SLACK_API_URL", "slack.apiURL", func(c *Config) *string { return &c.Slack.APIURL }},
	{"DISCORD_BOT_TOKEN", "discord.botToken", func(c *Config) *string { return &c.Discord.BotToken }},
	{"DISCORD_API_URL", "discord.apiURL", func(c *Config) *string { return &c.Discord.APIURL }},
}

// envFor returns the environment variable of key, or "".
func envFor(key string) string {
	for _, e := range envVars {
		if e.key == key {
			return e.name
		}
	}
	return ""
}

// secretKeys never appear in logs or error messages.
var secretKeys = map[string]bool{
	"llm.apiKey": true, "slack.botToken": true, "slack.appToken": true, "discord.botToken": true,
}

// baseDefaults is DefaultConfig without the derived defaults, so that a file
// or the environment setting llm.model or memory.dataDir moves them too.
func baseDefaults() *Config {
	c := &Config{}
	c.LLM.Model = "gpt-4o-mini"
	c.LLM.Timeout = Duration(60 * time.Second)
	c.LLM.MaxRetries = 3
	c.LLM.MaxResponseBytes = openai.DefaultMaxResponseBytes
	c.Memory.DataDir = "data/memory"
	c.Memory.IndexBudget = 4096
	c.Memory.ReadCap = 65536
	c.Memory.WriteCap = 32768
	c.Agent.MaxSteps = 8
	c.Agent.HistoryTurns = 10
	c.Agent.MaxConcurrent = 8
	c.MaxReplyChars = agent.DefaultMaxReplyChars
	c.Reflector.Idle = Duration(2 * time.Minute)
	c.Reflector.MaxTurns = 20
	c.Reflector.MaxSteps = 12
	c.Reflector.FactsBudget = 16384
	c.Slack.APIURL = "https://slack.com/api/"
	c.Slack.ChannelMemory = "read"
	c.Discord.APIURL = "https://discord.com/"
	c.Discord.ChannelMemory = "read"
	c.Discord.ShardID = 0
	c.Discord.ShardCount = 1
	c.Discord.ReplyMention = false
	c.Server.Listen = "127.0.0.1:9090"
	c.Shutdown.Grace = Duration(20 * time.Second)
	c.Log.Format = "text"
	c.Log.Level = "info"
	return c
}

// DefaultConfig returns the configuration used when there is no file and no
// environment.
func DefaultConfig() *Config {
	c := baseDefaults()
	c.applyDefaults()
	return c
}

// applyDefaults fills empty strings with their defaults, derives
// llm.reflectorModel and state.dir, and normalises: directories are cleaned,
// secrets trimmed of surrounding white space, slack.apiURL and discord.apiURL
// end in "/". Numbers and durations are left alone: an explicit 0 stays 0 and
// is judged by Validate.
func (c *Config) applyDefaults() {
	d := baseDefaults()
	fill := func(p *string, def string) {
		if strings.TrimSpace(*p) == "" {
			*p = def
		}
	}
	fill(&c.LLM.Model, d.LLM.Model)
	fill(&c.LLM.ReflectorModel, c.LLM.Model)
	fill(&c.Memory.DataDir, d.Memory.DataDir)
	c.Memory.DataDir = filepath.Clean(c.Memory.DataDir)
	fill(&c.State.Dir, filepath.Join(filepath.Dir(c.Memory.DataDir), "state"))
	c.State.Dir = filepath.Clean(c.State.Dir)
	fill(&c.Slack.APIURL, d.Slack.APIURL)
	fill(&c.Slack.ChannelMemory, d.Slack.ChannelMemory)
	fill(&c.Discord.APIURL, d.Discord.APIURL)
	fill(&c.Discord.ChannelMemory, d.Discord.ChannelMemory)
	fill(&c.Server.Listen, d.Server.Listen)
	fill(&c.Log.Format, d.Log.Format)
	fill(&c.Log.Level, d.Log.Level)
	for _, p := range []*string{&c.LLM.APIKey, &c.Slack.BotToken, &c.Slack.AppToken, &c.Discord.BotToken} {
		*p = strings.TrimSpace(*p)
	}
	for _, p := range []*string{&c.Slack.APIURL, &c.Discord.APIURL} {
		if !strings.HasSuffix(*p, "/") {
			*p += "/"
		}
	}
}

// LoadConfig reads the configuration. With explicit false, path "" means
// ./mnemo.yaml, and a missing file means defaults only; with explicit true
// (--config given) a missing file is an error. getenv nil means os.Getenv.
// Every problem found is reported, each on its own line, naming the file,
// line and key.
func LoadConfig(path string, explicit bool, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if path == "" {
		if explicit {
			return nil, errors.New("--config needs a file name")
		}
		path = DefaultConfigFile
	}
	data, err := readConfigFile(path)
	switch {
	case err == nil:
	case !explicit && errors.Is(err, fs.ErrNotExist):
		data = nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("config file %s does not exist", path)
	default:
		return nil, err
	}
	return loadConfigBytes(path, data, getenv)
}

func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("config file %s is larger than %d bytes; is it the right file?", path, maxConfigSize)
	}
	return data, nil
}

// loadConfigBytes is LoadConfig after the file has been read; name is used in
// messages.
func loadConfigBytes(name string, data []byte, getenv func(string) string) (*Config, error) {
	l := &loader{file: name, origin: map[string]string{}}
	c := baseDefaults()
	if root := l.parse(data); root != nil {
		l.decodeRoot(root, c)
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	for _, e := range envVars {
		if v := strings.TrimSpace(getenv(e.name)); v != "" {
			*e.ptr(c) = v
			l.origin[e.key] = "env " + e.name
		}
	}
	c.applyDefaults()
	if err := c.validate(l.origin); err != nil {
		return nil, err
	}
	return c, nil
}

// loader decodes a yaml.Node tree into a Config by hand, so that every
// problem names its full dotted key, file and line.
type loader struct {
	file   string
	errs   []string
	origin map[string]string // key → "file:line" or "env NAME"
}

func (l *loader) errorf(line int, format string, args ...any) {
	at := l.file + ": "
	if line > 0 {
		at = fmt.Sprintf("%s:%d: ", l.file, line)
	}
	l.errs = append(l.errs, at+fmt.Sprintf(format, args...))
}

func (l *loader) err() error { return joinProblems(l.errs) }

// joinProblems makes one error of a list of messages, at most
// maxReportedErrors of them.
func joinProblems(list []string) error {
	if len(list) == 0 {
		return nil
	}
	if len(list) > maxReportedErrors {
		more := len(list) - maxReportedErrors
		list = append(list[:maxReportedErrors:maxReportedErrors], fmt.Sprintf("... and %d more problems", more))
	}
	return errors.New(strings.Join(list, "\n"))
}

// parse returns the root node of the single document, or nil for an empty
// file or after reporting an error.
func (l *loader) parse(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if err != io.EOF {
			l.syntaxError(data, err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case err == io.EOF:
	case err != nil:
		l.syntaxError(data, err)
		return nil
	default:
		l.errorf(extra.Line, "a second YAML document starts here; a config file holds one document (remove the \"---\" and merge the keys)")
		return nil
	}
	if len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// safeDecode turns a panic in the YAML parser into an error.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the YAML parser failed: %v", r)
		}
	}()
	return dec.Decode(n)
}

var yamlErrLine = regexp.MustCompile(`^line (\d+): (.*)$`)

func (l *loader) syntaxError(data []byte, err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		line = findErrorLine(data, err.Error())
	}
	if line > 0 && strings.Contains(msg, "cannot start any token") {
		if lines := bytes.Split(data, []byte("\n")); line <= len(lines) && bytes.Contains(lines[line-1], []byte("\t")) {
			msg += " (a tab: YAML is indented with spaces only)"
		}
	}
	l.errorf(line, "YAML syntax error: %s", msg)
}

// findErrorLine finds the line of a parser error that does not carry one: the
// shortest prefix of whole lines that fails the same way.
func findErrorLine(data []byte, msg string) int {
	var ends []int // ends[i] = offset just past line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(k int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[k-1]]))
		for {
			var n yaml.Node
			err := safeDecode(dec, &n)
			if err == io.EOF {
				return false
			}
			if err != nil {
				return err.Error() == msg
			}
		}
	}
	k := sort.Search(len(ends), func(i int) bool { return fails(i + 1) }) + 1
	if k > len(ends) || !fails(k) {
		return 0
	}
	return k
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe names what a node is, for "expected X, got Y". Scalars are not
// quoted here, as they might be secrets.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping (keys and values)"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}

// quote quotes a value for a message, cut to a readable length.
func quote(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "..."
	}
	return strconv.Quote(s)
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (l *loader) decodeRoot(n *yaml.Node, c *Config) {
	line := n.Line
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(line, "the top level must be a mapping of sections (llm:, memory:, slack:, ...), got %s", describe(n))
		return
	}
	l.decodeStruct(n, reflect.ValueOf(c).Elem(), "")
}

// keyName returns the key of a mapping pair, or reports why it cannot be one.
func (l *loader) keyName(k *yaml.Node, prefix string) (string, bool) {
	line := k.Line
	k = deref(k)
	switch {
	case k.Kind != yaml.ScalarNode:
		l.errorf(line, "a key in %s is %s; keys must be plain names", sectionName(prefix), describe(k))
		return "", false
	case k.Tag == "!!merge":
		l.errorf(line, "merge keys (\"<<\") are not supported in %s; write the keys out", sectionName(prefix))
		return "", false
	}
	return k.Value, true
}

func sectionName(prefix string) string {
	if prefix == "" {
		return "the top level"
	}
	return "\"" + prefix + "\""
}

func (l *loader) decodeStruct(n *yaml.Node, v reflect.Value, prefix string) {
	fields := yamlFields(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, ok := l.keyName(k, prefix)
		if !ok {
			continue
		}
		full := joinKey(prefix, name)
		if first, dup := seen[name]; dup {
			l.errorf(k.Line, "duplicate key %q (already set at line %d)", full, first)
			continue
		}
		seen[name] = k.Line
		idx, known := fields[name]
		if !known {
			l.errorf(k.Line, "unknown key %q%s", full, suggest(name, prefix, fields))
			continue
		}
		l.decodeValue(val, v.Field(idx), full)
	}
}

var (
	durationType    = reflect.TypeFor[Duration]()
	stringSliceType = reflect.TypeFor[[]string]()
)

func (l *loader) decodeValue(n *yaml.Node, v reflect.Value, key string) {
	line := n.Line
	n = deref(n)
	if isNull(n) {
		return // "key:" with no value keeps the default
	}
	l.origin[key] = fmt.Sprintf("%s:%d", l.file, line)
	switch {
	case v.Type() == durationType:
		if err := v.Addr().Interface().(*Duration).UnmarshalYAML(n); err != nil {
			l.errorf(line, "%s: %v", key, err)
		}
	case v.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			l.errorf(line, "%s: expected a section of keys (a mapping), got %s", key, describe(n))
			return
		}
		l.decodeStruct(n, v, key)
	case v.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			l.errorf(line, "%s: expected a string, got %s", key, describe(n))
			return
		}
		v.SetString(n.Value)
	case v.Kind() == reflect.Int:
		i, ok := scalarInt(n)
		if !ok {
			got := describe(n)
			if n.Kind == yaml.ScalarNode {
				got = quote(n.Value)
			}
			l.errorf(line, "%s: expected an integer, got %s", key, got)
			return
		}
		v.SetInt(int64(i))
	case v.Kind() == reflect.Bool:
		b, ok := scalarBool(n)
		if !ok {
			got := describe(n)
			if n.Kind == yaml.ScalarNode {
				got = quote(n.Value)
			}
			l.errorf(line, "%s: expected true or false, got %s", key, got)
			return
		}
		v.SetBool(b)
	case v.Type() == stringSliceType:
		l.decodeStringList(n, v, key, line)
	default: // map[string][]string: identities
		l.decodeIdentities(n, v, key)
	}
}

// scalarBool reads a boolean: a YAML bool (true, false, True, FALSE) or a
// quoted "true" or "false". YAML 1.1's yes, no, on and off are refused: YAML
// 1.2 reads them as strings, and "off" is also a channelMemory value.
func scalarBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch n.Tag {
	case "!!bool":
		var b bool
		return b, n.Decode(&b) == nil
	case "!!str":
		switch strings.TrimSpace(n.Value) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// listExamples shows a list of each []string key, for "expected a list";
// TestListExamples keeps it complete.
var listExamples = map[string]string{
	"discord.guildIDs": `["80351110224678912", "41771983423143937"]`,
}

// decodeStringList reads a list of single values, each kept as written
// (unquoted numbers too, so that a 20-digit id is not rounded). An empty list
// is nil, as the default is. Each item's line is recorded for Validate.
func (l *loader) decodeStringList(n *yaml.Node, v reflect.Value, key string, line int) {
	if n.Kind != yaml.SequenceNode {
		l.errorf(line, "%s: expected a list such as %s, got %s; write even one item as a list (in brackets, or on its own line after \"- \")",
			key, listExamples[key], describe(n))
		return
	}
	var list []string
	for i, item := range n.Content {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		iline := item.Line
		item = deref(item)
		switch {
		case isNull(item):
			l.errorf(iline, "%s: the item is empty; give a value or remove the \"-\"", ikey)
			continue
		case item.Kind != yaml.ScalarNode:
			l.errorf(iline, "%s: expected a single value, got %s", ikey, describe(item))
			continue
		}
		l.origin[ikey] = fmt.Sprintf("%s:%d", l.file, iline)
		list = append(list, item.Value)
	}
	v.Set(reflect.ValueOf(list))
}

// scalarInt reads an integer: a YAML int (1000, 1_000, 0x400) or a quoted
// decimal ("1000").
func scalarInt(n *yaml.Node) (int, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	var i int
	switch n.Tag {
	case "!!int":
		if n.Decode(&i) != nil {
			return 0, false
		}
		return i, true
	case "!!str":
		i, err := strconv.Atoi(strings.TrimSpace(n.Value))
		return i, err == nil
	}
	return 0, false
}

func (l *loader) decodeIdentities(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind != yaml.MappingNode {
		l.errorf(n.Line, "%s: expected a mapping of names to lists of accounts, e.g. zhangsan: [\"slack:T01ABC/U02DEF\", \"discord:80351110224678912\"], got %s", key, describe(n))
		return
	}
	m := map[string][]string{}
	seen := map[string]int{}
	total := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, ok := l.keyName(k, key)
		if !ok {
			continue
		}
		full := key + "." + name
		if first, dup := seen[name]; dup {
			l.errorf(k.Line, "duplicate name %q (already listed at line %d)", full, first)
			continue
		}
		seen[name] = k.Line
		l.origin[full] = fmt.Sprintf("%s:%d", l.file, k.Line)
		line := val.Line
		val = deref(val)
		accounts := []string{}
		switch {
		case isNull(val):
		case val.Kind != yaml.SequenceNode:
			l.errorf(line, "%s: expected a list of accounts such as [\"slack:T01ABC/U02DEF\", \"discord:80351110224678912\"], got %s", full, describe(val))
			continue
		}
		if total += len(val.Content); total > maxIdentityAccounts {
			l.errorf(line, "%s: more than %d accounts in identities; is this the right file?", full, maxIdentityAccounts)
			break
		}
		for j, item := range val.Content {
			ikey := fmt.Sprintf("%s[%d]", full, j)
			iline := item.Line
			item = deref(item)
			if item.Kind != yaml.ScalarNode || isNull(item) {
				l.errorf(iline, "%s: expected an account such as \"slack:T01ABC/U02DEF\" or \"discord:80351110224678912\", got %s", ikey, describe(item))
				continue
			}
			l.origin[ikey] = fmt.Sprintf("%s:%d", l.file, iline)
			accounts = append(accounts, item.Value)
		}
		m[name] = accounts
	}
	v.Set(reflect.ValueOf(m))
}

// yamlFields maps the YAML keys of a struct type to field indexes.
func yamlFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		m[yamlName(t.Field(i))] = i
	}
	return m
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// knownKeys lists every key of the schema by its dotted name, sections
// included.
var knownKeys = func() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			full := joinKey(prefix, yamlName(f))
			out = append(out, full)
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(f.Type, full)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}()

// suggest returns " (did you mean ...?)" for an unknown key, or "".
func suggest(name, prefix string, siblings map[string]int) string {
	lname := strings.ToLower(name)
	best, bestDist := "", 3
	for s := range siblings {
		d := editDistance(lname, strings.ToLower(s))
		if d < bestDist || (d == bestDist && s < best) {
			best, bestDist = s, d
		}
	}
	if best != "" && (bestDist == 0 || 2*bestDist < len(best)) {
		return fmt.Sprintf(" (did you mean %q?)", joinKey(prefix, best))
	}
	// The right key in the wrong place, or written flat ("memory.dataDir:").
	var elsewhere []string
	for _, k := range knownKeys {
		last := k[strings.LastIndex(k, ".")+1:]
		if strings.EqualFold(last, name) || strings.EqualFold(k, name) || strings.EqualFold(k, joinKey(prefix, name)) {
			elsewhere = append(elsewhere, strconv.Quote(k))
		}
	}
	if len(elsewhere) == 0 {
		return ""
	}
	hint := ""
	if strings.Contains(name, ".") {
		hint = "; write it nested, one section per level"
	}
	return fmt.Sprintf(" (did you mean %s?%s)", strings.Join(elsewhere, " or "), hint)
}

// editDistance is the optimal string alignment distance (Levenshtein with
// transpositions).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Validate checks every value and reports every problem, one per line, each
// naming the key and the fix. It does not change c. Call it again after
// applying command-line flags.
func (c *Config) Validate() error { return c.validate(nil) }

// checker collects validation problems; origin says where each key was set.
type checker struct {
	origin map[string]string
	errs   []problem
}

// problem is one validation message and the file line it is about (0: none).
type problem struct {
	line int
	msg  string
}

// label names a key the way the operator set it: the environment variable
// when it came from there, else file:line and the key.
func (ch *checker) label(key string) string {
	src := ch.origin[key]
	switch {
	case strings.HasPrefix(src, "env "):
		return strings.TrimPrefix(src, "env ")
	case src != "":
		return src + ": " + key
	}
	if env := envFor(key); env != "" {
		return key + " (" + env + ")"
	}
	return key
}

// line is the line where key was set in the file, or 0.
func (ch *checker) line(key string) int {
	src := ch.origin[key]
	n, _ := strconv.Atoi(src[strings.LastIndex(src, ":")+1:])
	return n
}

// add reports a problem; format's first verb receives the key's label.
func (ch *checker) add(key, format string, args ...any) {
	ch.errs = append(ch.errs, problem{ch.line(key), fmt.Sprintf(format, append([]any{ch.label(key)}, args...)...)})
}

func (ch *checker) intRange(key string, v, lo, hi int, unit string) {
	if v < lo || v > hi {
		ch.add(key, "%s: %d is out of range; use %d to %d%s", v, lo, hi, unit)
	}
}

func (ch *checker) positive(key string, d Duration) {
	if d <= 0 {
		ch.add(key, "%s: must be greater than 0, got %s; write a duration such as \"90s\" or \"2m\"", d)
	}
}

func (ch *checker) oneOf(key, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	ch.add(key, "%s: %s is not one of %s", quote(v), strings.Join(allowed, ", "))
}

func (ch *checker) notEmpty(key, v string) bool {
	if strings.TrimSpace(v) == "" {
		ch.add(key, "%s: must not be empty")
		return false
	}
	return true
}

// httpURL checks an absolute http(s) URL; an empty one only when required.
func (ch *checker) httpURL(key, v string, required bool, example string) {
	if v == "" {
		if required {
			ch.add(key, "%s: must not be empty; the default is %q", example)
		}
		return
	}
	u, err := url.Parse(v)
	if err != nil {
		ch.add(key, "%s: is not a valid URL; use an absolute http(s) URL such as %q", example)
		return
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ch.add(key, "%s: %s is not an absolute http(s) URL; use one such as %q", quote(u.Redacted()), example)
	}
}

// token checks the shape of a secret without ever showing it.
func (ch *checker) token(key, v, prefix, hint string) {
	if v == "" {
		return
	}
	if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		ch.add(key, "%s contains spaces or control characters; give the token alone (no \"Bearer \" or \"Bot \" prefix, no quotes)")
		return
	}
	if prefix != "" && !strings.HasPrefix(v, prefix) {
		ch.add(key, "%s must start with %s; %s%s", prefix, hint, tokenKindHint(v))
	}
}

// tokenKindHint names the kind of a Slack token by its public prefix.
func tokenKindHint(v string) string {
	switch {
	case strings.HasPrefix(v, "xapp-"):
		return " (this is an app-level token; it belongs in SLACK_APP_TOKEN)"
	case strings.HasPrefix(v, "xoxb-"):
		return " (this is a bot token; it belongs in SLACK_BOT_TOKEN)"
	case strings.HasPrefix(v, "xoxp-"):
		return " (this is a user token; mnemo needs the bot token)"
	}
	return ""
}

func (c *Config) validate(origin map[string]string) error {
	ch := &checker{origin: origin}

	ch.httpURL("llm.baseURL", c.LLM.BaseURL, false, OpenAIBaseURL)
	ch.token("llm.apiKey", c.LLM.APIKey, "", "")
	ch.notEmpty("llm.model", c.LLM.Model)
	ch.notEmpty("llm.reflectorModel", c.LLM.ReflectorModel)
	ch.positive("llm.timeout", c.LLM.Timeout)
	ch.intRange("llm.maxRetries", c.LLM.MaxRetries, 0, 10, "")
	ch.intRange("llm.maxResponseBytes", c.LLM.MaxResponseBytes, 1024, maxResponseBytesLimit,
		" bytes (default 4194304)")

	dataOK := ch.notEmpty("memory.dataDir", c.Memory.DataDir)
	stateOK := ch.notEmpty("state.dir", c.State.Dir)
	if dataOK && stateOK && inside(c.State.Dir, c.Memory.DataDir) {
		ch.add("state.dir", "%s: %s is inside memory.dataDir %s, where every folder is a user's memory; put it beside, e.g. %s",
			quote(c.State.Dir), quote(c.Memory.DataDir), quote(besideState(c.Memory.DataDir)))
	}
	ch.intRange("memory.indexBudget", c.Memory.IndexBudget, 256, 1<<20, " bytes")
	ch.intRange("memory.readCap", c.Memory.ReadCap, 1024, 64<<20, " bytes")
	ch.intRange("memory.writeCap", c.Memory.WriteCap, 1024, 64<<20, " bytes")
	if c.Memory.WriteCap > c.Memory.ReadCap {
		ch.add("memory.writeCap", "%s: %d is larger than memory.readCap (%d), so written files could not be read back whole; lower it or raise memory.readCap",
			c.Memory.WriteCap, c.Memory.ReadCap)
	}

	ch.intRange("agent.maxSteps", c.Agent.MaxSteps, 1, 100, "")
	ch.intRange("agent.historyTurns", c.Agent.HistoryTurns, 0, 1000, "")
	ch.intRange("agent.maxConcurrent", c.Agent.MaxConcurrent, 1, 1024, "")
	ch.intRange("maxReplyChars", c.MaxReplyChars, agent.MinMaxReplyChars, maxReplyCharsLimit,
		" characters (default 16000)")

	ch.positive("reflector.idle", c.Reflector.Idle)
	ch.intRange("reflector.maxTurns", c.Reflector.MaxTurns, 1, 1000, "")
	ch.intRange("reflector.maxSteps", c.Reflector.MaxSteps, 1, 100, "")
	ch.intRange("reflector.factsBudget", c.Reflector.FactsBudget, 1, 16<<20, " bytes")

	ch.token("slack.botToken", c.Slack.BotToken, "xoxb-", "use the Bot User OAuth Token from the app's OAuth & Permissions page")
	ch.token("slack.appToken", c.Slack.AppToken, "xapp-", "create an app-level token with connections:write on the app's Basic Information page")
	switch {
	case c.Slack.BotToken != "" && c.Slack.AppToken == "":
		ch.add("slack.botToken", "%s is set but %s is not; Socket Mode needs both (or unset both to run without Slack)", ch.label("slack.appToken"))
	case c.Slack.BotToken == "" && c.Slack.AppToken != "":
		ch.add("slack.appToken", "%s is set but %s is not; Socket Mode needs both (or unset both to run without Slack)", ch.label("slack.botToken"))
	}
	ch.httpURL("slack.apiURL", c.Slack.APIURL, true, "https://slack.com/api/")
	ch.oneOf("slack.channelMemory", c.Slack.ChannelMemory, "full", "read", "off")

	if strings.HasPrefix(c.Discord.BotToken, "Bot ") {
		ch.add("discord.botToken", "%s: give the token without the \"Bot \" prefix; mnemo adds it")
	} else {
		ch.token("discord.botToken", c.Discord.BotToken, "", "")
	}
	ch.httpURL("discord.apiURL", c.Discord.APIURL, true, "https://discord.com/")
	ch.oneOf("discord.channelMemory", c.Discord.ChannelMemory, "full", "read", "off")
	c.validateGuildIDs(ch)
	ch.intRange("discord.shardCount", c.Discord.ShardCount, 1, maxDiscordShards, " (1 = one process serves every guild)")
	switch n := c.Discord.ShardCount; {
	case c.Discord.ShardID < 0:
		ch.add("discord.shardID", "%s: %d is out of range; shard ids count from 0 to discord.shardCount-1, one per process", c.Discord.ShardID)
	case n >= 1 && c.Discord.ShardID >= n:
		ch.add("discord.shardID", "%s: %d is out of range; with discord.shardCount %d use 0 to %d, a different one in each process", c.Discord.ShardID, n, n-1)
	}

	c.validateIdentities(ch)

	if host, port, err := net.SplitHostPort(c.Server.Listen); err != nil || !validPort(port) || strings.ContainsAny(host, " /") {
		ch.add("server.listen", "%s: %s must be host:port, e.g. \"127.0.0.1:9090\" or \":9090\"", quote(c.Server.Listen))
	}
	ch.positive("shutdown.grace", c.Shutdown.Grace)
	ch.oneOf("log.format", c.Log.Format, "text", "json")
	ch.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	// In file order; problems from the environment or defaults last.
	sort.SliceStable(ch.errs, func(i, j int) bool {
		a, b := ch.errs[i].line, ch.errs[j].line
		return a != 0 && (b == 0 || a < b)
	})
	msgs := make([]string, len(ch.errs))
	for i, p := range ch.errs {
		msgs[i] = p.msg
	}
	return joinProblems(msgs)
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535 && p == strconv.Itoa(n)
}

// besideState suggests a state folder next to the memory folder.
func besideState(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	return filepath.Join(filepath.Dir(dataDir), "state")
}

// inside reports whether dir is root or inside it, comparing absolute paths.
func inside(dir, root string) bool {
	a, err1 := filepath.Abs(dir)
	b, err2 := filepath.Abs(root)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(b, a)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

var (
	slackAccountRe   = regexp.MustCompile(`^slack:([A-Za-z0-9]{1,32})/([A-Za-z0-9]{1,32})$`)
	discordAccountRe = regexp.MustCompile(`^discord:[0-9]{1,20}$`)
)

// guildIDRe is a Discord snowflake as Copy Server ID shows it.
var guildIDRe = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)

func (c *Config) validateGuildIDs(ch *checker) {
	const key = "discord.guildIDs"
	ids := c.Discord.GuildIDs
	if len(ids) > maxDiscordGuilds {
		ch.add(key, "%s: %d guild ids, at most %d; for more guilds leave the list empty to register /memory globally", len(ids), maxDiscordGuilds)
	}
	first := map[string]string{} // id → key where first listed
	for i, id := range ids {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		if _, err := strconv.ParseUint(id, 10, 64); err != nil || !guildIDRe.MatchString(id) {
			ch.add(ikey, "%s: %s is not a guild id; a guild id is the number shown by Copy Server ID with Developer Mode on", quote(id))
			continue
		}
		if at, dup := first[id]; dup {
			ch.add(ikey, "%s: %s is already listed at %s; list each guild once", quote(id), at)
			continue
		}
		first[id] = ikey
	}
}

// ValidUserName reports whether name follows the memory user-name grammar:
// ASCII letters, digits, '.', '_', '-'; 1 to 64 of them; not starting with '.'.
func ValidUserName(name string) bool { return agent.ValidateUser(name) == nil }

func (c *Config) validateIdentities(ch *checker) {
	names := make([]string, 0, len(c.Identities))
	for name := range c.Identities {
		names = append(names, name)
	}
	// In file order, so that the later of two claims to an account is refused.
	sort.Slice(names, func(i, j int) bool {
		li, lj := ch.line("identities."+names[i]), ch.line("identities."+names[j])
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
	owner := map[string]string{} // account → key where first listed
	for _, name := range names {
		key := "identities." + name
		if !ValidUserName(name) {
			ch.add(key, "%s: %s is not a valid user name; use 1 to 64 ASCII letters, digits, '.', '_' or '-', not starting with '.'", quote(name))
		}
		accounts := c.Identities[name]
		if len(accounts) == 0 {
			ch.add(key, "%s: lists no accounts; add some such as \"slack:TEAM_ID/USER_ID\" or \"discord:USER_ID\", or remove the name")
		}
		for i, a := range accounts {
			ikey := fmt.Sprintf("%s[%d]", key, i)
			m := slackAccountRe.FindStringSubmatch(a)
			switch {
			case m != nil && (strings.ToUpper(m[1]) != m[1] || strings.ToUpper(m[2]) != m[2]):
				ch.add(ikey, "%s: %s: Slack IDs are upper case, as in \"slack:T01ABC/U02DEF\"", quote(a))
				continue
			case m == nil && !discordAccountRe.MatchString(a):
				ch.add(ikey, "%s: %s must be \"slack:TEAM_ID/USER_ID\" or \"discord:USER_ID\" (digits)", quote(a))
				continue
			}
			if first, taken := owner[a]; taken {
				ch.add(ikey, "%s: %s is already linked at %s; an account can belong to one name only", quote(a), first)
				continue
			}
			owner[a] = ikey
		}
	}
}

// IdentityIndex maps each linked account, written as in the config
// ("slack:TEAM_ID/USER_ID", "discord:USER_ID"), to its memory user name.
func (c *Config) IdentityIndex() map[string]string {
	idx := map[string]string{}
	for name, accounts := range c.Identities {
		for _, a := range accounts {
			idx[a] = name
		}
	}
	return idx
}

// SlackEnabled reports whether both Slack tokens are set.
func (c *Config) SlackEnabled() bool { return c.Slack.BotToken != "" && c.Slack.AppToken != "" }

// DiscordEnabled reports whether the Discord bot token is set.
func (c *Config) DiscordEnabled() bool { return c.Discord.BotToken != "" }

// SlogLevel is log.level as a slog.Level (info when unknown).
func (c *Config) SlogLevel() slog.Level {
	switch c.Log.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// LogHandler returns a slog handler writing to w in log.format at log.level.
func (c *Config) LogHandler(w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: c.SlogLevel()}
	if c.Log.Format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

func setOrUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return "set"
}

// redactURL hides a password in a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

// redacted returns a copy safe to show: secrets are "set" or "unset",
// passwords in URLs are hidden.
func (c Config) redacted() Config {
	c.LLM = c.LLM.redacted()
	c.Slack = c.Slack.redacted()
	c.Discord = c.Discord.redacted()
	return c
}

func (c LLMConfig) redacted() LLMConfig {
	c.APIKey = setOrUnset(c.APIKey)
	c.BaseURL = redactURL(c.BaseURL)
	return c
}

func (c SlackConfig) redacted() SlackConfig {
	c.BotToken, c.AppToken = setOrUnset(c.BotToken), setOrUnset(c.AppToken)
	c.APIURL = redactURL(c.APIURL)
	return c
}

func (c DiscordConfig) redacted() DiscordConfig {
	c.BotToken = setOrUnset(c.BotToken)
	c.APIURL = redactURL(c.APIURL)
	return c
}

// Redacted renders the configuration as YAML for logs and --help output, with
// secrets shown as "set" or "unset".
func (c Config) Redacted() string {
	return sectionYAML(c.redacted())
}

// String is Redacted, so that printing a Config never shows a secret.
func (c Config) String() string { return c.Redacted() }

// GoString is Redacted, for %#v.
func (c Config) GoString() string { return c.Redacted() }

// LogValue makes slog log the redacted configuration as nested groups.
func (c Config) LogValue() slog.Value { return logValue(reflect.ValueOf(c.redacted())) }

// String, GoString and LogValue of the sections that hold secrets redact them.
func (c LLMConfig) String() string       { return sectionYAML(c.redacted()) }
func (c LLMConfig) GoString() string     { return c.String() }
func (c LLMConfig) LogValue() slog.Value { return logValue(reflect.ValueOf(c.redacted())) }

func (c SlackConfig) String() string       { return sectionYAML(c.redacted()) }
func (c SlackConfig) GoString() string     { return c.String() }
func (c SlackConfig) LogValue() slog.Value { return logValue(reflect.ValueOf(c.redacted())) }

func (c DiscordConfig) String() string       { return sectionYAML(c.redacted()) }
func (c DiscordConfig) GoString() string     { return c.String() }
func (c DiscordConfig) LogValue() slog.Value { return logValue(reflect.ValueOf(c.redacted())) }

// sectionYAML renders v as YAML indented like deploy/mnemo.yaml. Plain
// strings, ints, bools, lists and maps cannot fail to encode.
func sectionYAML(v any) string {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(v)
	_ = enc.Close()
	return b.String()
}

// logValue turns an already redacted struct into a slog group.
func logValue(v reflect.Value) slog.Value {
	var attrs []slog.Attr
	for i := range v.NumField() {
		name := yamlName(v.Type().Field(i))
		switch f := v.Field(i).Interface().(type) {
		case Duration:
			attrs = append(attrs, slog.String(name, f.String()))
		case string:
			attrs = append(attrs, slog.String(name, f))
		case int:
			attrs = append(attrs, slog.Int(name, f))
		case bool:
			attrs = append(attrs, slog.Bool(name, f))
		case []string:
			attrs = append(attrs, slog.Any(name, f))
		case map[string][]string:
			names := make([]string, 0, len(f))
			for n := range f {
				names = append(names, n)
			}
			sort.Strings(names)
			group := make([]slog.Attr, 0, len(names))
			for _, n := range names {
				group = append(group, slog.Any(n, f[n]))
			}
			attrs = append(attrs, slog.Attr{Key: name, Value: slog.GroupValue(group...)})
		default: // a section
			attrs = append(attrs, slog.Attr{Key: name, Value: logValue(v.Field(i))})
		}
	}
	return slog.GroupValue(attrs...)
}

// ResolveLLM picks the LLM endpoint: llm.baseURL (OPENAI_BASE_URL) when set;
// else the OpenAI API when an API key is set; else a local Ollama at ollamaURL
// (DefaultOllamaURL when ""), if probe says it answers, with a note for the
// log. When none applies the error wraps ErrNoLLM. cfg is not changed.
func ResolveLLM(ctx context.Context, cfg *Config, probe func(ctx context.Context, baseURL string) error, ollamaURL string) (baseURL string, note string, err error) {
	switch {
	case cfg.LLM.BaseURL != "":
		return cfg.LLM.BaseURL, "", nil
	case cfg.LLM.APIKey != "":
		return OpenAIBaseURL, "", nil
	}
	if ollamaURL == "" {
		ollamaURL = DefaultOllamaURL
	}
	perr := errors.New("no probe")
	if probe != nil {
		pctx, cancel := context.WithTimeout(ctx, ollamaProbeTimeout)
		perr = probe(pctx, ollamaURL)
		cancel()
	}
	if perr != nil {
		return "", "", fmt.Errorf("%w: neither OPENAI_API_KEY nor OPENAI_BASE_URL is set (nor llm.apiKey or llm.baseURL in the config file), "+
			"and no local Ollama answered at %s (%v).\n"+
			"Set OPENAI_API_KEY to use the OpenAI API, or OPENAI_BASE_URL to use any OpenAI-compatible server, "+
			"or run Ollama (https://ollama.com): `ollama serve`, then `ollama pull llama3.2` and set MNEMO_MODEL=llama3.2",
			ErrNoLLM, ollamaURL, perr)
	}
	return ollamaURL, fmt.Sprintf("no OPENAI_API_KEY or OPENAI_BASE_URL set; using local Ollama at %s with model %q (set MNEMO_MODEL to a model you have pulled)",
		ollamaURL, cfg.LLM.Model), nil
}
