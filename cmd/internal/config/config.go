package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
)

const (
	// DefaultFile is read from the working directory when --config is not
	// given and the file exists.
	DefaultFile = "mnemo.yaml"
	// OpenAIBaseURL is the LLM endpoint used when an API key is set but no
	// base URL.
	OpenAIBaseURL = "https://api.openai.com/v1"
	// DefaultOllamaURL is probed when neither an API key nor a base URL is set.
	DefaultOllamaURL = "http://127.0.0.1:11434/v1"

	ollamaProbeTimeout = 3 * time.Second
)

// ErrNoLLM is wrapped by ResolveLLM when no LLM endpoint is configured and no
// local Ollama answers. The caller exits 2 on it.
var ErrNoLLM = errors.New("no LLM configured")

// Config is the whole configuration. YAML keys are camelCase exactly as in
// the tags; unknown keys, wrong case included, are refused. Ranges are in
// Validate.
type Config struct {
	LLM           LLM                 `yaml:"llm"`
	Memory        Memory              `yaml:"memory"`
	State         State               `yaml:"state"`
	Agent         Agent               `yaml:"agent"`
	MaxReplyChars int                 `yaml:"maxReplyChars"` // top level: it bounds every platform's replies
	Reflector     Reflector           `yaml:"reflector"`
	Slack         Slack               `yaml:"slack"`
	Discord       Discord             `yaml:"discord"`
	Identities    map[string][]string `yaml:"identities"` // name → ["slack:T01ABC/U02DEF", "discord:80351110224678912"]
	Server        Server              `yaml:"server"`
	Shutdown      Shutdown            `yaml:"shutdown"`
	History       History             `yaml:"history"`
	Log           Log                 `yaml:"log"`
}

// LLM is the "llm:" section.
type LLM struct {
	BaseURL          string        `yaml:"baseURL"`        // "" = not set (see ResolveLLM)
	APIKey           string        `yaml:"apiKey"`         // secret
	Model            string        `yaml:"model"`          //
	ReflectorModel   string        `yaml:"reflectorModel"` // "" in the file = llm.model
	Timeout          time.Duration `yaml:"timeout"`
	MaxRetries       int           `yaml:"maxRetries"`       // 0 = no retry
	MaxResponseBytes int           `yaml:"maxResponseBytes"` // bytes of one response read at most
}

// Memory is the "memory:" section; sizes are in bytes.
type Memory struct {
	DataDir     string `yaml:"dataDir"`
	IndexBudget int    `yaml:"indexBudget"`
	ReadCap     int    `yaml:"readCap"`
	WriteCap    int    `yaml:"writeCap"`
}

// State is the "state:" section.
type State struct {
	Dir string `yaml:"dir"` // "" in the file = "state" beside memory.dataDir
}

// Agent is the "agent:" section.
type Agent struct {
	MaxSteps      int `yaml:"maxSteps"`
	HistoryTurns  int `yaml:"historyTurns"` // 0 = no short-term history
	MaxConcurrent int `yaml:"maxConcurrent"`
}

// Reflector is the "reflector:" section.
type Reflector struct {
	Idle        time.Duration `yaml:"idle"`
	MaxTurns    int           `yaml:"maxTurns"`
	MaxSteps    int           `yaml:"maxSteps"`
	FactsBudget int           `yaml:"factsBudget"` // bytes
}

// Slack is the "slack:" section.
type Slack struct {
	BotToken      string `yaml:"botToken"`      // secret
	AppToken      string `yaml:"appToken"`      // secret
	APIURL        string `yaml:"apiURL"`        // always ends in "/"
	ChannelMemory string `yaml:"channelMemory"` // full|read|off
}

// Discord is the "discord:" section.
type Discord struct {
	BotToken      string   `yaml:"botToken"` // secret, without "Bot "
	APIURL        string   `yaml:"apiURL"`   // always ends in "/"
	ChannelMemory string   `yaml:"channelMemory"`
	GuildIDs      []string `yaml:"guildIDs"`     // where /memory is registered at once; none = globally
	ShardID       int      `yaml:"shardID"`      // 0 ≤ shardID < shardCount
	ShardCount    int      `yaml:"shardCount"`   // processes the guilds are split across
	ReplyMention  bool     `yaml:"replyMention"` // whether a reply pings the author it answers
}

// Server is the "server:" section.
type Server struct {
	Listen string `yaml:"listen"` // host:port of /healthz, /readyz, /metrics
}

// Shutdown is the "shutdown:" section.
type Shutdown struct {
	// Grace: after SIGTERM or SIGINT, how long running tasks and
	// reflections may take to finish before their model calls are
	// cancelled (unfinished reflections stay journaled).
	Grace time.Duration `yaml:"grace"`
}

// History is the "history:" section: the earlier versions of memory files
// kept in <state>/history.
type History struct {
	Keep   int           `yaml:"keep"`   // versions per file
	MaxAge time.Duration `yaml:"maxAge"` // older versions are dropped
}

// Log is the "log:" section.
type Log struct {
	Format string `yaml:"format"` // text|json
	Level  string `yaml:"level"`  // debug|info|warn|error
}

