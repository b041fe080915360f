package config

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

const (
	maxIdentityAccounts = 10000 // bounds the work aliases can multiply
	maxHistoryKeep      = 10000 // history.keep: versions kept per memory file
	// limits.*: past these a limit is no limit (one message each 6 ms; a
	// trillion tokens a day); 0 says so plainly.
	maxMessagesPerMinute = 10000
	maxTokensPerDay      = 1_000_000_000_000
)

// Validate checks every value and reports every problem, one per line, each
// naming the key and the fix. It does not change c. Call it again after
// applying command-line flags.
func (c *Config) Validate() error { return c.validate(nil) }

// checker collects validation problems; origin says where each key was set.
type checker struct {
	cfg    *Config // whose keys' variables the labels name
	origin map[string]string
	errs   []problem
}

// Label names a key the way the operator set it: the environment variable
// when it came from there, else file:line and the key.
func (ch *checker) Label(key string) string {
	src := ch.origin[key]
	switch {
	case strings.HasPrefix(src, "env "):
		return strings.TrimPrefix(src, "env ")
	case src != "":
		return src + ": " + key
	}
	for _, e := range Env(ch.cfg) {
		if e.Key == key && e.Name != e.ruleName { // a well-known name is worth showing
			return key + " (" + e.Name + ")"
		}
	}
	return key
}

// line is the line where key was set in the file, or 0.
func (ch *checker) line(key string) int {
	src := ch.origin[key]
	n, _ := strconv.Atoi(src[strings.LastIndex(src, ":")+1:])
	return n
}

// Add reports a problem; format's first verb receives the key's label.
func (ch *checker) Add(key, format string, args ...any) {
	ch.errs = append(ch.errs, problem{ch.line(key), fmt.Sprintf(format, append([]any{ch.Label(key)}, args...)...)})
}

// Once records that v is listed at key, or, when seen has it already,
// adds the problem at key: format gets the label, v quoted and where v
// was first listed.
func (ch *checker) Once(seen map[string]string, v, key, format string) {
	if at, dup := seen[v]; dup {
		ch.Add(key, format, quote(v), at)
		return
	}
	seen[v] = key
}

func (ch *checker) IntRange(key string, v, lo, hi int, unit string) {
	if v < lo || v > hi {
		ch.Add(key, "%s: %d is out of range; use %d to %d%s", v, lo, hi, unit)
	}
}

func (ch *checker) positive(key string, d time.Duration) {
	if d <= 0 {
		ch.Add(key, "%s: must be greater than 0, got %s; write a duration such as \"90s\" or \"2m\"", d)
	}
}

func (ch *checker) OneOf(key, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		ch.Add(key, "%s: %s is not one of %s", quote(v), strings.Join(allowed, ", "))
	}
}

func (ch *checker) notEmpty(key, v string) bool {
	if strings.TrimSpace(v) == "" {
		ch.Add(key, "%s: must not be empty")
		return false
	}
	return true
}

// URL checks an absolute http(s) URL; an empty one only when required.
func (ch *checker) URL(key, v string, required bool, example string) {
	if v == "" {
		if required {
			ch.Add(key, "%s: must not be empty; the default is %q", example)
		}
		return
	}
	u, err := url.Parse(v)
	if err != nil {
		ch.Add(key, "%s: is not a valid URL; use an absolute http(s) URL such as %q", example)
		return
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ch.Add(key, "%s: %s is not an absolute http(s) URL; use one such as %q", quote(u.Redacted()), example)
	}
}

// Token checks the shape of a secret without ever showing it.
func (ch *checker) Token(key, v, prefix, hint string) {
	if v == "" {
		return
	}
	if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		ch.Add(key, "%s contains spaces or control characters; give the token alone (no \"Bearer \" or \"Bot \" prefix, no quotes)")
		return
	}
	if prefix != "" && !strings.HasPrefix(v, prefix) {
		kind := map[string]string{ // a Slack token's public prefix says its kind
			"xapp-": " (this is an app-level token; it belongs in SLACK_APP_TOKEN)",
			"xoxb-": " (this is a bot token; it belongs in SLACK_BOT_TOKEN)",
			"xoxp-": " (this is a user token; mnemo needs the bot token)",
		}[v[:min(len(v), 5)]]
		ch.Add(key, "%s must start with %s; %s%s", prefix, hint, kind)
	}
}

