package slack

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// The "slack:" section as Slack declares it: its defaults, how a blank
// value is completed, and what Validate checks.
func TestSection(t *testing.T) {
	p := Platform()
	s, ok := p.Settings().(*Section)
	if !ok || !reflect.DeepEqual(*s, Section{APIURL: "https://slack.com/api/", ChannelMemory: "read", Access: "open"}) {
		t.Fatalf("defaults %#v", p.Settings())
	}
	s = &Section{BotToken: " xoxb-1 ", APIURL: "http://fake/api", Allow: []string{}}
	s.Complete()
	if s.BotToken != "xoxb-1" || s.APIURL != "http://fake/api/" || s.ChannelMemory != "read" || s.Access != "open" || s.Allow != nil {
		t.Errorf("completed %#v", s)
	}
	var got bottest.Checks
	s.Validate(&got)
	for _, want := range []string{
		`token slack.botToken "xoxb-1" xoxb-`, `token slack.appToken "" xapp-`,
		"slack.botToken: slack.botToken is set but slack.appToken is not; Socket Mode needs both",
		`url slack.apiURL "http://fake/api/" true`, `oneOf slack.channelMemory "read" [full read off]`,
		"access " + access.Slack + " open []",
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("no check %q in %q", want, got)
		}
	}
	got = nil
	(&Section{AppToken: "xapp-1"}).Validate(&got)
	if !slices.ContainsFunc(got, func(g string) bool {
		return strings.HasPrefix(g, "slack.appToken: slack.appToken is set but slack.botToken is not")
	}) {
		t.Errorf("only the app token: %q", got)
	}
	if ex := s.ListExamples(); ex["slack.allow"] == "" {
		t.Errorf("examples %v", ex)
	}
}
