package bottest

import (
	"slices"
	"testing"
)

// Checks writes one line a call, and Once a line only for a value seen
// before, naming where it was first.
func TestChecks(t *testing.T) {
	var c Checks
	seen := map[string]string{}
	c.Add("slack.x", "%s is bad: %d", 3)
	c.Token("slack.botToken", "xoxb-1", "xoxb-", "")
	c.URL("slack.apiURL", "u", true, "")
	c.OneOf("slack.channelMemory", "v", "read", "off")
	c.IntRange("k", 9, 1, 5, "")
	c.Once(seen, "T1", "slack.allow[0]", "")
	c.Once(seen, "T1", "slack.allow[1]", "")
	c.Access("slack", "open", []string{"T1"}, "")
	want := Checks{
		"slack.x: slack.x is bad: 3",
		`token slack.botToken "xoxb-1" xoxb-`,
		`url slack.apiURL "u" true`,
		`oneOf slack.channelMemory "v" [read off]`,
		"range k 9 1..5",
		"twice slack.allow[1] slack.allow[0]",
		"access slack open [T1]",
	}
	if !slices.Equal(c, want) || c.Label("k") != "k" {
		t.Errorf("checks\n%q\nwant\n%q", c, want)
	}
}
