// Package access decides who may talk to mnemo on a chat platform, before
// anything of theirs is journaled, remembered or sent to the model.
//
// Each platform has a Mode (slack.access, discord.access): Open lets in
// everyone the platform delivers (Slack: the members of the bot's own
// workspace only; another team only when listed), Allowlist only what is
// listed (teams, guilds, channels, users, Slack user groups, Discord
// roles, by id), Pairing what is listed plus whoever the operator approves
// by a one-time code the bot gives a stranger. The list is the
// configuration's (slack.allow, discord.allow: ParseEntry) and the Store's:
// the ids `mnemo access allow` and `mnemo access approve CODE` added, kept
// in access.json in the state folder.
//
// A Gate is one platform's check at run time (Policy.Decide over the two
// lists), with a refused person's reply (who to ask, or their pairing
// code) given at most once an hour per person, in bounded memory.
//
// The package is public because both the adapters (bots/slack,
// bots/discord) and the command line (cmd/mnemo) use it; it imports
// neither.
package access
