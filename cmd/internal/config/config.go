package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/bots/platform"
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
//
// The doc comment of each field is its entry in the configuration
// reference (cmd/mnemo/CONFIG.md), which configdoc generates from this
// struct, Default and Env: write it for the operator, in sentences.
type Config struct {
	LLM    LLM    `yaml:"llm"`
	Memory Memory `yaml:"memory"`
	State  State  `yaml:"state"`
	Agent  Agent  `yaml:"agent"`
	// Longest reply, in characters, on every platform: a top-level key,
	// not under `agent:`, since it bounds every platform's replies. A
	// longer answer is cut at a line or word break, an open code block is
	// closed, a note `*(reply cut: it was longer than maxReplyChars, N
	// characters)*` ends it, and a warning is logged. 100 to 1048576. Slack and Discord
	// also post at most 5 messages per reply, the fifth ending with a note
	// that the reply was cut.
	MaxReplyChars int       `yaml:"maxReplyChars"`
	Reflector     Reflector `yaml:"reflector"`

	// The chat platforms' sections ("slack:", "discord:") come here, in
	// the order they registered: each platform declares its own
	// (bots/platform, Platform.Settings), and Parse is given them.

	// Platform accounts that share one memory: a memory user name →
	// its accounts, `slack:TEAM_ID/USER_ID` (upper case, as Slack shows
	// them) or `discord:USER_ID` (digits), e.g. `identities: {zhangsan:
	// ["slack:T01ABC/U02DEF", "discord:80351110224678912"]}`. The name
	// follows the user name rules (1 to 64 ASCII letters, digits, '.', '_',
	// '-', not starting with '.'); an account belongs to one name only.
	// Without an entry, Slack users are `slack-<TEAM_ID>-<USER_ID>` and
	// Discord users `discord-<USER_ID>`; such a name is refused as a key
	// unless its own account is listed under it (it would share that
	// person's memory).
	Identities  map[string][]string `yaml:"identities"`
	Limits      Limits              `yaml:"limits"`
	Attachments Attachments         `yaml:"attachments"`
	Server      Server              `yaml:"server"`
	Shutdown    Shutdown            `yaml:"shutdown"`
	History     History             `yaml:"history"`
	Log         Log                 `yaml:"log"`

	overridden []string // keys both the file and the environment set (Overridden)
	platforms  []platformSection
}

// platformSection is a platform's configuration section: its name (its
// YAML key) and its value, a pointer to the struct the platform declared.
type platformSection struct {
	name string
	v    any
}

// LLM is the "llm:" section: the model server.
type LLM struct {
	// OpenAI-compatible endpoint. Empty means the OpenAI API
	// (`https://api.openai.com/v1`) when an API key is set, else a local
	// Ollama at `http://127.0.0.1:11434/v1` (or `MNEMO_OLLAMA_URL`) when one
	// answers; with neither, mnemo exits 2 and says what to set.
	BaseURL string `yaml:"baseURL" env:"OPENAI_BASE_URL"`
	// API key; a secret: prefer the environment, and it is never logged.
	// Empty is fine for local servers. A config file holding it (or a
	// platform token) that its group or others may read (0644) gets a
	// warning from chat, serve and `mnemo memory check`: chmod 600 it.
	APIKey string `yaml:"apiKey" env:"OPENAI_API_KEY" secret:"true"`
	// Chat model. With Ollama, use a model you have pulled (e.g. `llama3.2`).
	Model string `yaml:"model" env:"MNEMO_MODEL"`
	// Model of the background reflector that writes memory. Empty means
	// the same as `llm.model`.
	ReflectorModel string `yaml:"reflectorModel" env:"MNEMO_REFLECTOR_MODEL"`
	// Timeout of one model request, per attempt.
	Timeout time.Duration `yaml:"timeout"`
	// Retries of a failed model request (429, 5xx, network), 0 to 10;
	// 0 means none.
	MaxRetries int `yaml:"maxRetries"`
	// Most bytes of one model response read (4 MiB); a longer response
	// fails the request, unretried. 1024 to 1073741824.
	MaxResponseBytes int `yaml:"maxResponseBytes"`
	// Ask the model to stream its replies, so people see the first words
	// while the rest is written (`mnemo chat`, Slack, Discord). `false`
	// for a server that does not stream: replies then come whole.
	Stream bool `yaml:"stream"`
}

