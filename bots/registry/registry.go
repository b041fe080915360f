// Package registry is the list of the chat platforms mnemo runs: each
// registers itself (bots/platform) with one line here, and the app finds
// its configuration section, its access rules, its intake journal and its
// adapter through that registration. The terminal (bots/console) is one
// of them, marked Terminal: serve and chat run it always.
package registry

import (
	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/internal/reference"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/bots/slack"
)

// Platforms are the chat platforms, in the order serve starts them and a
// forget drops their queued messages: the terminal last, as serve always
// ran it (after the platforms with tokens).
func Platforms() []platform.Platform {
	return []platform.Platform{
		slack.Platform(),
		discord.Platform(),
		reference.Platform(),
		console.Platform(),
	}
}
