package slack

import (
	"context"
	"strings"
	"sync"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// Streaming a reply. In a thread (a mention's, an assistant DM's) the
// first message of a reply is a Slack stream: chat.startStream with the
// model's Markdown so far, chat.appendStream with what came since, and,
// when the reply is complete or goes on past one message,
// chat.stopStream (with the part metadata) and a chat.update to the
// reply's mrkdwn, so the final text is the same as a posted reply's.
// Where Slack refuses streams (not_allowed_token_type, missing_scope, a
// free workspace…) the workspace is remembered and its replies are
// posted and then updated with chat.update, as every reply's later
// messages and a top-level DM's replies are.

// liveStream is a message being streamed: the Markdown it has.
type liveStream struct{ sent string }

// streams are the replies' streams in progress and the workspaces that
// refused streaming.
type streams struct {
	mu      sync.Mutex
	live    map[string]*liveStream // channel/ts
	refused map[string]bool        // workspace
}

func (s *streams) get(key string) *liveStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[key]
}

func (s *streams) put(key string, ls *liveStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		s.live = map[string]*liveStream{}
	}
	if ls == nil {
		delete(s.live, key)
		return
	}
	s.live[key] = ls
}

func (s *streams) allowed(workspace string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.refused[workspace]
}

// refuse remembers that workspace refused streams; false when it was known.
func (s *streams) refuse(workspace string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused[workspace] {
		return false
	}
	if s.refused == nil {
		s.refused = map[string]bool{}
	}
	s.refused[workspace] = true
	return true
}

// streamsRefused: err means the workspace does not let the app stream
// (not_allowed_token_type, missing_scope, a free workspace…), not that
// this one message cannot be (its channel, its thread, its text).
func streamsRefused(err error) bool {
	switch apiErrorCode(err) {
	case "channel_not_found", "not_in_channel", "is_archived", "invalid_thread_ts", "thread_not_found",
		"invalid_arguments", "msg_too_long", "no_text", "message_not_found":
		return false
	}
	return refusedForGood(err)
}

// startDraft posts part e.Part of a streamed reply: the first one of a
// reply in a thread as a Slack stream where the workspace allows it,
// else (and every later part) with chat.postMessage.
func (b *Bot) startDraft(ctx context.Context, m *incoming, e pipeline.DraftEdit) (string, error) {
	if e.Part == 0 && e.Parts == 1 && e.Written != "" && m.replyTS != "" && b.streams.allowed(m.workspace) {
		opts := []slackgo.MsgOption{slackgo.MsgOptionTS(m.replyTS), slackgo.MsgOptionMarkdownText(e.Written)}
		if !m.DM {
			opts = append(opts, slackgo.MsgOptionRecipientUserID(m.author), slackgo.MsgOptionRecipientTeamID(m.team))
		}
		var ts string
		err := b.patiently(ctx, "chat.startStream", m.channel, func() (err error) {
			_, ts, err = b.api.StartStreamContext(ctx, m.channel, opts...)
			return err
		})
		if err == nil {
			b.streams.put(m.channel+"/"+ts, &liveStream{sent: e.Written})
			return ts, nil
		}
		if streamsRefused(err) {
			if b.streams.refuse(m.workspace) {
				m.Log.Info("slack: this workspace does not let the app stream messages (chat.startStream); replies are posted and then updated instead",
					"workspace", m.workspace, "error", err)
			}
		} else {
			m.Log.Debug("slack: cannot start a stream; posting the reply instead", "error", err)
		}
	}
	meta := slackgo.SlackMetadata{EventType: replyEventType, EventPayload: map[string]any{"reply_to": m.ID, "part": e.Part}}
	return b.postPart(ctx, m.channel, m.replyTS, e.Text, meta)
}

// editDraft updates a message of a streamed reply: a stream gets what the
// model wrote since (chat.appendStream) while the reply fits in it; else
// the stream is stopped and the message takes its mrkdwn (chat.update).
func (b *Bot) editDraft(ctx context.Context, m *incoming, e pipeline.DraftEdit) error {
	key := m.channel + "/" + e.ID
	ls := b.streams.get(key)
	if ls == nil {
		if e.Text == e.Shown {
			return nil
		}
		return b.update(ctx, m.channel, e.ID, e.Text)
	}
	if !e.Final && e.Parts == 1 && strings.HasPrefix(e.Written, ls.sent) {
		delta := e.Written[len(ls.sent):]
		if delta == "" {
			return nil
		}
		err := b.patiently(ctx, "chat.appendStream", m.channel, func() error {
			_, _, err := b.api.AppendStreamContext(ctx, m.channel, e.ID, slackgo.MsgOptionMarkdownText(delta))
			return err
		})
		if err == nil {
			ls.sent = e.Written
			return nil
		}
		m.Log.Debug("slack: cannot append to the stream; updating the message instead", "error", err)
	}
	b.streams.put(key, nil)
	meta := slackgo.SlackMetadata{EventType: replyEventType, EventPayload: map[string]any{"reply_to": m.ID, "part": e.Part}}
	err := b.patiently(ctx, "chat.stopStream", m.channel, func() error {
		_, _, err := b.api.StopStreamContext(ctx, m.channel, e.ID, slackgo.MsgOptionMetadata(meta))
		return err
	})
	if err != nil && apiErrorCode(err) != "message_not_in_streaming_state" {
		m.Log.Debug("slack: cannot stop the stream", "error", err)
	}
	return b.update(ctx, m.channel, e.ID, e.Text)
}

// findDraft is the first message of m's reply that Slack shows: the
// bot's first message after m where it answers (in its thread, or the
// DM), tagged as part 0 of m's reply or, in a thread, not tagged at all (a
// stream, tagged when it stops). "" when there is none or it cannot be
// read (logged).
func (b *Bot) findDraft(ctx context.Context, m *incoming) string {
	var msgs []slackgo.Message
	var err error
	if m.replyTS == "" {
		var res *slackgo.GetConversationHistoryResponse
		res, err = b.api.GetConversationHistoryContext(ctx, &slackgo.GetConversationHistoryParameters{
			ChannelID: m.channel, Oldest: m.ts, Limit: 200, IncludeAllMetadata: true})
		if err == nil {
			msgs = res.Messages
		}
	} else {
		msgs, _, _, err = b.api.GetConversationRepliesContext(ctx, &slackgo.GetConversationRepliesParameters{
			ChannelID: m.channel, Timestamp: m.replyTS, Oldest: m.ts, Limit: 200, IncludeAllMetadata: true})
	}
	if err != nil {
		m.Log.Warn("slack: cannot look for a reply a crash interrupted; answering anew (its first words may show twice)", "error", err)
		return ""
	}
	found := ""
	for _, msg := range msgs {
		if msg.BotID != b.botID && msg.User != b.botUserID || !validTS(msg.Timestamp) || !tsLess(m.ts, msg.Timestamp) {
			continue
		}
		part, tagged := b.replyPart(msg, m.ID)
		stream := m.replyTS != "" && msg.Metadata.EventType == ""
		if (tagged && part == 0 || stream) && (found == "" || tsLess(msg.Timestamp, found)) {
			found = msg.Timestamp
		}
	}
	return found
}