func (c *Config) validate(origin map[string]string) error {
	ch := &checker{origin: origin, cfg: c}

	ch.URL("llm.baseURL", c.LLM.BaseURL, false, OpenAIBaseURL)
	ch.Token("llm.apiKey", c.LLM.APIKey, "", "")
	ch.notEmpty("llm.model", c.LLM.Model)
	ch.notEmpty("llm.reflectorModel", c.LLM.ReflectorModel)
	ch.positive("llm.timeout", c.LLM.Timeout)
	ch.IntRange("llm.maxRetries", c.LLM.MaxRetries, 0, 10, "")
	ch.IntRange("llm.maxResponseBytes", c.LLM.MaxResponseBytes, 1024, 1<<30,
		" bytes (default 4194304)")

	dataOK := ch.notEmpty("memory.dataDir", c.Memory.DataDir)
	stateOK := ch.notEmpty("state.dir", c.State.Dir)
	if dataOK && stateOK && inside(c.State.Dir, c.Memory.DataDir) {
		beside, _ := filepath.Abs(filepath.Join(c.Memory.DataDir, "..", "state")) // Abs cannot fail here: inside just made both paths absolute
		// Paths whole, never cut as quote cuts values: a person copies them.
		ch.Add("state.dir", "%s: %s is inside memory.dataDir %s, where every folder is a user's memory; put it beside, e.g. %s",
			strconv.Quote(c.State.Dir), strconv.Quote(c.Memory.DataDir), strconv.Quote(beside))
	}
	ch.IntRange("memory.indexBudget", c.Memory.IndexBudget, 256, 1<<20, " bytes")
	ch.IntRange("memory.searchBudget", c.Memory.SearchBudget, 512, 1<<20, " bytes")
	ch.IntRange("memory.readCap", c.Memory.ReadCap, 1024, 64<<20, " bytes")
	ch.IntRange("memory.writeCap", c.Memory.WriteCap, 1024, 64<<20, " bytes")
	ch.IntRange("memory.rollupAfter", c.Memory.RollupAfter, 0, 120, " months (0 turns roll-ups off; default 3)")
	if c.Memory.WriteCap > c.Memory.ReadCap {
		ch.Add("memory.writeCap", "%s: %d is larger than memory.readCap (%d), so written files could not be read back whole; lower it or raise memory.readCap",
			c.Memory.WriteCap, c.Memory.ReadCap)
	}

	ch.IntRange("agent.maxSteps", c.Agent.MaxSteps, 1, 100, "")
	ch.IntRange("agent.historyTurns", c.Agent.HistoryTurns, 0, 1000, "")
	ch.IntRange("agent.maxConcurrent", c.Agent.MaxConcurrent, 1, 1024, "")
	ch.IntRange("maxReplyChars", c.MaxReplyChars, agent.MinMaxReplyChars, 1<<20,
		" characters (default 16000)")

	ch.positive("reflector.idle", c.Reflector.Idle)
	ch.IntRange("reflector.maxTurns", c.Reflector.MaxTurns, 1, 1000, "")
	ch.IntRange("reflector.maxSteps", c.Reflector.MaxSteps, 1, 100, "")
	ch.IntRange("reflector.factsBudget", c.Reflector.FactsBudget, 1, 16<<20, " bytes")

	for _, p := range c.platforms { // each platform judges its own section
		if v, ok := p.v.(interface{ Validate(platform.Checker) }); ok {
			v.Validate(ch)
		}
	}
	c.validateIdentities(ch)
	ch.IntRange("limits.messagesPerMinute", c.Limits.MessagesPerMinute, 0, maxMessagesPerMinute, " (0 = no limit)")
	ch.IntRange("limits.tokensPerDay", c.Limits.TokensPerDay, 0, maxTokensPerDay, " (0 = no limit)")
	ch.IntRange("limits.totalTokensPerDay", c.Limits.TotalTokensPerDay, 0, maxTokensPerDay, " (0 = no limit)")
	ch.IntRange("attachments.maxBytes", c.Attachments.MaxBytes, 0, 4<<20, " bytes (0 = none read)")

	host, port, err := net.SplitHostPort(c.Server.Listen) // the port in plain decimal: no "http", no leading 0
	if n, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || port != fmt.Sprint(n) || strings.ContainsAny(host, " /") {
		ch.Add("server.listen", "%s: %s must be host:port, e.g. \"127.0.0.1:9090\" or \":9090\"", quote(c.Server.Listen))
	}
	ch.positive("shutdown.grace", c.Shutdown.Grace)
	ch.IntRange("history.keep", c.History.Keep, 1, maxHistoryKeep, " versions per file")
	ch.positive("history.maxAge", c.History.MaxAge)
	ch.OneOf("log.format", c.Log.Format, "text", "json")
	ch.OneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	return joinProblems(ch.errs)
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
	slackAccountRe   = text.NewRegexp(`^slack:([A-Za-z0-9]{1,32})/([A-Za-z0-9]{1,32})$`)
	discordAccountRe = text.NewRegexp(`^discord:[0-9]{1,20}$`)
	// The folder names the adapters give an account not in identities.
	// Case folded: on a case-insensitive file system (macOS, Windows)
	// "Slack-T1-U2" is the same folder as "slack-T1-U2".
	autoSlackRe   = text.NewRegexp(`^(?i:slack)-([A-Za-z0-9]+)-([A-Za-z0-9]+)$`)
	autoDiscordRe = text.NewRegexp(`^(?i:discord)-([0-9]+)$`)
)