// Memory is the "memory:" section; sizes are in bytes.
type Memory struct {
	// Root of the per-user Markdown memory:
	// `<dataDir>/<user>/facts/*.md` and `episodes/YYYY-MM.md`.
	DataDir string `yaml:"dataDir" env:"MNEMO_DATA_DIR"`
	// Bytes of the memory index the model sees at the start of a task, at
	// least 256 (past it, facts first, then the newest episodes).
	IndexBudget int `yaml:"indexBudget"`
	// Bytes of a `memory_search` result, at least 512: the best entries
	// first, each cut around its match, and a line saying how many more
	// matched.
	SearchBudget int `yaml:"searchBudget"`
	// Largest part of a file `memory_read` returns, in bytes (a larger file
	// is cut with a note). 1024 to 67108864.
	ReadCap int `yaml:"readCap"`
	// Largest file the reflector may write, in bytes; at most
	// `memory.readCap`.
	WriteCap int `yaml:"writeCap"`
	// Months after which episode months are rolled up: once a quarter's
	// months are all this old, one model call summarises them into
	// `episodes/YYYY-Qn.md` (and a past year's quarters into
	// `episodes/YYYY.md`), which the index shows in their place; the
	// month files are never changed. 0 turns roll-ups off; at most 120.
	RollupAfter int `yaml:"rollupAfter"`
}

// State is the "state:" section.
type State struct {
	// Internal state: journals, history, the index cache, the lock, the
	// control socket and the chat's line history. Empty means `state`
	// beside `memory.dataDir` (`data/state`). Must not be inside
	// `memory.dataDir`.
	Dir string `yaml:"dir"`
}

// Agent is the "agent:" section: the Thinker that answers.
type Agent struct {
	// Model calls of one answer's tool loop, 1 to 100.
	MaxSteps int `yaml:"maxSteps"`
	// Earlier turns of the same thread or DM kept as short-term context,
	// 0 to 1000; 0 means none.
	HistoryTurns int `yaml:"historyTurns"`
	// Messages answered at once across all users (one at a time per
	// conversation), 1 to 1024.
	MaxConcurrent int `yaml:"maxConcurrent"`
}

// Reflector is the "reflector:" section: the background writer of memory.
type Reflector struct {
	// Reflect once a conversation has been quiet this long.
	Idle time.Duration `yaml:"idle"`
	// Reflect after this many turns since the last reflection, without
	// waiting for `reflector.idle`; 1 to 1000.
	MaxTurns int `yaml:"maxTurns"`
	// Model calls of one reflection, 1 to 100.
	MaxSteps int `yaml:"maxSteps"`
	// Bytes of fact files pre-loaded in full into a reflection; past it
	// only their index, within a quarter of it (at least 4 KB). 1 to
	// 16777216.
	FactsBudget int `yaml:"factsBudget"`
}

