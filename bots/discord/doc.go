// Package discord is the Discord adapter: it connects to the Discord
// gateway with discordgo, turns direct messages, mentions of the bot and
// replies to its messages into agent tasks, answers them as replies, and
// serves the /memory application command. Everything that is not
// Discord's is shared with the Slack adapter: a message's way (journal,
// dedupe, queue, answer, post in parts) is bots/internal/pipeline, and
// the pieces it is made of are bots/internal/{queue,split,thread,clean,
// memorycmd,settings}.
//
// # Connection
//
// DISCORD_API_URL (Config.APIURL) replaces https://discord.com/: the
// session's HTTP client rewrites every request for discord.com to it, and
// the gateway address is whatever that API's gateway endpoint returns.
// The adapter supervises the gateway itself (discordgo's own reconnect
// loop retries forever, even on close codes no retry can fix): after a
// RECONNECT (op 7), a dropped socket or missed heartbeat ACKs it opens the
// session again, which resumes it (op 6), and after INVALID_SESSION
// discordgo identifies anew. A session that got READY or RESUMED is
// reopened at once; failed attempts and sessions that ended without either
// wait 1 s, doubling up to a minute. Close codes 4004 (bad token), 4014
// (Message Content intent not enabled), 4013, 4010, 4011 and 4012 stop
// Run with an error that says what to change. Events are handled in
// gateway order (discordgo's SyncEvents) and never block the gateway: a
// message is deduplicated by id (a RESUME replay or a duplicate dispatch
// is answered once) and queued per conversation, by the pipeline every
// platform shares (bots/internal/pipeline; Discord's side of it is
// platform.go), whose behaviours the table of bots/internal/conformance
// checks.
//
// # Messages
//
// Answered: DMs, and guild messages that mention the bot or reply to one
// of its messages, in channels and threads. Ignored: the bot itself,
// other bots, webhooks and system messages. The memory user is
// "discord-<USER_ID>" unless Config.Identities links "discord:<USER_ID>"
// to a name. The reply is a Discord reply to the message (no ping of the
// author unless Config.ReplyMention), with AllowedMentions that parse
// nothing, so model text can never ping @everyone, @here, a role or a
// user. The model's Markdown is rendered by markdown.Discord: what
// Discord shows as Markdown says is left as written, the rest (tables,
// images, deep headings, ~~~ and indented code, __bold__, …) rewritten.
// Long replies are split at 2,000 characters on paragraph, line and
// code-fence boundaries, at most 5 messages (the last one says the reply
// was cut). A typing indicator is shown while the agent works, refreshed
// every 8 s. Earlier messages of a thread, or of a reply chain (from the
// adapter's recent-message cache, else through REST), are given as
// context, attributed. In guild channels Config.ChannelMemory applies.
//
// # /memory
//
// Registered at start by bulk overwrite, per guild of Config.GuildIDs
// (instant) or globally. "/memory show" answers privately with what is
// remembered; "/memory forget file:<path>|all" asks for confirmation with
// Delete and Cancel buttons that only the invoking user can use, valid for
// 10 minutes. Every interaction is acknowledged at once (deferred) and
// then edited, well within Discord's 3-second window.
//
// A message's attachments are read when it is answered (attach.go,
// bots/internal/attach): a text file from Discord's CDN, the rest named.
//
// "@mnemo memory …" in a guild channel or thread (mention.go) runs the
// same flow with the same view as /memory there, and, as Discord has no
// ephemeral message outside an interaction, answers by DM (with the
// buttons) and posts a short note in the channel; when the DM cannot be
// sent, the note says to use /memory instead. It is never journaled nor
// given to the model.
//
// # Remember this
//
// A message context-menu command (type 3, registered with /memory;
// remember.go): deferred ephemerally at once, the resolved message (text,
// author, place, date, link) kept in the chooser's private memory through
// Config.Keeper (bots/internal/remember: access and budgets as for a
// message), then the deferred answer edited to the confirmation with an
// Undo button only the chooser may use.
package discord
