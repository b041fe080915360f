package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/bots/internal/attach"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/split"
	"github.com/mnemo-agent/mnemo/bots/internal/thread"
)

// innerEvent is the part of a message or app_mention event the adapter
// reads (decoded from the raw event: slack-go's AppMentionEvent has no
// client_msg_id or team).
type innerEvent struct {
	Type        string          `json:"type"`
	SubType     string          `json:"subtype"`
	User        string          `json:"user"`
	BotID       string          `json:"bot_id"`
	Text        string          `json:"text"`
	TS          string          `json:"ts"`
	ThreadTS    string          `json:"thread_ts"`
	Channel     string          `json:"channel"`
	ChannelType string          `json:"channel_type"`
	Team        string          `json:"team"`
	UserTeam    string          `json:"user_team"`
	ClientMsgID string          `json:"client_msg_id"`
	Edited      json.RawMessage `json:"edited"`
	Hidden      bool            `json:"hidden"`
	Files       []slackFile     `json:"files"`
}

// incoming is a message the bot will answer. Its ID is "msg:"
// workspace/channel/ts, its Keys the event id and the client message id.
type incoming struct {
	pipeline.Message
	envelope     string // the envelope to acknowledge once journaled
	retry        int    // the envelope's retry_attempt
	eventID      string
	workspace    string // the team the event was delivered for
	team, author string // the author (a Slack user id)
	channel, ts  string
	threadTS     string        // the thread it was written in, "" if none
	replyTS      string        // where to reply: a thread root, or "" for the channel itself
	status       *statusKeeper // the thread status while it shows (startThinking), else nil
	files        []attach.File
}

// readEvent filters an events_api envelope: the message to answer, or nil
// (the caller acknowledges the envelope at once).
func (b *Bot) readEvent(evt socketmode.Event) *incoming {
	data, ok := evt.Data.(slackevents.EventsAPIEvent)
	if !ok || data.Type != slackevents.CallbackEvent {
		return nil
	}
	cb, ok := data.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || cb.InnerEvent == nil {
		return nil
	}
	var in innerEvent
	if err := json.Unmarshal(*cb.InnerEvent, &in); err != nil {
		b.log.Warn("slack: unreadable event", "event_id", cb.EventID, "error", err)
		return nil
	}
	log := b.log.With("event_id", cb.EventID, "event", in.Type, "channel", in.Channel, "ts", in.TS)
	m, why := b.accept(cb, in)
	if m == nil {
		log.Debug("slack: event ignored", "reason", why)
		return nil
	}
	m.ID = "msg:" + m.workspace + "/" + m.channel + "/" + m.ts
	if cb.EventID != "" {
		m.Keys = append(m.Keys, "event:"+cb.EventID)
	}
	if in.ClientMsgID != "" {
		m.Keys = append(m.Keys, "client:"+in.ClientMsgID)
	}
	if evt.Request != nil {
		m.envelope, m.retry = evt.Request.EnvelopeID, evt.Request.RetryAttempt
	}
	m.Log = log.With("user", m.author, "retry_attempt", m.retry)
	return m
}

// accept decides whether an event is a message to answer.
func (b *Bot) accept(cb *slackevents.EventsAPICallbackEvent, in innerEvent) (*incoming, string) {
	switch {
	case in.Type != "message" && in.Type != "app_mention":
		return nil, "not a message"
	case in.SubType != "" && in.SubType != "file_share": // a DM with files is a file_share
		return nil, "subtype " + in.SubType
	case in.Hidden || len(in.Edited) > 0 && string(in.Edited) != "null":
		return nil, "edited"
	case in.BotID != "":
		return nil, "from a bot"
	case in.User == b.botUserID:
		return nil, "from the bot itself"
	case in.User == "":
		return nil, "no user"
	case in.Type == "message" && in.ChannelType != "im":
		return nil, "not a direct message" // channel messages come as app_mention
	}
	workspace := cb.TeamID
	if workspace == "" {
		workspace = b.teamID
	}
	team := cmp.Or(in.Team, in.UserTeam, workspace)
	if !validID(team) || !validID(in.User) || !validID(in.Channel) || !validTS(in.TS) ||
		(in.ThreadTS != "" && !validTS(in.ThreadTS)) {
		return nil, "malformed ids"
	}
	m := &incoming{
		eventID: cb.EventID, workspace: workspace, team: team, author: in.User,
		channel: in.Channel, ts: in.TS, threadTS: in.ThreadTS,
		Message: pipeline.Message{
			User: b.memoryUser(team, in.User),
			DM:   in.Type == "message" || strings.HasPrefix(in.Channel, "D"),
		},
	}
	m.Text, m.Cut = cutIncoming(in.Text, func(s string) string { return plainText(s, b.botUserID, b.botName, true) })
	m.files = attachFiles(in.Files)
	if m.DM {
		m.replyTS = in.ThreadTS // where the user wrote
	} else {
		m.replyTS = cmp.Or(in.ThreadTS, in.TS) // always in a thread
	}
	m.Conversation = "slack:" + workspace + ":" + m.channel + ":" + m.replyTS
	m.Who = b.who(team, in.Channel, in.User, in.Team, in.UserTeam)
	return m, ""
}

