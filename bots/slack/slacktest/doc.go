// Package slacktest is a fake Slack for tests: an httptest server on
// 127.0.0.1 that speaks Slack's wire formats closely enough for the
// unmodified slack-go client (Web API) and its socketmode client (Socket
// Mode WebSocket) to run against it end to end.
//
// # Web API
//
// Served under APIURL() (ends with "/", for slack.OptionAPIURL). Tokens are
// taken from "Authorization: Bearer" or, as slack-go sends most methods, the
// form field "token". A missing token answers {"ok":false,"error":"not_authed"},
// a wrong one "invalid_auth". apps.connections.open accepts only the app-level
// token and only in the header (as Slack documents); every other method wants
// the bot token. Implemented:
//
//   - auth.test: url, team, user, team_id, user_id (Options.BotUserID), bot_id.
//   - apps.connections.open: {"ok":true,"url":"ws://127.0.0.1:PORT/link/?ticket=…&app_id=…"};
//     each ticket opens one connection.
//   - chat.postMessage, chat.postEphemeral, chat.update, chat.delete: recorded
//     as Post (see Posts, Chat, WaitPosts); "ts" values are unique and
//     increasing ("1700000000.000100" style). Enforced: no_text, msg_too_long
//     (text over 40,000 characters), invalid_blocks (more than 50 blocks, a
//     section over 3,000 characters, bad JSON), channel_not_found (no channel),
//     message_not_found (update/delete of an unknown ts), cant_update_message
//     (an update of a message still streaming). Each Post has the call's Time.
//   - chat.startStream, chat.appendStream, chat.stopStream: a streamed reply in
//     a thread (invalid_thread_ts without thread_ts; invalid_arguments outside
//     a DM without recipient_user_id and recipient_team_id), its
//     markdown_text added per call (msg_too_long past 12,000 characters);
//     appendStream and stopStream of a stream not running answer
//     message_not_in_streaming_state; stopStream keeps its metadata. Recorded
//     as Posts whose Text is what the message shows after the call;
//     RefuseStreams(code) makes every start fail with code (a workspace
//     without streaming); Streaming tells whether a stream still runs.
//   - conversations.replies: the thread's parent then its replies by ts, with
//     limit and cursor pagination (response_metadata.next_cursor, has_more).
//   - conversations.history: the channel's top-level messages, newest first,
//     between oldest and latest (inclusive or not), with limit and cursor
//     pagination. Message metadata a chat.postMessage carried (its "metadata"
//     parameter, checked: invalid_metadata_format) is stored and returned by
//     both only with include_all_metadata, as Slack does.
//     Threads come from SetThread/AddMessage, from the message and app_mention
//     events pushed by the test, and from the bot's own chat.postMessage calls.
//   - reactions.add / reactions.remove (already_reacted, no_reaction),
//     assistant.threads.setStatus (Statuses), users.info (SetUser; the bot
//     user is known).
//   - assistant.threads.setSuggestedPrompts (SuggestedPromptsSet: 1 to 4
//     prompts, each with a title and a message, else invalid_arguments) and
//     assistant.threads.setTitle (Titles; invalid_thread_ts for a thread the
//     channel does not hold). AssistantThread sends Slack's
//     assistant_thread_started and assistant_thread_context_changed events.
//   - views.publish: user_id and a view of type "home" within Block Kit's
//     limits (100 blocks, 3,000 characters a section, 2,000 a button value,
//     255 an action_id or block_id, block_ids unique, 3,000 characters of
//     private_metadata, 150 of a header), else invalid_arguments with
//     Slack's "[ERROR] … [json-pointer:…]" message; kept per user (Views,
//     WaitViews). AppHomeOpened sends app_home_opened; PressHome a
//     block_actions from a Home tab (container type "view", the view's
//     private_metadata, no response_url).
//   - anything else answers {"ok":false,"error":"unknown_method"} and is
//     recorded (UnknownMethods) unless HandleMethod supplies an answer.
//
// Files: AddFile stores a file and gives its url_private (under
// URL()+"/files-pri/"), which answers only with "Authorization: Bearer
// <BotToken>"; without it, or after RefuseFiles(true) (a token without
// files:read), it redirects to a login page (HTML). A File may redirect
// elsewhere (RedirectTo) or come without a Content-Length (Chunked). A
// MessageEvent or AppMentionEvent with Files carries them in a "files"
// array as Slack sends it (a plain message becomes subtype file_share).
// FileFetches records the downloads.
//
// Every call is recorded as a Call (Calls, WaitCalls). FailNext / FailNextN
// queue faults per method: RateLimited (HTTP 429 + Retry-After, which slack-go
// turns into *slack.RateLimitedError), APIError ({"ok":false,"error":code}),
// HTTPError (e.g. 500, slack.StatusCodeError).
//
// # Socket Mode
//
// A connection gets {"type":"hello","num_connections":N,"debug_info":{…},
// "connection_info":{"app_id":…}} and then WebSocket PINGs every
// Options.PingInterval (slack-go reconnects when it sees none for 30 s).
// Envelopes go to the newest open connection, or wait in a queue until one
// says hello:
//
//   - EventsAPI(event), Message(MessageEvent), AppMention(AppMentionEvent):
//     events_api envelopes with a full event_callback payload (event_id, …).
//   - SlashCommand(SlashCommand): slash_commands envelopes; the response_url
//     points back at this server and POSTs to it are kept (Responses).
//   - Push(Envelope) for anything else (interactive…), SendRaw for bad frames.
//   - Redeliver(env, attempt): same payload and event_id, new envelope id,
//     retry_attempt attempt, retry_reason "timeout". Options.RedeliverAfter (or
//     SetRedeliverAfter) does it automatically for unacked events.
//   - Disconnect(reason) sends {"type":"disconnect","reason":…} and closes the
//     socket; DropConnection closes it without a word.
//
// Whatever a client sends back is recorded as an Ack (Acks, WaitAck), with
// the time since its envelope was written (Ack.Latency). Connections are
// counted (Connections, WaitConnected, OpenConnections, WaitOpen, Conns).
//
// Records carry a Seq, increasing across all kinds, so a test can check that
// an ack came before a post. Accessors return copies; the Server is safe for
// concurrent use. New registers Close with t.Cleanup; stop socketmode clients
// (cancel their context, registered after New so it runs first) before that.
//
// # Example
//
//	func TestReply(t *testing.T) {
//		srv := slacktest.New(t, slacktest.Options{BotToken: "xoxb-test", AppToken: "xapp-test",
//			TeamID: "T0TEAM", BotUserID: "U0BOT"})
//		api := slack.New("xoxb-test", slack.OptionAppLevelToken("xapp-test"),
//			slack.OptionAPIURL(srv.APIURL()))
//		ctx, cancel := context.WithCancel(context.Background())
//		t.Cleanup(cancel)
//		go runAdapter(ctx, api) // socketmode.New(api) + RunContext(ctx), acks, replies
//		if err := srv.WaitConnected(1, 5*time.Second); err != nil {
//			t.Fatal(err)
//		}
//
//		env := srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "hi"})
//		if ack, err := srv.WaitAck(env.ID, time.Second); err != nil || ack.Latency > 100*time.Millisecond {
//			t.Fatalf("ack %+v, %v", ack, err)
//		}
//		srv.Redeliver(env, 1) // must not be answered twice
//		posts, err := srv.WaitPosts(1, 5*time.Second)
//		if err != nil || posts[0].Channel != "D1" {
//			t.Fatalf("posts %+v, %v", posts, err)
//		}
//
//		srv.FailNext("chat.postMessage", slacktest.RateLimited(2*time.Second))
//		srv.Disconnect("refresh_requested") // the client must reconnect by itself
//		if err := srv.WaitConnected(2, 5*time.Second); err != nil {
//			t.Fatal(err)
//		}
//	}
package slacktest