// Default is the configuration used when there is no file and no
// environment. deploy/mnemo.yaml writes it out (a test keeps them equal).
func Default() *Config {
	return &Config{
		LLM: LLM{Model: "gpt-4o-mini", ReflectorModel: "gpt-4o-mini", Timeout: 60 * time.Second, MaxRetries: 3,
			MaxResponseBytes: openai.DefaultMaxResponseBytes},
		Memory:        Memory{DataDir: filepath.Join("data", "memory"), IndexBudget: 4096, ReadCap: 65536, WriteCap: 32768},
		State:         State{Dir: filepath.Join("data", "state")},
		Agent:         Agent{MaxSteps: 8, HistoryTurns: 10, MaxConcurrent: 8},
		MaxReplyChars: agent.DefaultMaxReplyChars,
		Reflector:     Reflector{Idle: 2 * time.Minute, MaxTurns: 20, MaxSteps: 12, FactsBudget: 16384},
		Slack:         Slack{APIURL: "https://slack.com/api/", ChannelMemory: "read"},
		Discord:       Discord{APIURL: "https://discord.com/", ChannelMemory: "read", ShardCount: 1},
		Server:        Server{Listen: "127.0.0.1:9090"},
		Shutdown:      Shutdown{Grace: 20 * time.Second},
		History:       History{Keep: 50, MaxAge: 90 * 24 * time.Hour},
		Log:           Log{Format: "text", Level: "info"},
	}
}

// EnvVar is an environment variable that wins over the file when set and
// not blank (surrounding white space is trimmed): its name, the key it
// overrides and that key's field.
type EnvVar struct {
	Name, Key string
	Field     *string
}

// Env lists the environment variables of c's keys.
func Env(c *Config) []EnvVar {
	return []EnvVar{
		{"OPENAI_BASE_URL", "llm.baseURL", &c.LLM.BaseURL},
		{"OPENAI_API_KEY", "llm.apiKey", &c.LLM.APIKey},
		{"MNEMO_MODEL", "llm.model", &c.LLM.Model},
		{"MNEMO_REFLECTOR_MODEL", "llm.reflectorModel", &c.LLM.ReflectorModel},
		{"MNEMO_DATA_DIR", "memory.dataDir", &c.Memory.DataDir},
		{"SLACK_BOT_TOKEN", "slack.botToken", &c.Slack.BotToken},
		{"SLACK_APP_TOKEN", "slack.appToken", &c.Slack.AppToken},
		{"SLACK_API_URL", "slack.apiURL", &c.Slack.APIURL},
		{"DISCORD_BOT_TOKEN", "discord.botToken", &c.Discord.BotToken},
		{"DISCORD_API_URL", "discord.apiURL", &c.Discord.APIURL},
	}
}

// complete fills blank strings from Default, derives llm.reflectorModel and
// state.dir when they are blank, and normalises: folders cleaned, secrets
// trimmed, the platform API URLs ending in "/". Numbers and durations are
// left alone: an explicit 0 is judged by Validate.
func (c *Config) complete() {
	d := Default()
	d.LLM.ReflectorModel = c.LLM.Model
	if strings.TrimSpace(c.LLM.Model) == "" {
		d.LLM.ReflectorModel = d.LLM.Model
	}
	if strings.TrimSpace(c.Memory.DataDir) != "" {
		d.State.Dir = filepath.Join(filepath.Dir(filepath.Clean(c.Memory.DataDir)), "state")
	}
	for _, f := range []struct{ p, def *string }{
		{&c.LLM.Model, &d.LLM.Model}, {&c.LLM.ReflectorModel, &d.LLM.ReflectorModel},
		{&c.Memory.DataDir, &d.Memory.DataDir}, {&c.State.Dir, &d.State.Dir},
		{&c.Slack.APIURL, &d.Slack.APIURL}, {&c.Slack.ChannelMemory, &d.Slack.ChannelMemory},
		{&c.Discord.APIURL, &d.Discord.APIURL}, {&c.Discord.ChannelMemory, &d.Discord.ChannelMemory},
		{&c.Server.Listen, &d.Server.Listen}, {&c.Log.Format, &d.Log.Format}, {&c.Log.Level, &d.Log.Level},
	} {
		if strings.TrimSpace(*f.p) == "" {
			*f.p = *f.def
		}
	}
	c.Memory.DataDir, c.State.Dir = filepath.Clean(c.Memory.DataDir), filepath.Clean(c.State.Dir)
	for _, p := range []*string{&c.LLM.APIKey, &c.Slack.BotToken, &c.Slack.AppToken, &c.Discord.BotToken} {
		*p = strings.TrimSpace(*p)
	}
	for _, p := range []*string{&c.Slack.APIURL, &c.Discord.APIURL} {
		if !strings.HasSuffix(*p, "/") {
			*p += "/"
		}
	}
	if len(c.Discord.GuildIDs) == 0 {
		c.Discord.GuildIDs = nil // "guildIDs: []" is the default
	}
	if len(c.Identities) == 0 {
		c.Identities = nil
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

// LogHandler returns a slog handler writing to w in log.format at log.level
// (info when the level is unknown).
func (c *Config) LogHandler(w io.Writer) slog.Handler {
	var level slog.Level
	if level.UnmarshalText([]byte(c.Log.Level)) != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Log.Format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// ResolveLLM picks the LLM endpoint: llm.baseURL (OPENAI_BASE_URL) when set;
// else the OpenAI API when an API key is set; else a local Ollama at ollamaURL
// (DefaultOllamaURL when ""), if probe says it answers, with a note for the
// log. When none applies the error wraps ErrNoLLM. c is not changed.
func (c *Config) ResolveLLM(ctx context.Context, probe func(ctx context.Context, baseURL string) error, ollamaURL string) (baseURL, note string, err error) {
	switch {
	case c.LLM.BaseURL != "":
		return c.LLM.BaseURL, "", nil
	case c.LLM.APIKey != "":
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
		ollamaURL, c.LLM.Model), nil
}
