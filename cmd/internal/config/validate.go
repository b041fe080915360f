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
)

const (
	maxIdentityAccounts = 10000 // bounds the work aliases can multiply
	maxDiscordGuilds    = 100   // discord.guildIDs: more guilds, register /memory globally
	maxDiscordShards    = 1024  // discord.shardCount: 2.5 million guilds at Discord's 2500 per shard
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
	origin map[string]string
	errs   []problem
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
	for _, e := range Env(&Config{}) {
		if e.Key == key {
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

// add reports a problem; format's first verb receives the key's label.
func (ch *checker) add(key, format string, args ...any) {
	ch.errs = append(ch.errs, problem{ch.line(key), fmt.Sprintf(format, append([]any{ch.label(key)}, args...)...)})
}

// once records that v is listed at key, or, when seen has it already,
// adds the problem at key: format gets the label, v quoted and where v
// was first listed.
func (ch *checker) once(seen map[string]string, v, key, format string) {
	if at, dup := seen[v]; dup {
		ch.add(key, format, quote(v), at)
		return
	}
	seen[v] = key
}

func (ch *checker) intRange(key string, v, lo, hi int, unit string) {
	if v < lo || v > hi {
		ch.add(key, "%s: %d is out of range; use %d to %d%s", v, lo, hi, unit)
	}
}

func (ch *checker) positive(key string, d time.Duration) {
	if d <= 0 {
		ch.add(key, "%s: must be greater than 0, got %s; write a duration such as \"90s\" or \"2m\"", d)
	}
}

func (ch *checker) oneOf(key, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		ch.add(key, "%s: %s is not one of %s", quote(v), strings.Join(allowed, ", "))
	}
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
		kind := map[string]string{ // a Slack token's public prefix says its kind
			"xapp-": " (this is an app-level token; it belongs in SLACK_APP_TOKEN)",
			"xoxb-": " (this is a bot token; it belongs in SLACK_BOT_TOKEN)",
			"xoxp-": " (this is a user token; mnemo needs the bot token)",
		}[v[:min(len(v), 5)]]
		ch.add(key, "%s must start with %s; %s%s", prefix, hint, kind)
	}
}

func (c *Config) validate(origin map[string]string) error {
	ch := &checker{origin: origin}

	ch.httpURL("llm.baseURL", c.LLM.BaseURL, false, OpenAIBaseURL)
	ch.token("llm.apiKey", c.LLM.APIKey, "", "")
	ch.notEmpty("llm.model", c.LLM.Model)
	ch.notEmpty("llm.reflectorModel", c.LLM.ReflectorModel)
	ch.positive("llm.timeout", c.LLM.Timeout)
	ch.intRange("llm.maxRetries", c.LLM.MaxRetries, 0, 10, "")
	ch.intRange("llm.maxResponseBytes", c.LLM.MaxResponseBytes, 1024, 1<<30,
		" bytes (default 4194304)")

	dataOK := ch.notEmpty("memory.dataDir", c.Memory.DataDir)
	stateOK := ch.notEmpty("state.dir", c.State.Dir)
	if dataOK && stateOK && inside(c.State.Dir, c.Memory.DataDir) {
		beside, _ := filepath.Abs(filepath.Join(c.Memory.DataDir, "..", "state")) // Abs cannot fail here: inside just made both paths absolute
		ch.add("state.dir", "%s: %s is inside memory.dataDir %s, where every folder is a user's memory; put it beside, e.g. %s",
			quote(c.State.Dir), quote(c.Memory.DataDir), quote(beside))
	}
	ch.intRange("memory.indexBudget", c.Memory.IndexBudget, 256, 1<<20, " bytes")
	ch.intRange("memory.searchBudget", c.Memory.SearchBudget, 512, 1<<20, " bytes")
	ch.intRange("memory.readCap", c.Memory.ReadCap, 1024, 64<<20, " bytes")
	ch.intRange("memory.writeCap", c.Memory.WriteCap, 1024, 64<<20, " bytes")
	if c.Memory.WriteCap > c.Memory.ReadCap {
		ch.add("memory.writeCap", "%s: %d is larger than memory.readCap (%d), so written files could not be read back whole; lower it or raise memory.readCap",
			c.Memory.WriteCap, c.Memory.ReadCap)
	}

	ch.intRange("agent.maxSteps", c.Agent.MaxSteps, 1, 100, "")
	ch.intRange("agent.historyTurns", c.Agent.HistoryTurns, 0, 1000, "")
	ch.intRange("agent.maxConcurrent", c.Agent.MaxConcurrent, 1, 1024, "")
	ch.intRange("maxReplyChars", c.MaxReplyChars, agent.MinMaxReplyChars, 1<<20,
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

	c.validateAccess(ch, access.Slack, c.Slack.Access, c.Slack.Allow, "T01ABC, C02DEF, U03GHI")
	c.validateAccess(ch, access.Discord, c.Discord.Access, c.Discord.Allow, "guild:123456789012345678, role:234567890123456789")
	c.validateIdentities(ch)
	ch.intRange("limits.messagesPerMinute", c.Limits.MessagesPerMinute, 0, maxMessagesPerMinute, " (0 = no limit)")
	ch.intRange("limits.tokensPerDay", c.Limits.TokensPerDay, 0, maxTokensPerDay, " (0 = no limit)")
	ch.intRange("limits.totalTokensPerDay", c.Limits.TotalTokensPerDay, 0, maxTokensPerDay, " (0 = no limit)")

	host, port, err := net.SplitHostPort(c.Server.Listen) // the port in plain decimal: no "http", no leading 0
	if n, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || port != fmt.Sprint(n) || strings.ContainsAny(host, " /") {
		ch.add("server.listen", "%s: %s must be host:port, e.g. \"127.0.0.1:9090\" or \":9090\"", quote(c.Server.Listen))
	}
	ch.positive("shutdown.grace", c.Shutdown.Grace)
	ch.intRange("history.keep", c.History.Keep, 1, maxHistoryKeep, " versions per file")
	ch.positive("history.maxAge", c.History.MaxAge)
	ch.oneOf("log.format", c.Log.Format, "text", "json")
	ch.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
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

// guildIDRe is a Discord snowflake as Copy Server ID shows it.
var guildIDRe = text.NewRegexp(`^[1-9][0-9]{0,19}$`)

func (c *Config) validateGuildIDs(ch *checker) {
	const key = "discord.guildIDs"
	ids := c.Discord.GuildIDs
	if len(ids) > maxDiscordGuilds {
		ch.add(key, "%s: %d guild ids, at most %d; for more guilds leave the list empty to register /memory globally", len(ids), maxDiscordGuilds)
	}
	first := map[string]string{} // id → key where first listed
	for i, id := range ids {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		if _, err := strconv.ParseUint(id, 10, 64); err != nil || !guildIDRe.Get().MatchString(id) {
			ch.add(ikey, "%s: %s is not a guild id; a guild id is the number shown by Copy Server ID with Developer Mode on", quote(id))
		} else {
			ch.once(first, id, ikey, "%s: %s is already listed at %s; list each guild once")
		}
	}
}

// maxAllow bounds an allow list: one entry per line of a config file.
const maxAllow = 10000

// validateAccess checks platform's access mode and allow list.
func (c *Config) validateAccess(ch *checker, platform, mode string, allow []string, example string) {
	key := platform + ".access"
	if _, err := access.ParseMode(mode); err != nil {
		ch.add(key, "%s: %s is not one of open, allowlist, pairing", quote(mode))
	}
	key = platform + ".allow"
	if len(allow) > maxAllow {
		ch.add(key, "%s: %d entries, at most %d; let in a team, guild or role instead of each person", len(allow), maxAllow)
		return
	}
	first := map[string]string{}
	for i, s := range allow {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		if _, err := access.ParseEntry(platform, s); err != nil {
			ch.add(ikey, "%s: %s (e.g. %s)", err, example)
			continue
		}
		ch.once(first, s, ikey, "%s: %s is already listed at %s; list each id once")
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
			ch.add("identities."+name, "%s: more than %d accounts in identities; is this the right file?", maxIdentityAccounts)
			return
		}
	}
	owner := map[string]string{}  // account → key where first listed
	folded := map[string]string{} // name in lower case → its key
	for _, name := range names {
		key := "identities." + name
		// Two names one case apart are one folder where case is folded.
		if at, dup := folded[strings.ToLower(name)]; dup {
			ch.add(key, "%s: %s and %s differ only in case, and a case-insensitive file system (macOS, Windows) keeps them in one folder; rename one", quote(name), quote(strings.TrimPrefix(at, "identities.")))
		} else {
			folded[strings.ToLower(name)] = key
		}
		if mnemo.ValidateUser(name) != nil {
			ch.add(key, "%s: %s is not a valid user name; use 1 to 64 ASCII letters, digits, '.', '_' or '-', not starting with '.'", quote(name))
		}
		accounts := c.Identities[name]
		if own := automaticAccount(name); own != "" && !slices.Contains(accounts, own) {
			ch.add(key, "%s: %s is the folder mnemo gives the account %s, so whoever is listed here would share that person's memory; choose another name", quote(name), quote(own))
		}
		if len(accounts) == 0 {
			ch.add(key, "%s: lists no accounts; add some such as \"slack:TEAM_ID/USER_ID\" or \"discord:USER_ID\", or remove the name")
		}
		for i, a := range accounts {
			ikey := fmt.Sprintf("%s[%d]", key, i)
			m := slackAccountRe.Get().FindStringSubmatch(a)
			switch {
			case m != nil && (strings.ToUpper(m[1]) != m[1] || strings.ToUpper(m[2]) != m[2]):
				ch.add(ikey, "%s: %s: Slack IDs are upper case, as in \"slack:T01ABC/U02DEF\"", quote(a))
			case m == nil && !discordAccountRe.Get().MatchString(a):
				ch.add(ikey, "%s: %s must be \"slack:TEAM_ID/USER_ID\" or \"discord:USER_ID\" (digits)", quote(a))
			default:
				ch.once(owner, a, ikey, "%s: %s is already linked at %s; an account can belong to one name only")
			}
		}
	}
}
