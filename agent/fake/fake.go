// Package fake holds T, the three methods of a test that the fake servers
// (agent/openaitest, bots/slack/slacktest, bots/discord/discordtest and
// their shared bots/internal/faketest) call. A *testing.T or *testing.B
// satisfies it, so a test passes itself; a program that runs a fake outside
// a test (cmd/mnemo-load) implements the three methods itself and does not
// link package testing.
package fake

// T is the part of testing.TB a fake uses: Helper marks the fake's frames,
// Cleanup registers Close, Fatalf reports that the fake could not start
// (or, for a wait, timed out) and must not return.
type T interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}
