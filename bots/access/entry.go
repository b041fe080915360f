package access

import (
	"errors"
	"fmt"
	"strings"
)

// Platforms with access control.
const (
	Slack   = "slack"
	Discord = "discord"
)

// Kind is what an Entry names.
type Kind string

// The kinds of entries. Slack has teams, channels, users and user groups;
// Discord guilds, channels, users and roles.
const (
	Team    Kind = "team"    // Slack T…: every member of that workspace
	Guild   Kind = "guild"   // Discord server: messages written in it
	Channel Kind = "channel" // Slack C…/G…, Discord channel: messages written in it
	User    Kind = "user"    // one person (Slack U…/W…, optionally of one team T…/U…)
	Group   Kind = "group"   // Slack user group S…: its members (usergroups.users.list)
	Role    Kind = "role"    // Discord role: members who have it (from the message's member)
)

// Entry is one thing let in: a team, guild, channel, person, user group or
// role, by id. For a Slack user, Team (when set) pins the workspace.
type Entry struct {
	Kind Kind
	ID   string
	Team string
}

// String is e as the configuration writes it: Slack "T01", "C01", "U01",
// "T01/U02", "S01"; Discord "guild:1", "channel:1", "user:1", "role:1".
// ParseEntry gives e back from it.
func (e Entry) String() string {
	switch {
	case Snowflake(e.ID):
		return string(e.Kind) + ":" + e.ID
	case e.Team != "":
		return e.Team + "/" + e.ID
	}
	return e.ID
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

// Maximum lengths of ids (Slack ids are short upper-case words, Discord's
// snowflakes at most 20 digits).
const (
	maxSlackID   = 24
	maxSnowflake = 20
)

// Forms of the entries, for error messages.
const (
	SlackForms   = `a team "T…", a channel "C…" or "G…", a user "U…" or "W…" (or "T…/U…" for a user of one team), or a user group "S…"`
	DiscordForms = `"guild:ID", "channel:ID", "user:ID" or "role:ID" (ID: the number Copy ID shows with Developer Mode on)`
)

// ParseEntry parses one entry of platform's allow list (slack.allow,
// discord.allow). The error says which forms are accepted.
func ParseEntry(platform, s string) (Entry, error) {
	switch platform {
	case Slack:
		return parseSlack(s)
	case Discord:
		return parseDiscord(s)
	}
	return Entry{}, fmt.Errorf("%q is not a platform with access control; use %q or %q", platform, Slack, Discord)
}

func parseSlack(s string) (Entry, error) {
	bad := func(why string) (Entry, error) {
		return Entry{}, fmt.Errorf("%q %s; write %s", s, why, SlackForms)
	}
	if team, user, ok := strings.Cut(s, "/"); ok {
		if !slackID(team, "T") || !slackID(user, "UW") {
			return bad(`is not "T…/U…" (a team id, a slash, a user id)`)
		}
		return Entry{Kind: User, ID: user, Team: team}, nil
	}
	if !slackID(s, "TCGUWS") {
		if strings.ToUpper(s) != s {
			return bad("is not a Slack id (they are upper case)")
		}
		return bad("is not a Slack id")
	}
	kind := map[byte]Kind{'T': Team, 'C': Channel, 'G': Channel, 'U': User, 'W': User, 'S': Group}[s[0]]
	return Entry{Kind: kind, ID: s}, nil
}

// slackID: a first letter among first, then upper-case letters and
// digits, 2 to maxSlackID in all.
func slackID(s, first string) bool {
	if len(s) < 2 || len(s) > maxSlackID || !strings.Contains(first, s[:1]) {
		return false
	}
	for _, c := range s[1:] {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func parseDiscord(s string) (Entry, error) {
	kind, id, ok := strings.Cut(s, ":")
	if !ok {
		return Entry{}, fmt.Errorf("%q says neither guild, channel, user nor role; write %s", s, DiscordForms)
	}
	k := Kind(kind)
	if k != Guild && k != Channel && k != User && k != Role {
		return Entry{}, fmt.Errorf("%q: %q is not guild, channel, user or role; write %s", s, kind, DiscordForms)
	}
	if !Snowflake(id) {
		return Entry{}, fmt.Errorf("%q: %q is not a Discord id (1 to 20 digits); write %s", s, id, DiscordForms)
	}
	return Entry{Kind: k, ID: id}, nil
}

// Snowflake reports whether s is a Discord id: 1 to 20 digits, no leading 0.
func Snowflake(s string) bool {
	return s != "" && len(s) <= maxSnowflake && s[0] != '0' && strings.IndexFunc(s, notDigit) < 0
}

// ParseList parses platform's allow list; the error names the first bad
// entry by its index.
func ParseList(platform string, list []string) ([]Entry, error) {
	out := make([]Entry, 0, len(list))
	for i, s := range list {
		e, err := ParseEntry(platform, s)
		if err != nil {
			return nil, fmt.Errorf("%s.allow[%d]: %w", platform, i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// ParseID parses what `mnemo access allow|revoke` take: PLATFORM:ENTRY,
// as "slack:T01/U02", "slack:U02", "slack:C01", "discord:123" (a user),
// "discord:role:456". It returns the platform and the entry.
func ParseID(s string) (string, Entry, error) {
	platform, rest, ok := strings.Cut(s, ":")
	if !ok || (platform != Slack && platform != Discord) || rest == "" {
		return "", Entry{}, errors.New(`write PLATFORM:ID, e.g. slack:T01ABC/U02DEF, slack:U02DEF, slack:C03GHI, discord:80351110224678912 or discord:role:123456789012345678`)
	}
	if platform == Discord && Snowflake(rest) {
		rest = string(User) + ":" + rest
	}
	e, err := ParseEntry(platform, rest)
	return platform, e, err
}