// maxAllow bounds an allow list: one entry per line of a config file.
const maxAllow = 10000

// Access checks platform's access mode and allow list.
func (ch *checker) Access(platform, mode string, allow []string, example string) {
	key := platform + ".access"
	if _, err := access.ParseMode(mode); err != nil {
		ch.Add(key, "%s: %s is not one of open, allowlist, pairing", quote(mode))
	}
	key = platform + ".allow"
	if len(allow) > maxAllow {
		ch.Add(key, "%s: %d entries, at most %d; let in a team, guild or role instead of each person", len(allow), maxAllow)
		return
	}
	first := map[string]string{}
	for i, s := range allow {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		if _, err := access.ParseEntry(platform, s); err != nil {
			ch.Add(ikey, "%s: %s (e.g. %s)", err, example)
			continue
		}
		ch.Once(first, s, ikey, "%s: %s is already listed at %s; list each id once")
	}
}

// automaticAccount is the account whose automatic folder name is name
// ("slack:T/U" for slack-T-U, "discord:ID" for discord-ID), or "".
func automaticAccount(name string) string {
	if m := autoSlackRe.Get().FindStringSubmatch(name); m != nil {
		return "slack:" + strings.ToUpper(m[1]) + "/" + strings.ToUpper(m[2]) // Slack IDs are upper case
	}
	if m := autoDiscordRe.Get().FindStringSubmatch(name); m != nil {
		return "discord:" + m[1]
	}
	return ""
}

func (c *Config) validateIdentities(ch *checker) {
	// In file order, so that the later of two claims to an account is refused.
	names := slices.SortedFunc(maps.Keys(c.Identities), func(a, b string) int {
		return cmp.Or(cmp.Compare(ch.line("identities."+a), ch.line("identities."+b)), strings.Compare(a, b))
	})
	total := 0
	for _, name := range names {
		if total += len(c.Identities[name]); total > maxIdentityAccounts {
			ch.Add("identities."+name, "%s: more than %d accounts in identities; is this the right file?", maxIdentityAccounts)
			return
		}
	}
	owner := map[string]string{}  // account → key where first listed
	folded := map[string]string{} // name in lower case → its key
	for _, name := range names {
		key := "identities." + name
		// Two names one case apart are one folder where case is folded.
		if at, dup := folded[strings.ToLower(name)]; dup {
			ch.Add(key, "%s: %s and %s differ only in case, and a case-insensitive file system (macOS, Windows) keeps them in one folder; rename one", quote(name), quote(strings.TrimPrefix(at, "identities.")))
		} else {
			folded[strings.ToLower(name)] = key
		}
		if mnemo.ValidateUser(name) != nil {
			ch.Add(key, "%s: %s is not a valid user name; use 1 to 64 ASCII letters, digits, '.', '_' or '-', not starting with '.'", quote(name))
		}
		accounts := c.Identities[name]
		if own := automaticAccount(name); own != "" && !slices.Contains(accounts, own) {
			ch.Add(key, "%s: %s is the folder mnemo gives the account %s, so whoever is listed here would share that person's memory; choose another name", quote(name), quote(own))
		}
		if len(accounts) == 0 {
			ch.Add(key, "%s: lists no accounts; add some such as \"slack:TEAM_ID/USER_ID\" or \"discord:USER_ID\", or remove the name")
		}
		for i, a := range accounts {
			ikey := fmt.Sprintf("%s[%d]", key, i)
			m := slackAccountRe.Get().FindStringSubmatch(a)
			switch {
			case m != nil && (strings.ToUpper(m[1]) != m[1] || strings.ToUpper(m[2]) != m[2]):
				ch.Add(ikey, "%s: %s: Slack IDs are upper case, as in \"slack:T01ABC/U02DEF\"", quote(a))
			case m == nil && !discordAccountRe.Get().MatchString(a):
				ch.Add(ikey, "%s: %s must be \"slack:TEAM_ID/USER_ID\" or \"discord:USER_ID\" (digits)", quote(a))
			default:
				ch.Once(owner, a, ikey, "%s: %s is already linked at %s; an account can belong to one name only")
			}
		}
	}
}
