package discord

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// The "discord:" section as Discord declares it: its defaults, how a
// blank value is completed, and what Validate checks.
func TestSection(t *testing.T) {
	p := Platform()
	s, ok := p.Settings().(*Section)
	if !ok || s.APIURL != "https://discord.com/" || s.ChannelMemory != "read" || s.ShardCount != 1 || s.Access != "open" || s.GuildIDs != nil {
		t.Fatalf("defaults %#v", p.Settings())
	}
	s = &Section{BotToken: " tok ", APIURL: "http://fake", GuildIDs: []string{}, Allow: []string{}, ShardCount: 1}
	s.Complete()
	if s.BotToken != "tok" || s.APIURL != "http://fake/" || s.ChannelMemory != "read" || s.Access != "open" || s.GuildIDs != nil || s.Allow != nil {
		t.Errorf("completed %#v", s)
	}
	var hundred []string
	for i := range 101 {
		hundred = append(hundred, fmt.Sprint(1000+i))
	}
	for _, tc := range []struct {
		s    Section
		want []string
	}{
		{*s, []string{`token discord.botToken "tok" `, `url discord.apiURL "http://fake/" true`,
			`oneOf discord.channelMemory "read" [full read off]`, "range discord.shardCount 1 1..1024", "access " + access.Discord + " open []"}},
		{Section{BotToken: "Bot x", ShardCount: 1}, []string{`discord.botToken: discord.botToken: give the token without the "Bot " prefix`}},
		{Section{GuildIDs: []string{"abc", "7", "7", "0"}, ShardCount: 1}, []string{
			`discord.guildIDs[0]: discord.guildIDs[0]: "abc" is not a guild id`, "twice discord.guildIDs[2] discord.guildIDs[1]",
			`discord.guildIDs[3]: discord.guildIDs[3]: "0" is not a guild id`}},
		{Section{GuildIDs: hundred, ShardCount: 1}, []string{"discord.guildIDs: discord.guildIDs: 101 guild ids, at most 100"}},
		{Section{ShardID: -1, ShardCount: 2}, []string{"discord.shardID: discord.shardID: -1 is out of range; shard ids count from 0"}},
		{Section{ShardID: 4, ShardCount: 4}, []string{"discord.shardID: discord.shardID: 4 is out of range; with discord.shardCount 4 use 0 to 3"}},
	} {
		var got bottest.Checks
		tc.s.Validate(&got)
		for _, want := range tc.want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
				t.Errorf("%+v: no check %q in %q", tc.s, want, got)
			}
		}
	}
	if ex := s.ListExamples(); ex["discord.guildIDs"] == "" || ex["discord.allow"] == "" {
		t.Errorf("examples %v", ex)
	}
}
