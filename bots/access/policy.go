package access

import (
	"context"
	"fmt"
	"slices"
)

// Mode is a platform's access setting.
type Mode string

// The modes (slack.access, discord.access).
const (
	Open      Mode = "open"      // everyone the platform delivers (Slack: the home team, and what is listed)
	Allowlist Mode = "allowlist" // only what is listed
	Pairing   Mode = "pairing"   // what is listed, and strangers get a code the operator approves
)

// Modes lists the modes, for messages.
var Modes = []string{string(Open), string(Allowlist), string(Pairing)}

// ParseMode checks a mode's name.
func ParseMode(s string) (Mode, error) {
	if !slices.Contains(Modes, s) {
		return "", fmt.Errorf("%q is not one of open, allowlist, pairing", s)
	}
	return Mode(s), nil
}

// Who is the author of a message or command, as the platform tells.
type Who struct {
	Platform string
	// Home: the author belongs to the bot's own Slack workspace (the team
	// auth.test names).
	Home bool
	// Team is the author's Slack team, or the Discord guild the message
	// was written in ("" in a DM).
	Team    string
	Channel string
	User    string
	// Roles are the author's Discord roles in the guild (from the
	// message's member; none in a DM).
	Roles []string
	// InGroup reports whether the author is in a Slack user group (nil:
	// never asked, no group matches).
	InGroup func(ctx context.Context, group string) (bool, error)
}

// Person is the entry that lets this one person in: what a pairing code
// approves. Slack: the user of their team ("T…/U…"); Discord: "user:ID".
func (w Who) Person() Entry {
	if w.Platform == Slack {
		return Entry{Kind: User, ID: w.User, Team: w.Team}
	}
	return Entry{Kind: User, ID: w.User}
}

// Source is where who writes from, as pairing codes are counted
// (MaxPendingPerSource): their Slack team, the Discord server of the
// message, or Discord's DMs (which do not tell a server).
func (w Who) Source() string {
	if w.Team == "" {
		return "DMs"
	}
	if w.Platform == Slack {
		return "team " + w.Team
	}
	return "server " + w.Team
}

// Policy is one platform's configured rule.
type Policy struct {
	Mode Mode
	// HomeOnly: Open lets in only Who.Home people, and others when listed
	// (Slack, where another organisation's people can reach the bot
	// through Slack Connect).
	HomeOnly bool
	Allow    []Entry // the configuration's list
}

// Decision is what Decide found: whether to let the author in, and why
// (for the log).
type Decision struct {
	Admit bool
	Why   string
}

// Decide lets who in or not, with the Policy's list and extra (the ids
// the operator added at run time). A user group that cannot be checked
// (Slack refused usergroups.users.list) does not let anyone in; the error
// says why.
func (p Policy) Decide(ctx context.Context, who Who, extra []Entry) (Decision, error) {
	if p.Mode == Open && (!p.HomeOnly || who.Home) {
		return Decision{true, "open"}, nil
	}
	var groups []string
	for _, list := range [][]Entry{p.Allow, extra} {
		for _, e := range list {
			if e.Kind == Group {
				groups = append(groups, e.ID)
			} else if matches(e, who) {
				return Decision{true, "listed: " + e.String()}, nil
			}
		}
	}
	var firstErr error
	if who.InGroup != nil && who.User != "" {
		for _, g := range groups {
			in, err := who.InGroup(ctx, g)
			if err != nil {
				firstErr = cmpErr(firstErr, fmt.Errorf("cannot read the members of user group %s: %w", g, err))
				continue
			}
			if in {
				return Decision{true, "listed: " + g}, nil
			}
		}
	}
	why := "not listed"
	if p.Mode == Open {
		why = "not of the home team, and not listed"
	}
	return Decision{false, why}, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// matches reports whether e lets who in (groups are Decide's).
func matches(e Entry, who Who) bool {
	if e.ID == "" {
		return false
	}
	switch e.Kind {
	case Team, Guild:
		return who.Team == e.ID
	case Channel:
		return who.Channel == e.ID
	case User:
		return who.User == e.ID && (e.Team == "" || e.Team == who.Team)
	case Role:
		return slices.Contains(who.Roles, e.ID)
	}
	return false
}
