// Package discordtest is a fake Discord for tests: an httptest server on
// 127.0.0.1 that speaks Discord's REST API v9 and Gateway v9 (JSON encoding)
// closely enough for the unmodified discordgo client to run against it end to
// end. Payloads follow Discord's documented shapes: snowflake ids as strings
// (made from the clock, Discord epoch, increasing), ISO8601 timestamps
// ("2024-05-01T12:00:00.000000+00:00"), dispatch frames
// {"op":0,"t":"MESSAGE_CREATE","s":N,"d":{…}}, error bodies
// {"message":…,"code":…} with Discord's codes.
//
// # Pointing discordgo at it
//
// discordgo has its endpoints in package variables, so rather than changing
// them a test gives the session an *http.Client whose Transport sends
// requests for discord.com to URL() (set req.URL.Scheme, req.URL.Host and
// req.Host). Open then calls GET /api/v9/gateway, which answers GatewayURL();
// the WebSocket needs no rewriting.
//
// # REST (under URL()+"api/v9/")
//
// Every call needs "Authorization: Bot <Options.Token>" (else 401
// {"message":"401: Unauthorized","code":0}), except GET /gateway, and the
// interaction callback and webhook routes, where the interaction token is
// the credential (a wrong header still fails). Unknown routes answer 404
// {"message":"404: Not Found","code":0}, known paths with another method 405.
// Every answer carries X-RateLimit-Limit/Remaining (4)/Reset/Reset-After/
// Bucket, so discordgo never waits on a normal answer. Implemented:
//
//   - GET gateway, GET gateway/bot (shards, session_start_limit).
//   - GET users/@me (the bot user, bot:true), GET users/{id} (AddUser; 10013).
//   - POST users/@me/channels {"recipient_id"}: the DM channel with that
//     user (made once, then the same; DMChannel finds it; 50033 for an
//     unknown user). RefuseDMs(user) makes posts in it answer 403 50007
//     "Cannot send messages to this user".
//   - GET channels/{id} (AddChannel, or made by MessageCreate/AddMessage;
//     10003 "Unknown Channel").
//   - POST channels/{id}/messages: the JSON body discordgo sends for
//     ChannelMessageSendComplex. Answers the full message (author = bot,
//     mentions resolved from <@id> as allowed_mentions permits, a reply gets
//     type 19, message_reference and referenced_message), stores it, records
//     a Post and — as Discord does — dispatches it as MESSAGE_CREATE too, so
//     a client must ignore its own messages. Enforced: 50006 "Cannot send an
//     empty message" (blank content, no embeds/components/stickers/poll);
//     50035 "Invalid Form Body" with Discord's nested errors for content over
//     2000 characters (code points), more than 10 embeds, and a
//     message_reference to an unknown message (unless fail_if_not_exists is
//     false, which sends a plain message); 50109 for a body that is not JSON.
//   - GET channels/{id}/messages (limit 1–100, default 50; before, after or
//     around), newest first as Discord answers; GET channels/{id}/messages/{id}
//     (10008 "Unknown Message").
//   - POST channels/{id}/typing: 204, recorded as a Typing.
//   - PUT (and GET) applications/{app}/commands and
//     applications/{app}/guilds/{guild}/commands: bulk overwrite; commands get
//     ids (kept for an unchanged type and name), application_id, guild_id and
//     a new version; names and descriptions are checked as Discord does
//     (lower-case chat input names of 1–32 characters, descriptions of 1–100,
//     none for context menus, no duplicates, at most 100). Recorded as a
//     CommandSet. Another application id answers 403 50001.
//   - POST interactions/{id}/{token}/callback: 204, recorded as an
//     InteractionResponse with its Latency since the INTERACTION_CREATE was
//     written. Unknown id or token, or later than InteractionWindow (3 s)
//     after the write (by Options.Now: a test making several calls before
//     its callback passes a clock that stands still, or a loaded machine
//     can close the window on it): 404 10062 "Unknown interaction"; a second callback:
//     400 40060 "Interaction has already been acknowledged."; a type that does
//     not fit the interaction: 400 50035. A message response (type 4) or a
//     deferred one (5, a "thinking" message with flag 128) creates the
//     original response, which, when not ephemeral, goes to the channel's
//     history and is dispatched as MESSAGE_CREATE; type 7 edits the
//     component's message (MESSAGE_UPDATE).
//   - PATCH channels/{id}/messages/{id}: an edit of one of the bot's messages
//     (another's: 403 50005; content over 2,000 characters: 400), mentions
//     parsed per allowed_mentions, MESSAGE_UPDATE dispatched, recorded as a
//     MessageEdit with its time (MessageEdits, WaitMessageEdits; WaitMessage
//     waits on a message's current state). At most Options.EditLimit edits
//     per EditWindow in a channel (Discord's 5 per 5 s): past it a 429 with
//     retry_after; every answer carries the bucket's X-RateLimit-Remaining
//     and Reset-After, which discordgo's rate limiter waits on.
//   - PATCH webhooks/{app}/{token}/messages/@original (or a followup id),
//     POST webhooks/{app}/{token} (a followup; Discord always answers with the
//     message), GET webhooks/{app}/{token}/messages/{id}: recorded as
//     WebhookEdits. The token works for InteractionTokenTTL (15 min; then 401
//     50027 "Invalid Webhook Token"), but not at all once an interaction went
//     unanswered past its window (404 10015 "Unknown Webhook").
//
// Files: Attachment(channel, File) stores a file and returns the attachment
// a MESSAGE_CREATE carries for it, whose url (under URL()+"attachments/")
// serves it to anyone, as Discord's CDN does; RedirectTo and Chunked shape
// the answer, FileFetches records the downloads.
//
// Calls records every request (method, path, query, body, headers, status).
// FailNext / FailNextN queue faults per "METHOD /api/v9/path" prefix:
// RateLimited (429 with Discord's body and headers; discordgo sleeps
// retry_after and sends the request again) and HTTPError (any status, code
// and message; discordgo returns *discordgo.RESTError).
//
// # Gateway (GatewayURL(), discordgo adds "/?v=9&encoding=json")
//
// A connection gets HELLO (op 10, Options.HeartbeatInterval), then:
//
//   - IDENTIFY (op 2): the token must be "Bot <Token>" or the bare token
//     (else close 4004 "Authentication failed."); intents are required (4013);
//     the privileged MESSAGE_CONTENT intent needs MessageContentAllowed (else
//     4014 "Disallowed intent(s)."); shard [id, count] needs id < count (4010
//     "Invalid shard."); FailNextIdentify and InvalidNextIdentify (op 9
//     first, then the close) override all that. Success: READY
//     (s 1) with v, user, guilds [], session_id, resume_gateway_url, shard and
//     application, for a new session that replaces any earlier session of the
//     same shard.
//   - RESUME (op 6) of a live session: every buffered event after the
//     client's seq is replayed with its original seq (plus, after
//     ReplayOnResume(n), the last n it had already seen), then RESUMED. An
//     unknown or ended session, or a seq that fell out of the ReplayBuffer,
//     gets op 9 d=false.
//   - Heartbeats (op 1) are ACKed (op 11) unless SetHeartbeatACKs(false).
//     Presence and other client ops are ignored once identified; before that
//     they close with 4003, unknown ops with 4001, bad JSON with 4002, a
//     second IDENTIFY/RESUME with 4005. A wrong ?v= closes with 4012.
//
// Sessions outlive their connections. Events go to the live session of
// their shard — (guild_id >> 22) % shard_count, DMs to shard 0 — get its next
// seq, are kept in its replay buffer, and are written when it has a READY
// connection (else they wait there for a RESUME). Events for a shard that no
// session has ever identified for wait and go to the first session READY for
// it, so a test can push events before the client connects. Once a session
// has ended (op 9 d=false, a non-resumable close code, replaced by a new
// IDENTIFY, or the client closing with 1000/1001, which Discord documents
// as ending the session) events for its shard are lost (see Dropped) until
// a new session is READY, as on Discord. Intents are applied: MESSAGE_*
// events need GUILD_MESSAGES (guild) or DIRECT_MESSAGES (DM), and without
// MESSAGE_CONTENT other users' guild messages arrive with empty content,
// embeds, attachments and components unless they mention the bot.
//
// Events: MessageCreate, InteractionCreate, Dispatch (anything; returns the
// seq), Redispatch (the same payload again with a new seq — a duplicate).
// Faults: Reconnect (op 7; discordgo closes with 1012 and resumes),
// InvalidSession (op 9; discordgo re-IDENTIFYs on the same socket),
// DropConnections (TCP closed without a close frame; discordgo resumes),
// CloseConnections (a close frame with any code), SetHeartbeatACKs,
// FailNextIdentify, InvalidNextIdentify, ReplayOnResume, RequestHeartbeat.
//
// Records — Identify, Resume, Event (each dispatch written, replays
// included), Disconnect (with the client's and the server's close codes),
// Call, Post, Typing, InteractionResponse, WebhookEdit, CommandSet — carry a
// Seq increasing across all kinds, so a test can check that one thing
// happened before another. Accessors return copies; the Wait functions block
// on the server's state changes (no sleeping) until a count is reached or
// the timeout passes (ErrTimeout). Options.Now replaces the clock, so a test
// can expire an interaction without waiting. The Server is safe for
// concurrent use; New registers Close with t.Cleanup.
//
// # What is not modelled
//
// Real rate limiting (only the faults you queue), zlib or ETF encodings,
// multipart uploads, guilds, members, roles and permissions (use HTTPError
// for 403 50013), GUILD_CREATE after READY (Dispatch one if needed), gateway
// rate limits and session start limits.
//
// # discordgo facts worth knowing (v0.29.0)
//
//   - Open returns the *websocket.CloseError of a close received right after
//     IDENTIFY, e.g. "websocket: close 4004: Authentication failed.", and
//     starts nothing; it does not retry. But when the first packet after
//     IDENTIFY is anything else than READY or RESUMED (op 9, say) Open only
//     logs a warning and returns nil; a close that follows ends the session
//     as a disconnect, with no error.
//   - Close sends close code 1000 (so Discord ends the session), then sleeps
//     one second holding the session lock. A later Open on the same Session
//     first tries RESUME, gets op 9 and IDENTIFYs.
//   - With SyncEvents false (the default) every handler runs in its own
//     goroutine, so handlers see events in no particular order.
//   - Closing the session before its heartbeat goroutine has sent the first
//     heartbeat makes that goroutine reconnect after Close; set
//     ShouldReconnectOnError to false before Close.
//
// # Example
//
//	func TestReply(t *testing.T) {
//		srv := discordtest.New(t, discordtest.Options{})
//		srv.AddChannel(discordgo.Channel{ID: "20", GuildID: "10", Type: discordgo.ChannelTypeGuildText})
//		dg, _ := discordgo.New("Bot " + srv.Options().Token)
//		dg.Client = &http.Client{Transport: toFake(srv.URL())} // rewrites discord.com
//		dg.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentMessageContent
//		go runAdapter(dg) // dg.Open, handlers that answer messages
//		t.Cleanup(func() { dg.ShouldReconnectOnError = false; dg.Close() })
//		if err := srv.WaitReady(1, 5*time.Second); err != nil {
//			t.Fatal(err)
//		}
//
//		in := srv.MessageCreate(discordgo.Message{ChannelID: "20", Content: "hi",
//			Author: &discordgo.User{ID: "30", Username: "alice"}})
//		posts, err := srv.WaitPosts(1, 5*time.Second)
//		if err != nil || posts[0].Body.Reference.MessageID != in.ID {
//			t.Fatalf("posts %+v, %v", posts, err)
//		}
//
//		srv.FailNext("POST /api/v9/channels/", discordtest.RateLimited(100*time.Millisecond, false))
//		srv.Reconnect() // op 7: the client must resume by itself, losing nothing
//		srv.MessageCreate(discordgo.Message{ChannelID: "20", Content: "again"})
//		if _, err := srv.WaitPosts(2, 5*time.Second); err != nil {
//			t.Fatal(err)
//		}
//	}
package discordtest