// Limits is the "limits:" section: what the people who write to the bot in
// Slack and Discord may spend. The terminal chat (`mnemo chat`) is the
// operator's and has no limits. 0 means no limit. Over a limit, the person
// gets one plain reply a minute saying so, the model is not asked, and
// `mnemo_refused_total{reason}` counts the message.
type Limits struct {
	// Messages one person may send a minute, 0 to 10000: that many at once,
	// then one every minute/N. A message over it is not read: it is neither
	// journaled nor answered.
	MessagesPerMinute int `yaml:"messagesPerMinute"`
	// Model tokens (prompt + completion) the answers to one person and the
	// reflections on what they said may cost a day, 0 to 1000000000000;
	// days are UTC days (it starts again at 00:00 UTC). Before the model is
	// asked a message holds the message's estimate and the reply cap
	// (maxReplyChars/3), settled to the real cost after; a message is taken
	// while spent and held are under the limit, so at most one goes past
	// it, however many arrive at once. Tokens are what the server reports,
	// or mnemo's own count (bytes/3) when it reports none. The default
	// caps what any one stranger can spend: a few dozen answers a day with
	// memory.
	TokensPerDay int `yaml:"tokensPerDay"`
	// Model tokens every answer and reflection together may cost a UTC day,
	// 0 to 1000000000000; past it everyone is refused until 00:00 UTC. Held
	// and counted as for tokensPerDay. Reflections count toward it but are
	// never refused by it (memory would be lost), so they may overshoot it.
	TotalTokensPerDay int `yaml:"totalTokensPerDay"`
}

// Attachments is the "attachments:" section: files attached to messages in
// Slack and Discord.
type Attachments struct {
	// Bytes of text files read with one message, all its files together,
	// 0 to 4194304; 0 reads none. A text file (`.txt`, `.md`, `.log`,
	// code, a Slack snippet) is fetched with the platform's credential,
	// checked to be text and given to the model with the message, quoted
	// under its name and size; one larger than what is left is named, not
	// fetched, and a download longer than announced is cut here, with a
	// note. Images and other files are only named. The text counts toward
	// the person's token budget; the intake journal keeps the files' names
	// and addresses, and a message answered after a restart reads them
	// again. Slack needs the `files:read` scope.
	MaxBytes int `yaml:"maxBytes"`
}

// Server is the "server:" section.
type Server struct {
	// Address of `/healthz`, `/readyz` and `/metrics` (`mnemo serve`),
	// host:port; overridden by `--listen`. `:9090` listens on every
	// interface.
	Listen string `yaml:"listen"`
}

// Shutdown is the "shutdown:" section.
type Shutdown struct {
	// After SIGTERM or SIGINT (`mnemo serve` and `mnemo chat`), how long
	// running replies and reflections may take to finish; then their model
	// calls are cancelled and unfinished reflections stay journaled for the
	// next start. More than 0. A second signal stops at once (exit 130).
	Grace time.Duration `yaml:"grace"`
}

// History is the "history:" section: the earlier versions of memory files
// kept in <state>/history.
type History struct {
	// Versions kept per memory file (the newest is always kept), 1 to
	// 10000.
	Keep int `yaml:"keep"`
	// Versions older than this are dropped when a newer version of the
	// file is added (`2160h` is 90 days).
	MaxAge time.Duration `yaml:"maxAge"`
}

// Log is the "log:" section: the log on stderr.
type Log struct {
	// `text` (key=value) or `json` (one object a line); overridden by
	// `--log-format`.
	Format string `yaml:"format"`
	// `debug`, `info`, `warn` or `error`; `debug` adds message texts.
	Level string `yaml:"level"`
}

// Default is the configuration used when there is no file and no
// environment, with the sections of the platforms given at their
// defaults. deploy/mnemo.yaml writes it out (a test keeps them equal).
func Default(platforms ...platform.Platform) *Config {
	c := defaults()
	for _, p := range platforms {
		if p.Settings != nil {
			c.platforms = append(c.platforms, platformSection{p.Name, p.Settings()})
		}
	}
	return c
}

