package slacktest

import (
	"strings"
	"time"
	"unicode/utf8"
)

// MaxStreamText is the most markdown_text one chat.startStream,
// appendStream or stopStream call may carry ("msg_too_long" past it).
const MaxStreamText = 12000

// RefuseStreams makes every chat.startStream answer {"ok":false,"error":
// code} (e.g. "not_allowed_token_type", "missing_scope",
// "team_not_allowed" for a free workspace) until RefuseStreams("").
func (s *Server) RefuseStreams(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseStreams = code
}

// Streaming reports whether the message channel/ts is a stream not
// stopped yet.
func (s *Server) Streaming(channel, ts string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streaming[channel+"/"+ts]
}

// chatStartStream starts a streamed message: a reply in a thread
// (thread_ts), whose recipient (recipient_user_id and recipient_team_id)
// must be named outside a DM; markdown_text is its first text.
func (s *Server) chatStartStream(c *Call) apiResult {
	p := c.Params
	channel, thread := p.Get("channel"), p.Get("thread_ts")
	switch {
	case s.refuseStreams != "":
		return errResult(s.refuseStreams)
	case channel == "":
		return errResult("channel_not_found")
	case thread == "":
		return errResult("invalid_thread_ts")
	case !strings.HasPrefix(channel, "D") && (p.Get("recipient_user_id") == "" || p.Get("recipient_team_id") == ""):
		return errResult("invalid_arguments")
	case utf8.RuneCountInString(p.Get("markdown_text")) > MaxStreamText:
		return errResult("msg_too_long")
	}
	ts := s.nextTSLocked()
	msg := Message{Type: "message", User: s.opts.BotUserID, BotID: s.opts.BotID, AppID: s.opts.AppID,
		Text: p.Get("markdown_text"), TS: ts, ThreadTS: thread, Team: s.opts.TeamID}
	s.storeLocked(channel, msg)
	s.streaming[channel+"/"+ts] = true
	s.recordStreamLocked("chat.startStream", c, ts, msg.Text)
	return okResult(map[string]any{"channel": channel, "ts": ts})
}

// chatAppendStream adds markdown_text to a stream not stopped.
func (s *Server) chatAppendStream(c *Call) apiResult { return s.streamMore(c, false) }

// chatStopStream adds markdown_text, if any, and ends the stream; its
// metadata is kept with the message.
func (s *Server) chatStopStream(c *Call) apiResult { return s.streamMore(c, true) }

func (s *Server) streamMore(c *Call, stop bool) apiResult {
	p := c.Params
	channel, ts, i := s.messageLocked(p)
	if i < 0 {
		return errResult("message_not_found")
	}
	if !s.streaming[channel+"/"+ts] {
		return errResult("message_not_in_streaming_state")
	}
	add := p.Get("markdown_text")
	switch {
	case utf8.RuneCountInString(add) > MaxStreamText:
		return errResult("msg_too_long")
	case add == "" && !stop:
		return errResult("no_text")
	}
	msg := &s.channels[channel][i]
	msg.Text += add
	method := "chat.appendStream"
	if stop {
		method = "chat.stopStream"
		delete(s.streaming, channel+"/"+ts)
		if meta := rawOrNil(p.Get("metadata")); meta != nil {
			if !validMetadata(meta) {
				return errResult("invalid_metadata_format")
			}
			msg.Metadata = meta
		}
	}
	s.recordStreamLocked(method, c, ts, msg.Text)
	return okResult(map[string]any{"channel": channel, "ts": ts})
}

// recordStreamLocked records a stream call as a Post whose Text is what
// the message shows after it.
func (s *Server) recordStreamLocked(method string, c *Call, ts, text string) {
	post := s.recordChatLocked(method, c, ts)
	s.chats[len(s.chats)-1].Text = text
	_ = post
}

// Replies returns the bot's messages as they show now, in the order they
// were made: one Post per chat.postMessage or chat.startStream (Method
// says which), its Text what the message shows after every later
// chat.update, chat.appendStream and chat.stopStream. A reply streamed or
// edited while it is written is one entry here, however many calls it
// took.
func (s *Server) Replies() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repliesLocked()
}

func (s *Server) repliesLocked() []Post {
	var out []Post
	at := map[string]int{} // channel/ts → index in out
	for _, p := range s.chats {
		key := p.Channel + "/" + p.TS
		switch p.Method {
		case "chat.postMessage", "chat.startStream":
			at[key] = len(out)
			out = append(out, p.clone())
		case "chat.update", "chat.appendStream", "chat.stopStream":
			if i, ok := at[key]; ok {
				out[i].Text = p.Text
			}
		case "chat.delete":
			if i, ok := at[key]; ok {
				out[i].Text = ""
			}
		}
	}
	return out
}

// WaitReplies waits until at least n replies (see Replies) exist and no
// stream among them is still running, and returns them.
func (s *Server) WaitReplies(n int, timeout time.Duration) ([]Post, error) {
	return waitRecords(s, n, timeout, "finished replies", func() int {
		if len(s.streaming) > 0 {
			return 0
		}
		return len(s.repliesLocked())
	}, s.Replies)
}
