package discordtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Discord's limit on message edits, per channel: DefaultEditLimit edits
// in any DefaultEditWindow (Options.EditLimit, Options.EditWindow).
const (
	DefaultEditLimit  = 5
	DefaultEditWindow = 5 * time.Second
)

// MessageEdit is a successful PATCH /channels/{id}/messages/{id}.
type MessageEdit struct {
	Seq       int
	ChannelID string
	MessageID string
	Body      discordgo.MessageEdit // the decoded request
	RawBody   []byte
	Message   discordgo.Message // the message as it is afterwards
	At        time.Time         // the server's clock
}

// editMessage edits one of the bot's messages, within the channel's edit
// limit: past it, a 429 (with the headers discordgo's rate limiter reads)
// and nothing changes.
func (s *Server) editMessage(req *request) result {
	channel, mid := req.segs[1], req.segs[3]
	if _, known := s.channels[channel]; !known {
		return unknownChannel()
	}
	i, found := s.findMessageLocked(channel, mid)
	if !found {
		return unknownMessage()
	}
	m := s.history[channel][i]
	if m.Author == nil || m.Author.ID != s.opts.BotID {
		return apiError(http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
	}
	var e discordgo.MessageEdit
	if err := json.Unmarshal(req.body, &e); err != nil {
		return badJSON()
	}
	if e.Content != nil {
		if res, valid := checkContent("", *e.Content, len(m.Embeds), true); !valid {
			return res
		}
	}
	now := s.now()
	recent := s.recentEditsLocked(channel, now)
	if len(recent) >= s.opts.EditLimit {
		wait := recent[0].Add(s.opts.EditWindow).Sub(now)
		return RateLimited(wait, false).result(now)
	}
	if e.Content != nil {
		m.Content = *e.Content
		m.Mentions = s.mentionsLocked(m.Content, e.AllowedMentions, nil)
	}
	t := now.Truncate(time.Millisecond)
	m.EditedTimestamp = &t
	s.history[channel][i] = m
	s.editTimes[channel] = append(recent, now)
	s.messageEdits = append(s.messageEdits, MessageEdit{Seq: s.nextSeqLocked(), ChannelID: channel, MessageID: mid,
		Body: e, RawBody: bytes.Clone(req.body), Message: cloneMessage(m), At: now})
	s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	res := ok(messageJSON(m))
	// The bucket's state, as Discord sends it: discordgo waits when
	// Remaining reaches 0.
	left := s.opts.EditLimit - len(recent) - 1
	reset := s.editTimes[channel][0].Add(s.opts.EditWindow).Sub(now)
	res.header = http.Header{}
	res.header.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.EditLimit))
	res.header.Set("X-RateLimit-Remaining", strconv.Itoa(left))
	res.header.Set("X-RateLimit-Reset", formatEpoch(now.Add(reset)))
	res.header.Set("X-RateLimit-Reset-After", strconv.FormatFloat(reset.Seconds(), 'f', 3, 64))
	res.header.Set("X-RateLimit-Bucket", "edit-"+channel)
	return res
}

// recentEditsLocked is the times of channel's edits within the window
// before now, oldest first.
func (s *Server) recentEditsLocked(channel string, now time.Time) []time.Time {
	times := s.editTimes[channel]
	for len(times) > 0 && !times[0].Add(s.opts.EditWindow).After(now) {
		times = times[1:]
	}
	return times
}

// MessageEdits returns the successful message edits, in order.
func (s *Server) MessageEdits() []MessageEdit {
	return faketest.Copy(&s.mu, &s.messageEdits, func(r MessageEdit) MessageEdit {
		r.Message = cloneMessage(r.Message)
		r.RawBody = bytes.Clone(r.RawBody)
		return r
	})
}

// WaitMessageEdits waits until at least n message edits succeeded.
func (s *Server) WaitMessageEdits(n int, timeout time.Duration) ([]MessageEdit, error) {
	return waitRecords(s, n, timeout, "message edits", func() int { return len(s.messageEdits) }, s.MessageEdits)
}

// WaitMessage waits until ok holds of message id of channel (as it is
// now, after its edits) and returns it.
func (s *Server) WaitMessage(channel, id string, timeout time.Duration, ok func(discordgo.Message) bool) (discordgo.Message, error) {
	var got discordgo.Message
	held := s.changes.Wait(&s.mu, timeout, func() bool {
		i, found := s.findMessageLocked(channel, id)
		if !found {
			return false
		}
		got = cloneMessage(s.history[channel][i])
		return ok(got)
	})
	if !held {
		return got, ErrTimeout
	}
	return got, nil
}
