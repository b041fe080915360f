package slack

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/access"
)

// checks records what a section's Validate asks of the configuration's
// checker (cmd/internal/config implements it; its tests hold the words).
type checks []string

func (c *checks) Add(key, format string, args ...any) {
	*c = append(*c, key+": "+fmt.Sprintf(format, append([]any{key}, args...)...))
}
func (c *checks) Label(key string) string { return key }
func (c *checks) Token(key, v, prefix, _ string) {
	*c = append(*c, fmt.Sprintf("token %s %q %s", key, v, prefix))
}
func (c *checks) URL(key, v string, required bool, _ string) {
	*c = append(*c, fmt.Sprintf("url %s %q %v", key, v, required))
}
func (c *checks) OneOf(key, v string, allowed ...string) {
	*c = append(*c, fmt.Sprintf("oneOf %s %q %v", key, v, allowed))
}
func (c *checks) IntRange(key string, v, lo, hi int, _ string) {
	*c = append(*c, fmt.Sprintf("range %s %d %d..%d", key, v, lo, hi))
}
func (c *checks) Once(seen map[string]string, v, key, _ string) {
	if at, dup := seen[v]; dup {
		*c = append(*c, fmt.Sprintf("twice %s %s", key, at))
	}
	seen[v] = key
}
func (c *checks) Access(platform, mode string, allow []string, _ string) {
	*c = append(*c, fmt.Sprintf("access %s %s %v", platform, mode, allow))
}

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
	var got checks
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