// MaxIncomingChars is the longest text of a message read (Slack's own
// limit on a message): a longer one is cut there before it is journaled,
// and its author told.
const MaxIncomingChars = 40_000

// cutIncoming is text for the model, cut at MaxIncomingChars, and
// MaxIncomingChars when it was cut (else 0). The raw text is cut first, so
// that a huge message costs no more to read than a long one, and again
// after plain (which may lengthen a mention).
func cutIncoming(text string, plain func(string) string) (string, int) {
	raw, cut1 := pipeline.CutIncoming(text, MaxIncomingChars)
	out, cut2 := pipeline.CutIncoming(plain(raw), MaxIncomingChars)
	if cut1 || cut2 {
		return out, MaxIncomingChars
	}
	return out, 0
}

// validTS checks a message timestamp ("1700000000.000100").
func validTS(ts string) bool {
	sec, frac, ok := strings.Cut(ts, ".")
	return ok && sec != "" && frac != "" && len(ts) <= 32 &&
		strings.Trim(sec, "0123456789") == "" && strings.Trim(frac, "0123456789") == ""
}

// tsLess compares two valid timestamps numerically.
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	as, bs = strings.TrimLeft(as, "0"), strings.TrimLeft(bs, "0")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	for len(af) < len(bf) {
		af += "0"
	}
	for len(bf) < len(af) {
		bf += "0"
	}
	return af < bf
}

// memoryUser is the memory user name of a Slack account.
func (b *Bot) memoryUser(team, user string) string {
	if name, ok := b.cfg.Identities["slack:"+team+"/"+user]; ok {
		return name
	}
	return "slack-" + team + "-" + user
}

// maxParts bounds the messages of one reply.
const maxParts = 5

// cutNote ends the last message of a reply that needed more than maxParts.
const cutNote = "\n\n_(The reply was too long for Slack and is cut here.)_"

// replyEventType is the message metadata type of every reply part: its
// payload names the message answered ("reply_to", the journal id) and the
// part ("part", from 0), so resume can tell what was posted.
const replyEventType = "mnemo_reply"

// replyParts formats text into the messages of a reply: at most maxParts
// (limitParts); an empty text is the apology.
func (b *Bot) replyParts(channel, text string) []string {
	parts := formatReply(text)
	if len(parts) == 0 {
		parts = formatReply(mnemo.ApologyText)
	}
	if len(parts) > maxParts {
		b.log.Warn("slack: reply cut: it needs more messages than a reply may have", "channel", channel,
			"parts", len(parts), "max_parts", maxParts)
		parts = limitParts(parts)
	}
	return parts
}

// postedParts is how many parts of m's reply are in the conversation
// already (from their metadata). When it cannot be read, 0: the reply is
// posted whole, as answering twice is better than not at all.
func (b *Bot) postedParts(ctx context.Context, m *incoming) int {
	found := 0
	cursor := ""
	for page := 0; page < repliesPages; page++ {
		var msgs []slackgo.Message
		var more bool
		var err error
		if m.replyTS == "" {
			var res *slackgo.GetConversationHistoryResponse
			res, err = b.api.GetConversationHistoryContext(ctx, &slackgo.GetConversationHistoryParameters{
				ChannelID: m.channel, Oldest: m.ts, Limit: 200, Cursor: cursor, IncludeAllMetadata: true})
			if err == nil {
				msgs, more, cursor = res.Messages, res.HasMore, res.ResponseMetaData.NextCursor
			}
		} else {
			msgs, more, cursor, err = b.api.GetConversationRepliesContext(ctx, &slackgo.GetConversationRepliesParameters{
				ChannelID: m.channel, Timestamp: m.replyTS, Oldest: m.ts, Limit: 200, Cursor: cursor, IncludeAllMetadata: true})
		}
		if err != nil {
			m.Log.Warn("slack: cannot read which parts of an interrupted reply were posted; posting the rest of it as far as known (a part may appear twice)",
				"error", err, "parts_found", found)
			return found
		}
		for _, msg := range msgs {
			if part, ok := b.replyPart(msg, m.ID); ok && part >= found {
				found = part + 1
			}
		}
		if !more || cursor == "" {
			break
		}
	}
	return found
}

