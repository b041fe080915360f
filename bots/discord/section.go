package discord

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/access"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

const (
	maxGuilds = 100  // discord.guildIDs: more guilds, register /memory globally
	maxShards = 1024 // discord.shardCount: 2.5 million guilds at Discord's 2500 per shard
)

// Section is the "discord:" section of the configuration, as Discord
// declares it (Platform().Settings): the doc comment of each field is its
// entry in cmd/mnemo/CONFIG.md.
type Section struct {
	// Bot token, from the Bot page of the application, without `Bot `
	// (mnemo adds it); a secret. Discord runs when it is set.
	BotToken string `yaml:"botToken" env:"DISCORD_BOT_TOKEN" secret:"true"`
	// Discord base URL (tests point it at a fake); the gateway address is
	// what its REST gateway endpoint returns. A missing final `/` is
	// added.
	APIURL string `yaml:"apiURL" env:"DISCORD_API_URL"`
	// Memory in channels: `full`, `read` or `off`, as `slack.channelMemory`; a
	// thread shares its channel's memory.
	ChannelMemory string `yaml:"channelMemory"`
	// Servers (guilds) where `/memory` is registered server by server, which
	// takes effect at once; at most 100. A guild id is the number Copy
	// Server ID shows with Developer Mode on. Empty registers `/memory` once
	// for every server (globally), which can take up to an hour to show.
	GuildIDs []string `yaml:"guildIDs"`
	// This process's shard, 0 to `discord.shardCount`-1, a different one
	// in each process. Direct messages reach shard 0 only, which alone
	// registers `/memory`.
	ShardID int `yaml:"shardID"`
	// Processes the servers are split across, 1 to 1024; 1 means this one
	// process serves every server. Discord asks for shards past 2,500
	// servers.
	ShardCount int `yaml:"shardCount"`
	// Whether a reply pings (mentions) the author of the message it
	// answers.
	ReplyMention bool `yaml:"replyMention"`
	// Who may talk to mnemo in Discord: `open` = everyone who can reach
	// the bot (a DM, or a mention in any server it is in); `allowlist` =
	// only what `discord.allow` lists; `pairing` = what it lists, and a
	// stranger gets a one-time code that the operator approves with `mnemo
	// access approve CODE`. A bot in a public server needs `allowlist` or
	// `pairing`. Someone refused gets one short reply an hour saying whom
	// to ask, and nothing of theirs is kept or sent to the model.
	Access string `yaml:"access"`
	// Ids let in (see `discord.access`): `guild:ID` (messages written in
	// that server), `channel:ID` (in that channel; a thread has its own
	// id), `user:ID` (that person, DMs included) or `role:ID` (members
	// with that role, in the server's channels). A DM carries no server or
	// role: there only `user:` entries and approved codes let a person in.
	Allow []string `yaml:"allow"`
}

// defaultSection is the section with nothing set.
func defaultSection() *Section {
	return &Section{APIURL: "https://discord.com/", ChannelMemory: "read", ShardCount: 1, Access: "open"}
}

// Complete fills what was left blank from the defaults and normalises:
// the token trimmed, the API URL ending in "/", empty lists nil. Numbers
// are left alone: an explicit 0 is judged by Validate.
func (s *Section) Complete() {
	d := defaultSection()
	for _, f := range []struct{ p, def *string }{{&s.APIURL, &d.APIURL}, {&s.ChannelMemory, &d.ChannelMemory}, {&s.Access, &d.Access}} {
		if strings.TrimSpace(*f.p) == "" {
			*f.p = *f.def
		}
	}
	s.BotToken = strings.TrimSpace(s.BotToken)
	if !strings.HasSuffix(s.APIURL, "/") {
		s.APIURL += "/"
	}
	if len(s.GuildIDs) == 0 {
		s.GuildIDs = nil // "guildIDs: []" is the default
	}
	if len(s.Allow) == 0 {
		s.Allow = nil
	}
}

// guildIDRe is a Discord snowflake as Copy Server ID shows it.
var guildIDRe = text.NewRegexp(`^[1-9][0-9]{0,19}$`)

// Validate reports every bad value of the section to ch.
func (s *Section) Validate(ch plat.Checker) {
	if strings.HasPrefix(s.BotToken, "Bot ") {
		ch.Add("discord.botToken", "%s: give the token without the \"Bot \" prefix; mnemo adds it")
	} else {
		ch.Token("discord.botToken", s.BotToken, "", "")
	}
	ch.URL("discord.apiURL", s.APIURL, true, "https://discord.com/")
	ch.OneOf("discord.channelMemory", s.ChannelMemory, "full", "read", "off")
	s.validateGuildIDs(ch)
	ch.IntRange("discord.shardCount", s.ShardCount, 1, maxShards, " (1 = one process serves every guild)")
	switch n := s.ShardCount; {
	case s.ShardID < 0:
		ch.Add("discord.shardID", "%s: %d is out of range; shard ids count from 0 to discord.shardCount-1, one per process", s.ShardID)
	case n >= 1 && s.ShardID >= n:
		ch.Add("discord.shardID", "%s: %d is out of range; with discord.shardCount %d use 0 to %d, a different one in each process", s.ShardID, n, n-1)
	}
	ch.Access(access.Discord, s.Access, s.Allow, "guild:123456789012345678, role:234567890123456789")
}

func (s *Section) validateGuildIDs(ch plat.Checker) {
	const key = "discord.guildIDs"
	if len(s.GuildIDs) > maxGuilds {
		ch.Add(key, "%s: %d guild ids, at most %d; for more guilds leave the list empty to register /memory globally", len(s.GuildIDs), maxGuilds)
	}
	first := map[string]string{} // id → key where first listed
	for i, id := range s.GuildIDs {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		if _, err := strconv.ParseUint(id, 10, 64); err != nil || !guildIDRe.Get().MatchString(id) {
			ch.Add(ikey, "%s: %s is not a guild id; a guild id is the number shown by Copy Server ID with Developer Mode on", strconv.Quote(id))
		} else {
			ch.Once(first, id, ikey, "%s: %s is already listed at %s; list each guild once")
		}
	}
}

// ListExamples show a list of each list key, for "expected a list".
func (*Section) ListExamples() map[string]string {
	return map[string]string{
		"discord.guildIDs": `["80351110224678912", "41771983423143937"]`,
		"discord.allow":    `["guild:80351110224678912", "role:41771983423143937"]`,
	}
}
