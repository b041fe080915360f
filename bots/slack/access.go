package slack

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/bots/access"
)

// The user groups' members are read with usergroups.users.list (scope
// usergroups:read) and kept a while: a group's change shows within
// groupCacheTTL.
const (
	groupCacheTTL = 5 * time.Minute
	groupCacheMax = 1000 // groups kept; past it the cache starts over
)

// who is the author of a message or command for the access check: their
// team, the channel and their user id. They are of the home team (the one
// auth.test names) only when every team the event gives them (team,
// user_team) is it: a Slack Connect guest is not.
func (b *Bot) who(team, channel, user string, teams ...string) access.Who {
	home := team == b.teamID
	for _, t := range teams {
		home = home && (t == "" || t == b.teamID)
	}
	return access.Who{Platform: access.Slack, Home: home, Team: team, Channel: channel, User: user,
		InGroup: func(ctx context.Context, group string) (bool, error) { return b.inGroup(ctx, group, user) }}
}

// inGroup reports whether user is a member of the user group.
func (b *Bot) inGroup(ctx context.Context, group, user string) (bool, error) {
	members, ok := b.groups.get(group, b.now())
	if !ok {
		var err error
		if members, err = b.api.GetUserGroupMembersContext(ctx, group); err != nil {
			return false, err
		}
		b.groups.put(group, members, b.now())
	}
	return slices.Contains(members, user), nil
}

// groupCache keeps the members of user groups for a while.
type groupCache struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	m   map[string]groupEntry
}

type groupEntry struct {
	members []string
	at      time.Time
}

func newGroupCache(max int, ttl time.Duration) *groupCache {
	return &groupCache{max: max, ttl: ttl, m: map[string]groupEntry{}}
}

func (c *groupCache) get(group string, now time.Time) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[group]
	if !ok || now.Sub(e.at) >= c.ttl {
		return nil, false
	}
	return e.members, true
}

func (c *groupCache) put(group string, members []string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[group] = groupEntry{members, now}
}
