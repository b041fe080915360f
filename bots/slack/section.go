package slack

import (
	"strings"

	"github.com/mnemo-agent/mnemo/bots/access"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// Section is the "slack:" section of the configuration, as Slack declares
// it (Platform().Settings): the doc comment of each field is its entry in
// cmd/mnemo/CONFIG.md.
type Section struct {
	// Bot User OAuth Token (`xoxb-…`), from the app's OAuth & Permissions
	// page; a secret. Slack runs when both tokens are set; setting only
	// one is an error.
	BotToken string `yaml:"botToken" env:"SLACK_BOT_TOKEN" secret:"true"`
	// App-level token (`xapp-…`) with `connections:write`, from the app's
	// Basic Information page; Socket Mode needs it. A secret.
	AppToken string `yaml:"appToken" env:"SLACK_APP_TOKEN" secret:"true"`
	// Slack Web API base (tests point it at a fake). A missing final `/`
	// is added.
	APIURL string `yaml:"apiURL" env:"SLACK_API_URL"`
	// Memory in channels (DMs always get all of the speaker's files):
	// `read` = the speaker's shared files and the channel's memory; `full`
	// = everything, as in a DM (a trusted channel); `off` = no memory, and
	// nothing remembered.
	ChannelMemory string `yaml:"channelMemory"`
	// Who may talk to mnemo in Slack: `open` = the members of the bot's
	// own workspace (the team its token belongs to), and people of other
	// teams (Slack Connect) only when `slack.allow` lists them; `allowlist`
	// = only what `slack.allow` lists; `pairing` = what it lists, and a
	// stranger gets a one-time code that the operator approves with `mnemo
	// access approve CODE`. Someone refused gets one short reply an hour
	// saying whom to ask, and nothing of theirs is kept or sent to the
	// model. `mnemo access allow slack:ID` adds to the list while mnemo
	// runs.
	Access string `yaml:"access"`
	// Ids let in (see `slack.access`): a team `T…`, a channel `C…` or `G…`
	// (messages written there), a user `U…` or `W…` (`T…/U…`: that user of
	// that team), or a user group `S…` (its members; the app needs the
	// `usergroups:read` scope). Ids are upper case, as Slack shows them.
	Allow []string `yaml:"allow"`
}

// defaultSection is the section with nothing set.
func defaultSection() *Section {
	return &Section{APIURL: "https://slack.com/api/", ChannelMemory: "read", Access: "open"}
}

// Complete fills what was left blank from the defaults and normalises:
// tokens trimmed, the API URL ending in "/", an empty allow list nil.
func (s *Section) Complete() {
	d := defaultSection()
	for _, f := range []struct{ p, def *string }{{&s.APIURL, &d.APIURL}, {&s.ChannelMemory, &d.ChannelMemory}, {&s.Access, &d.Access}} {
		if strings.TrimSpace(*f.p) == "" {
			*f.p = *f.def
		}
	}
	s.BotToken, s.AppToken = strings.TrimSpace(s.BotToken), strings.TrimSpace(s.AppToken)
	if !strings.HasSuffix(s.APIURL, "/") {
		s.APIURL += "/"
	}
	if len(s.Allow) == 0 {
		s.Allow = nil // "allow: []" is the default
	}
}

// Validate reports every bad value of the section to ch.
func (s *Section) Validate(ch plat.Checker) {
	ch.Token("slack.botToken", s.BotToken, "xoxb-", "use the Bot User OAuth Token from the app's OAuth & Permissions page")
	ch.Token("slack.appToken", s.AppToken, "xapp-", "create an app-level token with connections:write on the app's Basic Information page")
	switch {
	case s.BotToken != "" && s.AppToken == "":
		ch.Add("slack.botToken", "%s is set but %s is not; Socket Mode needs both (or unset both to run without Slack)", ch.Label("slack.appToken"))
	case s.BotToken == "" && s.AppToken != "":
		ch.Add("slack.appToken", "%s is set but %s is not; Socket Mode needs both (or unset both to run without Slack)", ch.Label("slack.botToken"))
	}
	ch.URL("slack.apiURL", s.APIURL, true, "https://slack.com/api/")
	ch.OneOf("slack.channelMemory", s.ChannelMemory, "full", "read", "off")
	ch.Access(access.Slack, s.Access, s.Allow, "T01ABC, C02DEF, U03GHI")
}

// ListExamples show a list of each list key, for "expected a list".
func (*Section) ListExamples() map[string]string {
	return map[string]string{"slack.allow": `["T01ABC", "T02DEF/U03GHI"]`}
}