// replyPart is the part number of msg when it is a part of the bot's reply
// to the message id.
func (b *Bot) replyPart(msg slackgo.Message, id string) (int, bool) {
	if msg.Metadata.EventType != replyEventType || (msg.BotID != b.botID && msg.User != b.botUserID) {
		return 0, false
	}
	to, _ := msg.Metadata.EventPayload["reply_to"].(string)
	part, ok := msg.Metadata.EventPayload["part"].(float64)
	if to != id || !ok || part < 0 || part >= maxParts {
		return 0, false
	}
	return int(part), true
}

// limitParts keeps the first maxParts parts; the last one is shortened
// (by split.Text, so its code fences stay balanced) to leave room for
// cutNote after it.
func limitParts(parts []string) []string {
	parts = parts[:maxParts:maxParts]
	room := maxPartRunes - utf8.RuneCountInString(cutNote)
	parts[maxParts-1] = split.Text(parts[maxParts-1], room)[0] + cutNote
	return parts
}

// postPart sends one chat.postMessage. A 429 is retried after its
// Retry-After (Slack did not post the message); nothing else is, since a
// timeout or a 5xx may have posted it already.
func (b *Bot) postPart(ctx context.Context, channel, threadTS, text string, meta slackgo.SlackMetadata) (ts string, err error) {
	opts := []slackgo.MsgOption{slackgo.MsgOptionText(text, false), slackgo.MsgOptionDisableLinkUnfurl(),
		slackgo.MsgOptionMetadata(meta)}
	if threadTS != "" {
		opts = append(opts, slackgo.MsgOptionTS(threadTS))
	}
	err = b.patiently(ctx, "chat.postMessage", channel, func() (err error) {
		_, ts, err = b.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

// update replaces the text of message ts (chat.update), as postPart
// posts it: a 429 is retried after its Retry-After.
func (b *Bot) update(ctx context.Context, channel, ts, text string) error {
	return b.patiently(ctx, "chat.update", channel, func() error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, channel, ts, slackgo.MsgOptionText(text, false),
			slackgo.MsgOptionDisableLinkUnfurl())
		return err
	})
}

// patiently calls call up to postAttempts times while Slack answers 429,
// waiting its Retry-After (at least a second, at most maxWaitFor) between.
func (b *Bot) patiently(ctx context.Context, method, channel string, call func() error) error {
	var err error
	for attempt := 1; attempt <= postAttempts; attempt++ {
		err = call()
		rl, limited := errors.AsType[*slackgo.RateLimitedError](err)
		if !limited || attempt == postAttempts {
			break
		}
		wait := min(max(rl.RetryAfter, time.Second), b.maxWaitFor)
		b.log.Warn("slack: rate limited on "+method+"; waiting", "channel", channel, "retry_after", wait, "attempt", attempt)
		_ = clock.Sleep(ctx, wait) // ctx outlives shutdown: the wait is short and bounded
	}
	return err
}

// startThinking shows that the bot is working: the assistant status in
// the reply thread, or else a reaction on the message. It returns what
// takes it away again.
func (b *Bot) startThinking(ctx context.Context, m *incoming, log *slog.Logger) func() {
	if m.replyTS != "" && !b.noStatus.Load() {
		p := slackgo.AssistantThreadsSetStatusParameters{ChannelID: m.channel, ThreadTS: m.replyTS, Status: thinkingStatus}
		err := b.api.SetAssistantThreadsStatusContext(ctx, p)
		if err == nil {
			keep := b.keepThinking(ctx, m, p)
			return func() {
				keep.stop() // no refresh after the status is cleared
				p.Status = ""
				if err := b.api.SetAssistantThreadsStatusContext(ctx, p); err != nil {
					log.Debug("slack: cannot clear the thread status", "error", err)
				}
			}
		}
		if refusedForGood(err) && b.noStatus.CompareAndSwap(false, true) {
			log.Info("slack: assistant.threads.setStatus is not available to this app; showing a reaction while thinking instead",
				"error", err)
		} else {
			log.Debug("slack: cannot set the thread status", "error", err)
		}
	}
	if b.noReactions.Load() {
		return func() {}
	}
	ref := slackgo.NewRefToMessage(m.channel, m.ts)
	if err := b.api.AddReactionContext(ctx, thinkingReaction, ref); err != nil && apiErrorCode(err) != "already_reacted" {
		if refusedForGood(err) && b.noReactions.CompareAndSwap(false, true) {
			log.Warn("slack: cannot add reactions (is reactions:write granted?); no thinking indicator", "error", err)
		} else {
			log.Debug("slack: cannot add the thinking reaction", "error", err)
		}
		return func() {}
	}
	return func() {
		if err := b.api.RemoveReactionContext(ctx, thinkingReaction, ref); err != nil {
			log.Debug("slack: cannot remove the thinking reaction", "error", err)
		}
	}
}

// threadContext reads the thread a mention was written in: its root and
// the last messages before the mention, at most thread.MaxMessages, oldest
// first, each attributed to its author (thread.Context).
func (b *Bot) threadContext(ctx context.Context, m *incoming, speakerName string, log *slog.Logger) []mnemo.ContextMessage {
	params := &slackgo.GetConversationRepliesParameters{ChannelID: m.channel, Timestamp: m.threadTS, Latest: m.ts, Limit: 200}
	var root *slackgo.Message
	var last []slackgo.Message
	for page := 0; page < repliesPages; page++ {
		msgs, more, cursor, err := b.api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			// missing_scope: channels:history / groups:history not granted
			// (group DMs would need mpim:history, which the manifest leaves out).
			log.Info("slack: cannot read the thread; answering without its earlier messages", "error", err)
			break
		}
		for _, msg := range msgs {
			if !validTS(msg.Timestamp) || !tsLess(msg.Timestamp, m.ts) || !contextSubtype(msg.SubType) {
				continue
			}
			if msg.Timestamp == m.threadTS {
				root = &msg
				continue
			}
			last = append(last, msg)
			if len(last) >= thread.MaxMessages {
				last = last[len(last)-thread.MaxMessages+1:]
			}
		}
		if !more || cursor == "" {
			break
		}
		params.Cursor = cursor
	}
	if root != nil {
		last = append([]slackgo.Message{*root}, last...)
	}
	earlier := make([]thread.Message, 0, len(last))
	for _, msg := range last {
		tm := thread.Message{
			AuthorID: msg.User,
			Bot:      msg.BotID != "",
			Self:     msg.BotID != "" && msg.BotID == b.botID || msg.User == b.botUserID,
			Text:     plainText(msg.Text, b.botUserID, b.botName, false),
		}
		switch {
		case tm.Bot:
			tm.AuthorName = msg.Username
		case !tm.Self && msg.User != m.author && strings.TrimSpace(tm.Text) != "":
			tm.AuthorName = b.userName(ctx, msg.User) // only for messages given as context
		}
		earlier = append(earlier, tm)
	}
	return thread.Context(earlier, m.author, speakerName, b.botName, thread.MaxMessages, thread.MaxText)
}

