package slack

import (
	"github.com/mnemo-agent/mnemo/bots/access"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// Platform is Slack as it registers with mnemo (bots/registry): enabled
// when both its tokens are set, its intake journal slack.jsonl, open to
// its home team only.
func Platform() plat.Platform {
	return plat.Platform{
		Name:     access.Slack,
		Settings: func() any { return defaultSection() },
		Enabled: func(s plat.Section) bool {
			var c Section
			return s(&c) == nil && c.BotToken != "" && c.AppToken != ""
		},
		Hint:         `set SLACK_BOT_TOKEN (xoxb-...) and SLACK_APP_TOKEN (xapp-...) to run the Slack adapter (see bots/README.md, "Slack")`,
		Access:       plat.Access{HomeOnly: true, Modes: plat.Modes("the members of the bot's own workspace, and what is listed")},
		ForgetQueued: ForgetQueued,
		New: func(d plat.Deps) (plat.Adapter, error) {
			var c Section
			if err := d.Section(&c); err != nil {
				return nil, err
			}
			return New(Config{Access: d.Access,
				BotToken: c.BotToken, AppToken: c.AppToken, APIURL: c.APIURL,
				ChannelMemory: c.ChannelMemory, Identities: d.Identities,
				Handler: d.Handler, Memory: d.Memory, Logger: d.Logger, IntakeDir: d.IntakeDir,
				FirstVisible: d.FirstVisible, Budget: d.Budget, Refusals: d.Refusals, Keeper: d.Keeper,
				AttachmentMaxBytes: d.AttachmentMaxBytes,
			})
		},
	}
}
