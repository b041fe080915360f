// Package slack is the Slack adapter: it connects over Socket Mode
// (slack-go's socketmode), turns direct messages (message.im) and
// @mentions (app_mention) into agent tasks, posts the replies in the right
// thread, and answers the /memory slash command. What is not Slack's own
// is shared: a message's way (journal, dedupe, queue, answer, busy reply,
// post in parts, replay and resume after a restart) is
// bots/internal/pipeline, which this package drives through its Platform
// (platform.go); splitting, names, thread context and the /memory flow
// are bots/internal/{split,clean,thread,memorycmd}. This package keeps
// Socket Mode envelopes, mrkdwn, Block Kit, response URLs and the Web API
// calls, and passes the table of bots/internal/conformance.
//
// # Events
//
// Every envelope is acknowledged at once, before any work. Messages are
// answered through a queue.Queue: one at a time and in order per
// conversation, different conversations concurrently (at most
// queue.MaxInFlight at a time). A conversation holds at most
// queue.PerConversation messages (being answered or waiting); one more is
// answered at once with pipeline.BusyReplyText in its thread, never left
// unanswered. Slash commands and button presses do not wait behind a
// conversation: they run in goroutines of their own (at most
// queue.MaxInFlight at a time). The bot's own messages (bot_id
// set, or the user auth.test named), other bots, edits, deletions and every
// other message subtype are ignored. A retried or replayed event (Slack
// redelivers unacknowledged envelopes and may replay after a reconnect) is
// answered once: events are remembered by event_id, by channel+ts and by
// client_msg_id, in the intake journal's done-set (intake.DedupeMax keys
// for up to intake.DedupeTTL, across restarts too). Retries are never dropped for being retries: after a
// reconnect a retry can be the only delivery.
//
// # Who and where
//
// The memory user is "slack-<TEAM_ID>-<USER_ID>" (the author's team and user
// from the event, never from the text), unless Config.Identities links
// "slack:TEAM/USER" to another name. A mention is answered in its thread
// (thread_ts, else the message's own ts); a DM where it was written (in the
// thread if it was in one). The conversation key is team + channel + thread
// root. A mention inside an existing thread brings the thread's root and
// last messages (conversations.replies, at most thread.MaxMessages) as
// Task.Context (thread.Context), each attributed: the speaker's own
// messages FromSpeaker, the bot's own marked as the assistant, everyone
// else's as other people, names cleaned by clean.Name (users.info
// answers are kept in a thread.NameCache). Channels get Task.Channel and
// Config.ChannelMemory; DMs use memory fully.
//
// A channel mention whose first word is "memory" ("@mnemo memory forget
// all") is /memory, which Slack does not run in a thread: the same
// memorycmd flow, answered with chat.postEphemeral to the person (in the
// thread), acked at once, never journaled nor handed to the model.
//
// An assistant thread (Slack's AI-app split view: assistant.go) is a
// thread of the person's DM, answered as a DM whatever channel they view.
// assistant_thread_started is welcomed once (a greeting and up to four
// suggested prompts from the person's own memory, through the Topics the
// Config.Memory may have); assistant_thread_context_changed replaces the
// viewed channel, kept as context only; the thread's title is set from
// its first message once that is answered.
//
// While the agent thinks, the thread shows assistant.threads.setStatus
// ("is thinking…", set again every statusRefresh so that a long reply
// keeps it past Slack's two-minute expiry); if Slack refuses that method for good (not_allowed,
// missing_scope, …) the adapter falls back, for the rest of the process, to
// an :eyes: reaction on the message, removed after the reply.
//
// # Replies
//
// The model's Markdown is rendered as Slack mrkdwn from its syntax tree
// (markdown.Slack): bold, italics, strike, links, headings, bullets, task
// boxes and rules are translated, tables become an aligned code block, code
// is left as it is, &, < and > are escaped, and nothing the model writes can ping:
// <!here>-style sequences cannot survive the escaping and @here, @channel
// and @everyone get a zero-width space. Long replies are split at
// paragraph or line boundaries into parts of at most 3,500 characters
// (split.Text), with code blocks closed at a split and reopened in the
// next part, and posted in order. A chat.postMessage answered 429 is posted again once
// Retry-After has passed (at most postAttempts tries); slack-go's own
// retries are not used, as a blind retry can post twice. A failed model
// call comes back from the agent as an apology (Reply.Failed), which is
// posted like any reply; a handler error or panic is answered with
// pipeline.ErrorReplyText (pipeline.Answer). On shutdown Run waits for every
// message it acknowledged to be answered.
//
// # /memory
//
// The command flow is memorycmd.Flow, whose Markdown texts are converted
// to mrkdwn. "/memory" shows the caller, privately (an ephemeral response in the
// acknowledgement), what is remembered about them, cut to fit Slack's
// limits with a note. "/memory forget <file>" and "/memory forget all"
// delete nothing by themselves: they answer with a private confirmation
// carrying Delete and Cancel buttons (Block Kit, delivered back as
// interactive block_actions envelopes). Only the Delete button, pressed by
// the same user within memorycmd.ConfirmTTL, deletes (Memory.Forget), once; the token
// in the button is random, single-use and kept in the process. A file name
// that is not facts/<name>.md or episodes/YYYY-MM.md gets the grammar and
// deletes nothing.
//
// # The App Home tab
//
// On app_home_opened (tab "home") the person's own memory is published
// with views.publish (home.go, rendered by homeview.go from HomeMemory,
// which the app's memory satisfies): files with Share / Make private /
// Forget buttons that run the memorycmd flow, the newest entries and a
// search box. A press counts only when its user and team are the view's
// owner (its private_metadata). The app calls MemoryChanged after every
// change of a person's memory; homeTabs (homerefresh.go) re-publishes the
// tabs opened since the start, at most one every homeEvery per person, the
// last change always, a 429's Retry-After waited out.
//
// # Attached files
//
// The "files" of a message or app_mention event (a DM with files is subtype
// file_share) are read when the message is answered (attach.go,
// bots/internal/attach): a text file's url_private downloaded with the bot
// token (the files:read scope), only from files.slack.com or the API's
// host, a login page or a redirect elsewhere refused; other files named.
//
// # Remember this
//
// A message shortcut (callback_id remember_this, remember.go) arrives as a
// message_action: acked at once, the message (text, author, place, date,
// permalink) kept in the chooser's private memory through Config.Keeper
// (bots/internal/remember: access and budgets as for a message), the
// confirmation posted to the shortcut's response_url with an Undo button
// only the chooser may press.
//
// # Faults
//
// socketmode reconnects by itself after a disconnect envelope, a dropped
// socket or a missed ping; with the deduplication nothing is lost or
// answered twice. A refused or malformed token stops New or Run with an
// error that names the environment variable and the fix. Tokens are never
// logged.
package slack
