package discord

import (
	"github.com/mnemo-agent/mnemo/bots/access"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// Platform is Discord as it registers with mnemo (bots/registry): enabled
// when its token is set, its intake journal discord.jsonl, and a note at
// start when anyone who can reach the bot may talk to it.
func Platform() plat.Platform {
	return plat.Platform{
		Name:     access.Discord,
		Settings: func() any { return defaultSection() },
		Enabled: func(s plat.Section) bool {
			var c Section
			return s(&c) == nil && c.BotToken != ""
		},
		Hint: `set DISCORD_BOT_TOKEN to run the Discord adapter (see bots/README.md, "Discord")`,
		Access: plat.Access{
			OpenNote: "discord: discord.access is open: anyone who can reach the bot may talk to it; a bot in a public server needs discord.access allowlist or pairing",
			Modes:    plat.Modes("everyone who can reach the bot")},
		ForgetQueued: ForgetQueued,
		New: func(d plat.Deps) (plat.Adapter, error) {
			var c Section
			if err := d.Section(&c); err != nil {
				return nil, err
			}
			return New(Config{Access: d.Access,
				Token: c.BotToken, APIURL: c.APIURL, ChannelMemory: c.ChannelMemory,
				GuildIDs: c.GuildIDs, ShardID: c.ShardID, ShardCount: c.ShardCount, ReplyMention: c.ReplyMention,
				Identities: d.Identities, Handler: d.Handler, Memory: d.Memory, Logger: d.Logger,
				IntakeDir: d.IntakeDir, FirstVisible: d.FirstVisible, Budget: d.Budget, Refusals: d.Refusals, Keeper: d.Keeper,
				AttachmentMaxBytes: d.AttachmentMaxBytes,
			})
		},
	}
}