func defaults() *Config {
	return &Config{
		LLM: LLM{Model: "gpt-4o-mini", ReflectorModel: "gpt-4o-mini", Timeout: 60 * time.Second, MaxRetries: 3,
			MaxResponseBytes: openai.DefaultMaxResponseBytes, Stream: true},
		Memory:        Memory{DataDir: filepath.Join("data", "memory"), IndexBudget: 4096, SearchBudget: 4096, ReadCap: 65536, WriteCap: 32768, RollupAfter: 3},
		State:         State{Dir: filepath.Join("data", "state")},
		Agent:         Agent{MaxSteps: 8, HistoryTurns: 10, MaxConcurrent: 8},
		MaxReplyChars: agent.DefaultMaxReplyChars,
		Reflector:     Reflector{Idle: 2 * time.Minute, MaxTurns: 20, MaxSteps: 12, FactsBudget: 16384},
		Limits:        Limits{MessagesPerMinute: 20, TokensPerDay: 200_000},
		Attachments:   Attachments{MaxBytes: 256 << 10},
		Server:        Server{Listen: "127.0.0.1:9090"},
		Shutdown:      Shutdown{Grace: 20 * time.Second},
		History:       History{Keep: 50, MaxAge: 90 * 24 * time.Hour},
		Log:           Log{Format: "text", Level: "info"},
	}
}

// Derived are the keys that complete fills from another key's value when
// they are blank, with what that default is, as the reference shows it
// (Default holds what they come to with neither file nor environment).
var Derived = map[string]string{
	"llm.reflectorModel": "follows `llm.model`",
	"state.dir":          "`state` beside `memory.dataDir`",
}

// complete fills blank strings from Default, derives llm.reflectorModel and
// state.dir when they are blank, and normalises: folders cleaned, the key
// trimmed; each platform's section completes itself (Complete). Numbers
// and durations are left alone: an explicit 0 is judged by Validate.
func (c *Config) complete() {
	d := defaults()
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
		{&c.Server.Listen, &d.Server.Listen}, {&c.Log.Format, &d.Log.Format}, {&c.Log.Level, &d.Log.Level},
	} {
		if strings.TrimSpace(*f.p) == "" {
			*f.p = *f.def
		}
	}
	c.Memory.DataDir, c.State.Dir = filepath.Clean(c.Memory.DataDir), filepath.Clean(c.State.Dir)
	c.LLM.APIKey = strings.TrimSpace(c.LLM.APIKey)
	if len(c.Identities) == 0 {
		c.Identities = nil
	}
	for _, p := range c.platforms {
		if s, ok := p.v.(interface{ Complete() }); ok {
			s.Complete()
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

// Section is the section of the platform called name (a pointer to the
// struct it declared), or nil when there is none: a chat platform reads
// its own section by its name (bots/platform).
func (c *Config) Section(name string) any {
	for _, p := range c.platforms {
		if p.name == name {
			return p.v
		}
	}
	return nil
}

// view is c as one struct, for what walks every key (decoding, the
// schema, Env): a pointer to each of Config's sections and top-level keys,
// with the platforms' sections before identities, as they appear in a
// file. Through it, c's own fields are set.
func (c *Config) view() reflect.Value {
	cv := reflect.ValueOf(c).Elem()
	var fields []reflect.StructField
	var ptrs []reflect.Value
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Name == "Identities" {
			for j, p := range c.platforms {
				fields = append(fields, reflect.StructField{Name: fmt.Sprintf("Platform%d", j), Type: reflect.TypeOf(p.v),
					Tag: reflect.StructTag(`yaml:"` + p.name + `"`)})
				ptrs = append(ptrs, reflect.ValueOf(p.v))
			}
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: reflect.PointerTo(f.Type), Tag: f.Tag})
		ptrs = append(ptrs, cv.Field(i).Addr())
	}
	v := reflect.New(reflect.StructOf(fields)).Elem()
	for i, p := range ptrs {
		v.Field(i).Set(p)
	}
	return v
}

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
			"or run Ollama (https://ollama.com): `ollama serve`, then `ollama pull llama3.2` and set MNEMO_MODEL=llama3.2; "+
			"`mnemo init` asks these questions and writes mnemo.yaml",
			ErrNoLLM, ollamaURL, perr)
	}
	return ollamaURL, fmt.Sprintf("no OPENAI_API_KEY or OPENAI_BASE_URL set; using local Ollama at %s with model %q (set MNEMO_MODEL to a model you have pulled)",
		ollamaURL, c.LLM.Model), nil
}