// contextSubtype: messages people (or bots) wrote, not joins and the like.
func contextSubtype(st string) bool {
	switch st {
	case "", "bot_message", "thread_broadcast", "file_share", "me_message":
		return true
	}
	return false
}

// userName is a display name for a Slack user (users.info, cached), or ""
// when it cannot be had. It is only ever shown to the model, never used to
// decide whose memory is whose.
func (b *Bot) userName(ctx context.Context, id string) string {
	if id == "" || b.noUsers.Load() {
		return ""
	}
	if n, ok := b.users.Get(id, b.now()); ok {
		return n
	}
	u, err := b.api.GetUserInfoContext(ctx, id)
	if err != nil {
		if refusedForGood(err) && b.noUsers.CompareAndSwap(false, true) {
			b.log.Info("slack: cannot read user names (is users:read granted?); using user ids", "error", err)
			return ""
		}
		if apiErrorCode(err) == "user_not_found" {
			b.users.Put(id, "", b.now())
		}
		return ""
	}
	name := clean.Name(cmp.Or(u.Profile.DisplayName, u.Profile.RealName, u.RealName, u.Name))
	b.users.Put(id, name, b.now())
	return name
}

// origin is where m was said, for the provenance of what is learned from
// it: the place, and the message's permalink (the workspace URL auth.test
// gave, the channel and the ts; a thread reply's names its thread).
func (b *Bot) origin(m *incoming) mnemo.Origin {
	o := mnemo.Origin{Place: "dm"}
	inThread := m.threadTS != "" && m.threadTS != m.ts
	if !m.DM {
		o.Place = "#" + m.channel
		if inThread {
			o.Place += " thread"
		}
	}
	base := b.teamURL
	if !strings.HasPrefix(base, "https://") || m.channel == "" || m.ts == "" {
		return o
	}
	o.Link = strings.TrimSuffix(base, "/") + "/archives/" + m.channel + "/p" + strings.Replace(m.ts, ".", "", 1)
	if inThread {
		o.Link += "?thread_ts=" + m.threadTS + "&cid=" + m.channel
	}
	return o
}
